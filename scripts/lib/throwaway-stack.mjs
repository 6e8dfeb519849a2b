// One command on a throw-away stack (npm test, npm run bench).

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { ROOT, ensureBuild, ensureNodeModules } from './build.mjs';
import { reapStaleTempStacks } from './pid-files.mjs';
import { startRedisCluster } from './redis-cluster.mjs';
import { startStack } from './servers.mjs';

/** The store profiles (common/store-profile.ts) that STORE_PROFILE may force. */
const STORE_PROFILES = ['mongodb', 'ferretdb'];

/**
 * Which store the command gets: the MongoDB at a `MONGODB_URL` already set (kept as
 * it is, and no FerretDB started), else a throw-away FerretDB. Each test file uses a
 * database of its own, so a shared server is fine; Redis is always throw-away (tests
 * stop and flush it).
 */
export function storeChoice(env) {
  const url = env.MONGODB_URL?.trim();
  return url ? { startFerretDB: false, mongoUrl: url } : { startFerretDB: true, mongoUrl: null };
}

/**
 * Installs and builds when needed, starts a throw-away Redis server, and a FerretDB
 * one unless `MONGODB_URL` is set (storeChoice), on free ports, runs `node <args>`
 * with REDIS_URL, MONGODB_URL, REDIS_SERVER_BIN and FERRETDB_BIN set, stops the
 * servers once it has exited (or on a signal), and exits with its code. So
 * `MONGODB_URL=mongodb://127.0.0.1:27017 npm test` is a pass against a real MongoDB.
 * A STORE_PROFILE in the environment reaches the command (and the services the test
 * helpers start from it): `STORE_PROFILE=mongodb npm test` runs the MongoDB
 * profile's code paths against FerretDB (docs/storage.md).
 * `REDIS_CLUSTER=1` also starts a loopback Redis Cluster (3 masters, 3 replicas:
 * redis-cluster.mjs) and sets REDIS_CLUSTER_NODES (and QUEUE_SHARDS=3 unless set),
 * which the services the test helpers start then use instead of REDIS_URL.
 */
export async function runOnThrowawayStack({ name, tempPrefix, args }) {
  const fail = (error) => process.stderr.write(`${name}: ${error instanceof Error ? error.message : error}\n`);
  const store = storeChoice(process.env);
  const profile = process.env.STORE_PROFILE;
  if (profile) {
    if (!STORE_PROFILES.includes(profile)) {
      fail(`STORE_PROFILE must be one of ${STORE_PROFILES.join(', ')}, not "${profile}"`);
      process.exit(1);
    }
    process.stderr.write(`${name}: STORE_PROFILE=${profile} (forced; otherwise detected from the server)\n`);
  }
  if (!store.startFerretDB) {
    process.stderr.write(`${name}: MONGODB_URL is set: using that server (each test file in a database of its own), no FerretDB started\n`);
  }
  const givenStore = process.env.MONGODB_URL;
  if (givenStore) process.stderr.write(`${name}: MONGODB_URL is set: the store there is used, and no FerretDB is started\n`);
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
  let cluster = null;
  try {
    stack = await startStack({ dataDir, persistent: false, mongo: store.startFerretDB });
    if (process.env.REDIS_CLUSTER) {
      cluster = await startRedisCluster({ dir: path.join(dataDir, 'redis-cluster'), bin: stack.redisBin });
      process.stderr.write(`${name}: REDIS_CLUSTER: a Redis Cluster of 3 masters and 3 replicas at ${cluster.nodesEnv}\n`);
    }
  } catch (error) {
    fail(error);
    await stack?.stop();
    removeDataDir();
    process.exit(1);
  }
  const clusterEnv = cluster ? { REDIS_CLUSTER_NODES: cluster.nodesEnv, QUEUE_SHARDS: process.env.QUEUE_SHARDS ?? '3' } : {};

  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    stdio: 'inherit',
    env: {
      ...process.env,
      REDIS_URL: stack.redisUrl,
      MONGODB_URL: store.mongoUrl ?? stack.mongoUrl,
      REDIS_SERVER_BIN: stack.redisBin,
      // Tests that start a FerretDB of their own find it themselves when none was started.
      ...(stack.ferretBin ? { FERRETDB_BIN: stack.ferretBin } : {}),
      ...clusterEnv,
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

  await cluster?.stop();
  await stack.stop();
  removeDataDir();
  process.exit(exitCode);
}
