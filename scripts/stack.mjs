// Local stack bootstrapping: dependencies, build, and throw-away or persistent
// Redis + FerretDB servers for `npm start` and `npm test`.
//
// Plain Node ESM with builtins only: this file must work before `npm ci` has
// ever run.

import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export const FERRETDB_MODULE = 'github.com/FerretDB/FerretDB';
export const FERRETDB_VERSION = 'v1.24.2';

const USE_EXISTING =
  'or set REDIS_URL and MONGODB_URL to servers that are already running';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function log(message) {
  process.stderr.write(`[stack] ${message}\n`);
}

function run(cmd, args, options = {}) {
  const result = spawnSync(cmd, args, { stdio: 'inherit', cwd: ROOT, ...options });
  if (result.error) throw new Error(`${cmd} ${args.join(' ')}: ${result.error.message}`);
  if (result.status !== 0) {
    throw new Error(
      `${cmd} ${args.join(' ')} failed (${result.signal ?? `exit code ${result.status}`})`,
    );
  }
  return result;
}

// ---------------------------------------------------------------------------
// Dependencies and build

function mtime(file) {
  try {
    return fs.statSync(file).mtimeMs;
  } catch {
    return null;
  }
}

function readJson(file) {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch {
    return null;
  }
}

// True when every package of package-lock.json is installed at the locked
// version according to npm's own record (node_modules/.package-lock.json).
// Optional packages (other platforms' binaries) may be absent.
function installedMatchesLock(lock, installed) {
  const wanted = lock?.packages;
  const have = installed?.packages;
  if (!wanted || !have) return false;
  for (const [key, entry] of Object.entries(wanted)) {
    if (key === '' || entry.link) continue;
    const got = have[key];
    if (!got) {
      if (entry.optional || entry.devOptional) continue;
      return false;
    }
    if (entry.version && got.version !== entry.version) return false;
  }
  return true;
}

/** Runs `npm ci` when node_modules is missing or older than package-lock.json. */
export function ensureNodeModules() {
  const lockFile = path.join(ROOT, 'package-lock.json');
  const nodeModules = path.join(ROOT, 'node_modules');
  // npm writes this file on every install; its age is the age of node_modules.
  const installedLock = path.join(nodeModules, '.package-lock.json');

  let reason = null;
  if (!fs.existsSync(nodeModules)) {
    reason = 'node_modules is missing';
  } else if (mtime(installedLock) === null) {
    reason = 'node_modules was not installed by npm';
  } else if ((mtime(lockFile) ?? 0) > mtime(installedLock)) {
    // A newer lock file whose content is already installed (a fresh clone,
    // a touched file) needs no reinstall.
    if (!installedMatchesLock(readJson(lockFile), readJson(installedLock))) {
      reason = 'package-lock.json is newer than node_modules';
    }
  }
  if (reason === null) return false;

  log(`${reason}: running npm ci`);
  try {
    run('npm', ['ci', '--no-audit', '--no-fund']);
  } catch (error) {
    // Some npm 11 releases reject lock files that lack other platforms'
    // optional packages ("Missing: ... from lock file"); a plain install from
    // the same lock file works and, with --no-save, leaves it unchanged.
    log(`${error.message}; falling back to npm install --no-save`);
    run('npm', ['install', '--no-save', '--no-audit', '--no-fund']);
  }
  return true;
}

// Removes compiled files in dist/ whose TypeScript source is gone, so that a
// deleted test or module is not run or imported from a stale build.
function pruneDist(dir = path.join(ROOT, 'dist')) {
  let entries;
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const entry of entries) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      pruneDist(file);
      if (fs.readdirSync(file).length === 0) fs.rmdirSync(file);
      continue;
    }
    const match = /^(.+?)(\.d)?\.[mc]?(js|ts)(\.map)?$/.exec(entry.name);
    if (!match || (match[3] === 'ts' && !match[2])) continue;
    const base = match[1];
    const srcDir = path.join(ROOT, path.relative(path.join(ROOT, 'dist'), dir));
    const sources = ['ts', 'tsx', 'mts', 'cts', 'js', 'mjs', 'cjs'].map((ext) => `${base}.${ext}`);
    if (!sources.some((name) => fs.existsSync(path.join(srcDir, name)))) fs.rmSync(file, { force: true });
  }
}

