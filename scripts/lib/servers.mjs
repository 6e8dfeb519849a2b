// Redis and FerretDB servers on free ports of 127.0.0.1: one at a time
// (startRedis, startFerretDB; the test helpers restart them on the same port)
// or both with a pid file (startStack).

import fs from 'node:fs';
import path from 'node:path';

import { findFerretDB, findRedisServer } from './binaries.mjs';
import { keepIdPathIndexes } from './ferretdb-indexes.mjs';
import { log } from './log.mjs';
import { freePort } from './net.mjs';
import { clearPidFile, reapStale, writePidFile } from './pid-files.mjs';
import { spawnServer } from './processes.mjs';
import { mongoPing, redisPing, waitReady } from './probes.mjs';

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

// A started server as the callers see it: where it listens, and how to stop it.
// onStop: what else ends with the server (a helper that watches its files).
function runningServer(server, { url, port, bin, onStop = () => {} }) {
  server.exited.then(onStop, onStop);
  return {
    url,
    port,
    pid: server.child.pid,
    bin,
    get running() {
      return server.exitInfo === null;
    },
    stop: (timeoutMs) => server.stop(timeoutMs),
    /** Sends `signal` (SIGKILL: a crash) and resolves once the server has exited. */
    kill: (signal) => {
      server.child.kill(signal);
      return server.exited;
    },
  };
}

/**
 * Starts redis-server on 127.0.0.1, data and log in `dir`: on `port` (tried
 * once), or else on a free port.
 * persistent: append-only file in `dir`; otherwise nothing is written to disk (an
 * RDB file already in `dir` is still loaded at start-up).
 */
export async function startRedis({ dir, persistent = false, bin = findRedisServer(), port: fixedPort, timeoutMs = 30_000 } = {}) {
  if (!dir) throw new Error('startRedis: dir is required');
  fs.mkdirSync(dir, { recursive: true });
  const logFile = path.join(dir, 'redis-server.log');
  const start = async (port) => {
    const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', path.resolve(dir), '--daemonize', 'no'];
    if (persistent) args.push('--appendonly', 'yes');
    else args.push('--save', '', '--appendonly', 'no');
    const server = spawnServer(bin, args, { logFile, cwd: dir });
    await waitReady(server, () => redisPing(port), { name: 'redis-server', logFile, timeoutMs });
    return runningServer(server, { url: `redis://127.0.0.1:${port}`, port, bin });
  };
  return fixedPort === undefined ? startWithRetries(start) : start(fixedPort);
}

/** How long a FerretDB write waits for SQLite's lock before it fails (see startFerretDB). */
export const SQLITE_BUSY_TIMEOUT_MS = 1000;

/**
 * FerretDB's environment: Go's collector at GOGC=400 unless the caller set GOGC. Its
 * live heap is a few MB, so at Go's default (100) it collected every 30 ms or so under
 * load; at 400 it uses about a tenth less CPU for the same chaos run without faults
 * (docs/performance.md), for some MB more memory.
 */
function ferretDBEnv() {
  return { GOGC: '400', ...process.env };
}

/**
 * Starts FerretDB (SQLite handler, data under `dir`) on 127.0.0.1: on `port`
 * (tried once), or else on a free port.
 * debugPort: serve FerretDB's debug handler (Prometheus metrics at /debug/metrics) there.
 * idPathIndexes: give every collection the `_id` index FerretDB's queries can use
 * (ferretdb-indexes.mjs); false measures FerretDB as it comes.
 */
export async function startFerretDB({ dir, bin = findFerretDB(), port: fixedPort, timeoutMs = 60_000, debugPort = null, idPathIndexes = true } = {}) {
  if (!dir) throw new Error('startFerretDB: dir is required');
  const sqliteDir = path.join(path.resolve(dir), 'sqlite');
  fs.mkdirSync(sqliteDir, { recursive: true });
  const logFile = path.join(dir, 'ferretdb.log');
  const start = async (port) => {
    const args = [
      '--handler=sqlite',
      // A write waits at most 1 s for SQLite's lock, then fails and is retried by
      // its sender (FerretDB's default waits 10 s). So a write a killed worker sent
      // lands within about a second, before the payment intent lock it was fenced
      // by (3 s) lets another worker take over (worker/record-lock.ts).
      `--sqlite-url=file:${sqliteDir}/?_pragma=busy_timeout(${SQLITE_BUSY_TIMEOUT_MS})`,
      '--telemetry=disable',
      `--listen-addr=127.0.0.1:${port}`,
      debugPort === null ? '--debug-addr=-' : `--debug-addr=127.0.0.1:${debugPort}`,
      `--state-dir=${path.resolve(dir)}`,
    ];
    const server = spawnServer(bin, args, { logFile, cwd: dir, env: ferretDBEnv() });
    await waitReady(server, () => mongoPing(port), { name: 'ferretdb', logFile, timeoutMs });
    const stopIndexing = idPathIndexes
      ? keepIdPathIndexes(sqliteDir, {
          onMissingShell: () => log('no sqlite3 shell (Debian package sqlite3): FerretDB looks every _id up by reading its whole table'),
          onError: (error) => {
            // A database dropped, or not yet given its catalogue, between two looks.
            if (!/no such table|unable to open/.test(error.message)) log(`FerretDB _id index: ${error.message}`);
          },
        })
      : () => {};
    return runningServer(server, { url: `mongodb://127.0.0.1:${port}/`, port, bin, onStop: stopIndexing });
  };
  return fixedPort === undefined ? startWithRetries(start) : start(fixedPort);
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
