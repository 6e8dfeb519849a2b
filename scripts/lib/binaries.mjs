// The redis-server and FerretDB executables: found in the usual places, or
// installed (Debian package) and built (FerretDB from the Go module proxy)
// when missing.

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { log } from './log.mjs';

/**
 * The FerretDB that findFerretDB() builds when none is installed. A 1.x
 * release: those have the SQLite handler, so no PostgreSQL is needed.
 */
export const FERRETDB_MODULE = 'github.com/FerretDB/FerretDB';
export const FERRETDB_VERSION = 'v1.24.2';

const USE_EXISTING =
  'or set REDIS_URL and MONGODB_URL to servers that are already running';

function isExecutable(file) {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

/** Looks a command up in PATH; returns its absolute path or null. */
export function which(name) {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const file = path.join(dir, name);
    if (isExecutable(file)) return file;
  }
  return null;
}

function isRoot() {
  return typeof process.getuid === 'function' && process.getuid() === 0;
}

/**
 * Installs a Debian package when this process may (root, apt-get present); false
 * when it may not. Its output goes to the terminal: an install is worth seeing.
 */
function installDebianPackage(name, why) {
  if (!isRoot() || !which('apt-get')) return false;
  log(`${why}: installing the Debian package ${name}`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const install = () => spawnSync('apt-get', ['install', '-y', name], { stdio: ['ignore', process.stderr, process.stderr], env });
  if (install().status !== 0) {
    // The package lists may never have been fetched on a fresh machine.
    spawnSync('apt-get', ['update'], { stdio: ['ignore', process.stderr, process.stderr], env });
    install();
  }
  return true;
}

/**
 * The sqlite3 shell, which gives FerretDB's tables the `_id` index its queries can
 * use (ferretdb-indexes.mjs); installs the Debian package when root. Null without
 * it: only speed depends on it.
 */
export function findSqlite3() {
  const found = () => which('sqlite3') ?? (isExecutable('/usr/bin/sqlite3') ? '/usr/bin/sqlite3' : null);
  const file = found();
  if (file) return file;
  return installDebianPackage('sqlite3', 'sqlite3 not found') ? found() : null;
}

/** Absolute path of redis-server; installs the Debian package when root. */
export function findRedisServer() {
  const fromEnv = process.env.REDIS_SERVER_BIN;
  if (fromEnv) {
    if (isExecutable(fromEnv)) return fromEnv;
    const resolved = which(fromEnv);
    if (resolved) return resolved;
    throw new Error(`REDIS_SERVER_BIN=${fromEnv} is not an executable file`);
  }

  const candidates = () => [which('redis-server'), '/usr/bin/redis-server', '/usr/local/bin/redis-server'];
  for (const file of candidates()) if (file && isExecutable(file)) return file;

  if (installDebianPackage('redis-server', 'redis-server not found')) {
    for (const file of candidates()) if (file && isExecutable(file)) return file;
  }

  throw new Error(
    'redis-server was not found. Install it (Debian/Ubuntu: `sudo apt-get install redis-server`), ' +
      USE_EXISTING +
      '.',
  );
}

function goEnv(name) {
  const go = findGo();
  if (!go) return null;
  const result = spawnSync(go, ['env', name], { encoding: 'utf8' });
  return result.status === 0 ? result.stdout.trim() || null : null;
}

function findGo() {
  return which('go') ?? (isExecutable('/usr/local/go/bin/go') ? '/usr/local/go/bin/go' : null);
}

function ferretCandidates() {
  const gopath = goEnv('GOPATH');
  const list = [which('ferretdb')];
  if (gopath) {
    for (const dir of gopath.split(path.delimiter)) list.push(path.join(dir, 'bin', 'ferretdb'));
  }
  list.push(path.join(os.homedir(), 'go', 'bin', 'ferretdb'), '/root/go/bin/ferretdb');
  return [...new Set(list.filter(Boolean))];
}

// A FerretDB binary built straight from the module cache has no
// build/version/version.txt and panics at start-up: check that it runs.
function ferretWorks(file) {
  if (!isExecutable(file)) return false;
  const result = spawnSync(file, ['--version'], { encoding: 'utf8', timeout: 15_000 });
  return result.status === 0;
}

/**
 * Absolute path of the FerretDB binary; builds FerretDB v1.24.2 from the Go
 * module proxy when it is missing and `go` is available.
 */
export function findFerretDB() {
  const fromEnv = process.env.FERRETDB_BIN;
  if (fromEnv) {
    const resolved = isExecutable(fromEnv) ? fromEnv : which(fromEnv);
    if (resolved && ferretWorks(resolved)) return resolved;
    throw new Error(`FERRETDB_BIN=${fromEnv} is not a working FerretDB executable`);
  }

  for (const file of ferretCandidates()) {
    if (!isExecutable(file)) continue;
    if (ferretWorks(file)) return file;
    log(`${file} does not run (\`${path.basename(file)} --version\` failed); ignoring it`);
  }

  const go = findGo();
  if (!go) {
    throw new Error(
      `FerretDB was not found and Go is not installed to build it. Install Go (then this ` +
        `script builds ${FERRETDB_MODULE} ${FERRETDB_VERSION} itself), ` +
        USE_EXISTING +
        ' (any MongoDB works).',
    );
  }
  return buildFerretDB(go);
}

function makeWritable(dir) {
  fs.chmodSync(dir, 0o755);
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) makeWritable(file);
    else if (entry.isFile()) fs.chmodSync(file, 0o644);
  }
}