/** Compiles the TypeScript sources into dist/ (dropping outputs of deleted sources). */
export function ensureBuild() {
  pruneDist();
  log('building (tsc -p tsconfig.json)');
  // The project's own tsc (what `npx tsc` runs), without npx's option parsing.
  run(process.execPath, [path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json']);
}

// ---------------------------------------------------------------------------
// Binaries

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

  if (isRoot() && which('apt-get')) {
    log('redis-server not found: installing the Debian package redis-server');
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    const install = () => spawnSync('apt-get', ['install', '-y', 'redis-server'], { stdio: 'inherit', env });
    if (install().status !== 0) {
      // The package lists may never have been fetched on a fresh machine.
      spawnSync('apt-get', ['update'], { stdio: 'inherit', env });
      install();
    }
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

// ---------------------------------------------------------------------------
// Processes

/** A free TCP port on 127.0.0.1 (bound to port 0, then released). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

const liveChildren = new Set();
let exitHandlersInstalled = false;

function killAllNow(signal = 'SIGTERM') {
  for (const child of liveChildren) child.kill(signal);
}

function installExitHandlers() {
  if (exitHandlersInstalled) return;
  exitHandlersInstalled = true;
  // Last resort: whatever way the parent exits, the servers go too.
  process.on('exit', () => killAllNow('SIGTERM'));
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.on(signal, () => {
      // A script with its own handler (start.mjs, test.mjs) shuts down in its
      // own order and calls stop(); only act when nobody else listens.
      if (process.listenerCount(signal) > 1) return;
      killAllNow('SIGTERM');
      process.exit(128 + (os.constants.signals[signal] ?? 1));
    });
  }
}

function processAlive(pid) {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if (error.code !== 'EPERM') return false;
  }
  // An exited child whose new parent has not reaped it yet is a zombie.
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return true;
  }
}

function cmdline(pid) {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
  } catch {
    return null;
  }
}

// Is `pid` still the process that was recorded (and not a recycled pid)?
// `arg`, when given, must also appear in its command line.
function sameProcess(pid, bin, arg) {
  if (!Number.isInteger(pid) || pid <= 0 || !processAlive(pid)) return false;
  const argv = cmdline(pid);
  if (argv === null) return !fs.existsSync('/proc'); // no /proc: trust the pid
  if (argv.length === 0) return false;
  // redis-server rewrites its title ("/usr/bin/redis-server 127.0.0.1:6379").
  const argv0 = argv[0].split(' ')[0];
  if (argv0 !== bin && path.basename(argv0) !== path.basename(bin)) return false;
  if (!arg) return true;
  let cwd = null;
  try {
    cwd = fs.readlinkSync(`/proc/${pid}/cwd`);
  } catch {
    // unknown: compare as given
  }
  const wanted = path.isAbsolute(arg) ? arg : null;
  return argv.slice(1).some((a) => a.includes(arg) || (wanted !== null && cwd !== null && path.resolve(cwd, a) === wanted));
}

async function waitForExit(pid, ms) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (!processAlive(pid)) return true;
    await sleep(50);
  }
  return !processAlive(pid);
}

/**
 * Spawns a server process whose output goes to `logFile`. It is put in its
 * own process group (a terminal's Ctrl-C reaches only the parent, which stops
 * the servers in order) and killed when the parent exits.
 */
function spawnServer(bin, args, { logFile, cwd }) {
  installExitHandlers();
  const fd = fs.openSync(logFile, 'a');
  fs.writeSync(fd, `\n--- ${new Date().toISOString()} ${bin} ${args.join(' ')}\n`);
  let child;
  try {
    child = spawn(bin, args, { cwd, stdio: ['ignore', fd, fd], detached: true });
  } finally {
    fs.closeSync(fd);
  }
  liveChildren.add(child);
  const exited = new Promise((resolve) => {
    child.on('exit', (code, signal) => {
      liveChildren.delete(child);
      resolve({ code, signal });
    });
    child.on('error', (error) => {
      liveChildren.delete(child);
      resolve({ code: null, signal: null, error });
    });
  });
  let exitInfo = null;
  exited.then((info) => (exitInfo = info));

  async function stop(timeoutMs = 10_000) {
    if (exitInfo !== null) return exitInfo;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    const info = await exited;
    clearTimeout(timer);
    return info;
  }

  return { child, exited, stop, get exitInfo() { return exitInfo; } };
}

function tailFile(file, lines = 20) {
  try {
    return fs.readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}

// Sends one request on a fresh connection; resolves with the bytes received
// until `done(buffer)` says the reply is complete.
function exchange(port, payload, done, timeoutMs = 1000) {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    let buffer = Buffer.alloc(0);
    const finish = (error, value) => {
      socket.destroy();
      clearTimeout(timer);
      if (error) reject(error);
      else resolve(value);
    };
    const timer = setTimeout(() => finish(new Error('timeout')), timeoutMs);
    socket.on('connect', () => socket.write(payload));
    socket.on('data', (chunk) => {
      buffer = Buffer.concat([buffer, chunk]);
      if (done(buffer)) finish(null, buffer);
    });
    socket.on('error', (error) => finish(error));
    socket.on('close', () => finish(new Error('connection closed')));
  });
}

async function redisPing(port) {
  const reply = await exchange(port, 'PING\r\n', (b) => b.includes('\r\n'));
  // -LOADING while an append-only file is replayed: not ready yet.
  if (!reply.toString('latin1').startsWith('+PONG')) throw new Error(reply.toString().trim());
}

// Minimal BSON for `{ping: 1, $db: "admin"}` in an OP_MSG, and a reader for
// the top-level `ok` field of the reply.
function bsonPing() {
  const cstring = (s) => Buffer.from(`${s}\0`, 'utf8');
  const int32 = (n) => {
    const b = Buffer.alloc(4);
    b.writeInt32LE(n);
    return b;
  };
  const db = Buffer.from('admin\0', 'utf8');
  const body = Buffer.concat([
    Buffer.from([0x10]), cstring('ping'), int32(1),
    Buffer.from([0x02]), cstring('$db'), int32(db.length), db,
    Buffer.from([0x00]),
  ]);
  const doc = Buffer.concat([int32(body.length + 4), body]);
  const msg = Buffer.concat([int32(0), Buffer.from([0]), doc]); // flagBits, section kind 0
  const header = Buffer.alloc(16);
  header.writeInt32LE(16 + msg.length, 0);
  header.writeInt32LE(randomBytes(3).readUIntLE(0, 3), 4); // requestID
  header.writeInt32LE(0, 8); // responseTo
  header.writeInt32LE(2013, 12); // OP_MSG
  return Buffer.concat([header, msg]);
}

function bsonOk(doc) {
  let i = 4;
  while (i < doc.length - 1) {
    const type = doc[i];
    const nameEnd = doc.indexOf(0, i + 1);
    const name = doc.toString('utf8', i + 1, nameEnd);
    let p = nameEnd + 1;
    let size;
    switch (type) {
      case 0x01: if (name === 'ok') return doc.readDoubleLE(p) === 1; size = 8; break;
      case 0x10: if (name === 'ok') return doc.readInt32LE(p) === 1; size = 4; break;
      case 0x12: if (name === 'ok') return doc.readBigInt64LE(p) === 1n; size = 8; break;
      case 0x08: if (name === 'ok') return doc[p] === 1; size = 1; break;
      case 0x02: case 0x0d: case 0x0e: size = 4 + doc.readInt32LE(p); break;
      case 0x03: case 0x04: size = doc.readInt32LE(p); break;
      case 0x05: size = 5 + doc.readInt32LE(p); break;
      case 0x07: size = 12; break;
      case 0x09: case 0x11: size = 8; break;
      case 0x0a: case 0xff: case 0x7f: size = 0; break;
      default: return false;
    }
    i = p + size;
  }
  return false;
}

async function mongoPing(port) {
  const reply = await exchange(port, bsonPing(), (b) => b.length >= 4 && b.length >= b.readInt32LE(0), 2000);
  if (reply.readInt32LE(12) !== 2013 || reply[20] !== 0) throw new Error('unexpected reply to ping');
  const doc = reply.subarray(21, 21 + reply.readInt32LE(21));
  if (!bsonOk(doc)) throw new Error('ping did not answer ok: 1');
}

async function waitReady(server, ping, { name, logFile, timeoutMs }) {
  const deadline = Date.now() + timeoutMs;
  let lastError = null;
  while (Date.now() < deadline) {
    if (server.exitInfo !== null) {
      const { code, signal, error } = server.exitInfo;
      throw new Error(
        `${name} exited during startup (${error?.message ?? signal ?? `exit code ${code}`}); ` +
          `log ${logFile}:\n${tailFile(logFile)}`,
      );
    }
    try {
      await ping();
      return;
    } catch (error) {
      lastError = error;
    }
    await sleep(100);
  }
  await server.stop(2000);
  throw new Error(
    `${name} was not ready within ${timeoutMs / 1000} s (${lastError?.message}); ` +
      `log ${logFile}:\n${tailFile(logFile)}`,
  );
}

// Ports picked by binding port 0 can be taken by someone else before the
// server binds them; try again with another one.
async function startWithRetries(start, attempts = 3) {
  let lastError;
  for (let i = 0; i < attempts; i++) {
    try {
      return await start(await freePort());
    } catch (error) {
      lastError = error;
    }
  }
  throw lastError;
}

/**
 * Starts redis-server on a free port of 127.0.0.1 (or on `port`, to restart one),
 * data and log in `dir`. persistent: append-only file in `dir`; otherwise nothing
 * is written to disk (an RDB file already in `dir` is still loaded at start-up).
 */
export async function startRedis({ dir, persistent = false, port: fixedPort = null, bin = findRedisServer(), timeoutMs = 30_000 } = {}) {
  if (!dir) throw new Error('startRedis: dir is required');
  fs.mkdirSync(dir, { recursive: true });
  const logFile = path.join(dir, 'redis-server.log');
  const start = async (port) => {
    const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', path.resolve(dir), '--daemonize', 'no'];
    if (persistent) args.push('--appendonly', 'yes');
    else args.push('--save', '', '--appendonly', 'no');
    const server = spawnServer(bin, args, { logFile, cwd: dir });
    await waitReady(server, () => redisPing(port), { name: 'redis-server', logFile, timeoutMs });
    return {
      url: `redis://127.0.0.1:${port}`,
      port,
      pid: server.child.pid,
      bin,
      stop: () => server.stop(),
      /** Sends `signal` (e.g. SIGKILL, a crash) and resolves once the server has exited. */
      kill: (signal) => {
        server.child.kill(signal);
        return server.exited;
      },
    };
  };
  return fixedPort === null ? startWithRetries(start) : start(fixedPort);
}

/**
 * Starts FerretDB (SQLite handler, data under `dir`) on a free port of 127.0.0.1.
 * debugPort: serve FerretDB's debug handler (Prometheus metrics at /debug/metrics) there.
 */
export async function startFerretDB({ dir, bin = findFerretDB(), timeoutMs = 60_000, debugPort = null } = {}) {
  if (!dir) throw new Error('startFerretDB: dir is required');
  const sqliteDir = path.join(path.resolve(dir), 'sqlite');
  fs.mkdirSync(sqliteDir, { recursive: true });
  const logFile = path.join(dir, 'ferretdb.log');
  return startWithRetries(async (port) => {
    const args = [
      '--handler=sqlite',
      `--sqlite-url=file:${sqliteDir}/`,
      '--telemetry=disable',
      `--listen-addr=127.0.0.1:${port}`,
      debugPort === null ? '--debug-addr=-' : `--debug-addr=127.0.0.1:${debugPort}`,
      `--state-dir=${path.resolve(dir)}`,
    ];
    const server = spawnServer(bin, args, { logFile, cwd: dir });
    await waitReady(server, () => mongoPing(port), { name: 'ferretdb', logFile, timeoutMs });
    return {
      url: `mongodb://127.0.0.1:${port}/`,
      port,
      pid: server.child.pid,
      bin,
      stop: () => server.stop(),
    };
  });
}

// ---------------------------------------------------------------------------
// Stale servers of a parent that was killed before it could stop them

const PID_FILE = 'stack.pid.json';

/**
 * Reaps the servers recorded in `dataDir` by a parent that no longer runs.
 * Throws when that parent still runs (the data dir is in use).
 */
export async function reapStale(dataDir) {
  const file = path.join(dataDir, PID_FILE);
  const record = readJson(file);
  if (!record) return false;
  if (
    record.parent !== process.pid &&
    sameProcess(record.parent, record.parentBin ?? process.execPath, record.parentArg)
  ) {
    throw new Error(
      `${dataDir} is in use by another running stack (pid ${record.parent}); stop it first`,
    );
  }
  let reaped = false;
  for (const { pid, bin, arg, name } of record.children ?? []) {
    if (!sameProcess(pid, bin, arg)) continue;
    log(`stopping stale ${name ?? bin} (pid ${pid}) left by an earlier run`);
    reaped = true;
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      continue;
    }
    if (!(await waitForExit(pid, 10_000))) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone
      }
      await waitForExit(pid, 2000);
    }
  }
  fs.rmSync(file, { force: true });
  return reaped;
}

