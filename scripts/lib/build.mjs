// Dependencies and the TypeScript build: `npm ci` when node_modules does not
// match package-lock.json, then tsc into dist/ and the bundles, unless nothing the
// build reads has changed since the last build this module made.

import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { readJson } from './json-file.mjs';
import { log } from './log.mjs';

/** The project directory (holding package.json); commands run there. */
export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * The api and worker as `node` runs them, relative to ROOT: one bundled file each
 * (bundle.mjs), made by ensureBuild and `npm run build`.
 */
export const BUNDLES = { api: 'dist/bundle/api.mjs', worker: 'dist/bundle/worker.mjs' };

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

function mtime(file) {
  try {
    return fs.statSync(file).mtimeMs;
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

/**
 * What the build reads, relative to the project: the folders tsc compiles (tsconfig.json's
 * `include`), the scripts the compiled code and the bundler import, and the files that
 * configure them. Only source files count (BUILD_EXTENSIONS); the run outputs kept in
 * some of these folders do not (BUILD_IGNORED).
 */
export const BUILD_INPUTS = [
  'api', 'worker', 'common', 'test', 'bench',
  'scripts/lib', 'scripts/bundle.mjs',
  'tsconfig.json', 'package.json', 'package-lock.json',
];
const BUILD_EXTENSIONS = /\.(?:[mc]?ts|[mc]?js|json)$/;
const BUILD_IGNORED = new Set(['bench/results', 'test/artifacts', 'node_modules', 'dist']);

/** Where the fingerprint of the sources of the last complete build is kept. */
const STAMP = 'dist/.build-fingerprint';

/**
 * A SHA-256 over the path and content of every build input under `root`: it changes
 * when a source is added, removed or edited, and not when a run writes its results.
 */
export function sourceFingerprint(root = ROOT) {
  const files = [];
  const walk = (relative) => {
    if (BUILD_IGNORED.has(relative)) return;
    let stat;
    try {
      stat = fs.statSync(path.join(root, relative));
    } catch {
      return; // an input this checkout does not have
    }
    if (stat.isDirectory()) {
      for (const name of fs.readdirSync(path.join(root, relative))) walk(path.posix.join(relative, name));
    } else if (BUILD_EXTENSIONS.test(relative)) {
      files.push(relative);
    }
  };
  for (const input of BUILD_INPUTS) walk(input);
  const hash = createHash('sha256');
  for (const file of files.sort()) {
    hash.update(`${file}\0`);
    hash.update(fs.readFileSync(path.join(root, file)));
    hash.update('\0');
  }
  return hash.digest('hex');
}

/** True when `root`'s dist/ holds a complete build of exactly these sources. */
export function buildIsCurrent(root = ROOT, fingerprint = sourceFingerprint(root)) {
  let stamp;
  try {
    stamp = fs.readFileSync(path.join(root, STAMP), 'utf8').trim();
  } catch {
    return false;
  }
  return stamp === fingerprint && Object.values(BUNDLES).every((file) => fs.existsSync(path.join(root, file)));
}

/**
 * Compiles the TypeScript sources into dist/ (dropping outputs of deleted sources),
 * then bundles the api and the worker into one file each (bundle.mjs): `npm run build`.
 * Skipped when nothing the build reads has changed since the last build made here
 * (a restart of `npm start` with no change). `npm run build` itself always builds,
 * and leaves no fingerprint: the next start after it builds once more.
 */
export function ensureBuild() {
  const fingerprint = sourceFingerprint();
  if (buildIsCurrent(ROOT, fingerprint)) {
    log('build skipped: nothing changed since the last build');
    return false;
  }
  pruneDist();
  // A build that fails or is interrupted leaves no fingerprint behind.
  fs.rmSync(path.join(ROOT, STAMP), { force: true });
  log('building (tsc -p tsconfig.json, then the bundles)');
  // The project's own tsc (what `npx tsc` runs), without npx's option parsing.
  run(process.execPath, [path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json']);
  // The portal's browser script has its own (DOM) types: checked apart, then bundled.
  run(process.execPath, [path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'api/portal/browser/tsconfig.json']);
  run(process.execPath, [path.join(ROOT, 'scripts', 'bundle.mjs')]);
  // The sources as they were when the build started: an edit made meanwhile builds again next time.
  fs.writeFileSync(path.join(ROOT, STAMP), `${fingerprint}\n`);
  return true;
}
