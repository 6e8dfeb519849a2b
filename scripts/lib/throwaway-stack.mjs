// One command on a throw-away stack (npm test, npm run bench).

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { ROOT, ensureBuild, ensureNodeModules } from './build.mjs';
import { reapStaleTempStacks } from './pid-files.mjs';
import { startStack } from './servers.mjs';

/** The store profiles (common/store-profile.ts) that STORE_PROFILE may force. */
const STORE_PROFILES = ['mongodb', 'ferretdb'];

/**
 * Installs and builds when needed, starts throw-away Redis and FerretDB servers on
 * free ports, runs `node <args>` with REDIS_URL, MONGODB_URL, REDIS_SERVER_BIN and
 * FERRETDB_BIN set, stops the servers once it has exited (or on a signal), and
 * exits with its code. A STORE_PROFILE in the environment reaches the command (and
 * the services the test helpers start from it): `STORE_PROFILE=mongodb npm test`
 * runs the MongoDB profile's code paths against FerretDB (docs/storage.md).
 */
export async function runOnThrowawayStack({ name, tempPrefix, args }) {
  const fail = (error) => process.stderr.write(`${name}: ${error instanceof Error ? error.message : error}\n`);
  const profile = process.env.STORE_PROFILE;
  if (profile) {
    if (!STORE_PROFILES.includes(profile)) {
      fail(`STORE_PROFILE must be one of ${STORE_PROFILES.join(', ')}, not "${profile}"`);
      process.exit(1);
    }
    process.stderr.write(`${name}: STORE_PROFILE=${profile} (forced; the server would be detected as ferretdb)\n`);
  }
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