function newRecord() {
  return { parent: process.pid, parentBin: process.execPath, parentArg: process.argv[1], children: [] };
}

function writePidFile(dataDir, children) {
  const record = newRecord();
  record.children = children.map(({ name, pid, bin }) => ({ name, pid, bin }));
  fs.writeFileSync(path.join(dataDir, PID_FILE), `${JSON.stringify(record, null, 2)}\n`);
}

/** Forgets the processes recorded in `dataDir` (after they were stopped). */
export function clearPidFile(dataDir) {
  fs.rmSync(path.join(dataDir, PID_FILE), { force: true });
}

/**
 * Adds a process (e.g. the api started by start.mjs) to the pid file of
 * `dataDir`, so that a later run stops it if this one is killed. `arg`: a
 * string its command line contains (guards against recycled pids).
 */
export function recordChild(dataDir, { name, pid, bin, arg }) {
  const file = path.join(dataDir, PID_FILE);
  const record = readJson(file) ?? newRecord();
  record.children = [...record.children.filter((c) => c.pid !== pid), { name, pid, bin, arg }];
  fs.writeFileSync(file, `${JSON.stringify(record, null, 2)}\n`);
}

/** Removes throw-away stacks (`prefix*` dirs in the temp dir) of test runs that were killed. */
export async function reapStaleTempStacks(prefix) {
  const tmp = os.tmpdir();
  let entries;
  try {
    entries = fs.readdirSync(tmp).filter((name) => name.startsWith(prefix));
  } catch {
    return;
  }
  for (const name of entries) {
    const dir = path.join(tmp, name);
    const record = readJson(path.join(dir, PID_FILE));
    if (!record || record.parent === process.pid) continue;
    try {
      await reapStale(dir);
      fs.rmSync(dir, { recursive: true, force: true });
    } catch {
      // still in use by a running test
    }
  }
}