function buildFerretDB(go) {
  const gopath = goEnv('GOPATH') ?? path.join(os.homedir(), 'go');
  const binDir = path.join(gopath.split(path.delimiter)[0], 'bin');
  const out = path.join(binDir, 'ferretdb');
  log(
    `FerretDB not found: building ${FERRETDB_MODULE} ${FERRETDB_VERSION} into ${out} ` +
      '(this takes a few minutes, once)',
  );

  // `go install module@version` needs the proxy's module list for its
  // deprecation check, which is not always reachable; download + build is not.
  const download = spawnSync(go, ['mod', 'download', '-json', `${FERRETDB_MODULE}@${FERRETDB_VERSION}`], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    maxBuffer: 16 * 1024 * 1024,
  });
  let info = null;
  try {
    info = JSON.parse(download.stdout);
  } catch {
    // reported below
  }
  if (download.status !== 0 || !info?.Dir) {
    throw new Error(
      `go mod download ${FERRETDB_MODULE}@${FERRETDB_VERSION} failed` +
        (info?.Error ? `: ${info.Error}` : '') +
        `. Build FerretDB by hand, ${USE_EXISTING}.`,
    );
  }

  // The module cache is read-only and lacks the generated
  // build/version/version.txt that FerretDB requires at start-up: build a
  // copy with that file added.
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'ferretdb-build-'));
  const src = path.join(work, 'src');
  fs.mkdirSync(binDir, { recursive: true });
  // Build to a temporary name and rename, so that a concurrent run never sees
  // a half-written binary.
  const tmp = `${out}.build-${process.pid}`;
  try {
    fs.cpSync(info.Dir, src, { recursive: true });
    makeWritable(src);
    fs.writeFileSync(path.join(src, 'build', 'version', 'version.txt'), `${FERRETDB_VERSION}\n`);
    const build = spawnSync(go, ['build', '-o', tmp, './cmd/ferretdb'], { cwd: src, stdio: 'inherit' });
    if (build.status !== 0 || !ferretWorks(tmp)) {
      throw new Error(`building FerretDB failed (go build ./cmd/ferretdb in a copy of ${info.Dir}); ${USE_EXISTING}.`);
    }
    fs.renameSync(tmp, out);
  } finally {
    fs.rmSync(tmp, { force: true });
    fs.rmSync(work, { recursive: true, force: true });
  }
  log(`FerretDB built: ${out}`);
  return out;
}