/**
 * Starts Redis and FerretDB with data in `dataDir` (created if needed).
 * persistent: Redis keeps an append-only file (FerretDB always persists).
 * redis / mongo: false to skip one of them (its URL is then null).
 */
export async function startStack({ dataDir, persistent = false, redis: wantRedis = true, mongo: wantMongo = true } = {}) {
  if (!dataDir) throw new Error('startStack: dataDir is required');
  dataDir = path.resolve(dataDir);
  fs.mkdirSync(dataDir, { recursive: true });
  await reapStale(dataDir);

  // Resolve both binaries before starting anything (a build may take minutes).
  const redisBin = wantRedis ? findRedisServer() : null;
  const ferretBin = wantMongo ? findFerretDB() : null;

  const started = [];
  const stopAll = async () => {
    await Promise.all(started.splice(0).map((s) => s.stop()));
    clearPidFile(dataDir);
  };
  try {
    let redis = null;
    let ferret = null;
    if (wantRedis) {
      redis = await startRedis({ dir: path.join(dataDir, 'redis'), persistent, bin: redisBin });
      started.push({ name: 'redis-server', ...redis });
      writePidFile(dataDir, started);
    }
    if (wantMongo) {
      ferret = await startFerretDB({ dir: path.join(dataDir, 'ferretdb'), bin: ferretBin });
      started.push({ name: 'ferretdb', ...ferret });
      writePidFile(dataDir, started);
    }
    let stopping = null;
    return {
      redisUrl: redis?.url ?? null,
      mongoUrl: ferret?.url ?? null,
      redisBin,
      ferretBin,
      dataDir,
      stop: () => (stopping ??= stopAll()),
    };
  } catch (error) {
    await stopAll();
    throw error;
  }
}

// ---------------------------------------------------------------------------
// One command on a throw-away stack (npm test, npm run bench)

/**
 * Installs and builds when needed, starts throw-away Redis and FerretDB servers on
 * free ports, runs `node <args>` with REDIS_URL, MONGODB_URL, REDIS_SERVER_BIN and
 * FERRETDB_BIN set, stops the servers once it has exited (or on a signal), and
 * exits with its code.
 */
export async function runOnThrowawayStack({ name, tempPrefix, args }) {
  const fail = (error) => process.stderr.write(`${name}: ${error instanceof Error ? error.message : error}\n`);
  try {
    ensureNodeModules();
    ensureBuild();
  } catch (error) {
    fail(error);
    process.exit(1);
  }

  await reapStaleTempStacks(tempPrefix);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), tempPrefix));
  const removeDataDir = () => fs.rmSync(dataDir, { recursive: true, force: true });

  let stack;
  try {
    stack = await startStack({ dataDir, persistent: false });
  } catch (error) {
    fail(error);
    removeDataDir();
    process.exit(1);
  }

  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    stdio: 'inherit',
    env: {
      ...process.env,
      REDIS_URL: stack.redisUrl,
      MONGODB_URL: stack.mongoUrl,
      REDIS_SERVER_BIN: stack.redisBin,
      FERRETDB_BIN: stack.ferretBin,
    },
  });

  let killTimer = null;
  const onSignal = (signal) => {
    // The child shares our terminal (and so usually got the signal already); make
    // sure it stops, then the servers are stopped below once it has exited.
    try {
      child.kill(signal);
    } catch {
      // already gone
    }
    killTimer ??= setTimeout(() => child.kill('SIGKILL'), 15_000);
  };
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, onSignal);

  const exitCode = await new Promise((resolve) => {
    child.on('error', (error) => {
      fail(error);
      resolve(1);
    });
    child.on('exit', (code, signal) => {
      resolve(code ?? 128 + (os.constants.signals[signal] ?? 1));
    });
  });
  if (killTimer) clearTimeout(killTimer);

  await stack.stop();
  removeDataDir();
  process.exit(exitCode);
}
