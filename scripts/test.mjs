// npm test: install and build when needed, start throw-away Redis and FerretDB
// servers on free ports, run the AVA suite against them, clean up.
// Extra arguments are passed to AVA (`npm test -- --tap`, `npm test -- --match '*x*'`).

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { ROOT, ensureBuild, ensureNodeModules, reapStaleTempStacks, startStack } from './stack.mjs';

const TEMP_PREFIX = 'payments-test-stack-';
const AVA_CLI = path.join(ROOT, 'node_modules', 'ava', 'entrypoints', 'cli.mjs');

function fail(error) {
  process.stderr.write(`npm test: ${error instanceof Error ? error.message : error}\n`);
}

try {
  ensureNodeModules();
  ensureBuild();
} catch (error) {
  fail(error);
  process.exit(1);
}

await reapStaleTempStacks(TEMP_PREFIX);
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), TEMP_PREFIX));
const removeDataDir = () => fs.rmSync(dataDir, { recursive: true, force: true });

let stack;
try {
  stack = await startStack({ dataDir, persistent: false });
} catch (error) {
  fail(error);
  removeDataDir();
  process.exit(1);
}

const ava = spawn(process.execPath, [AVA_CLI, ...process.argv.slice(2)], {
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
function onSignal(signal) {
  // AVA shares our terminal (and so usually got the signal already); make
  // sure it stops, then the servers are stopped below once it has exited.
  try {
    ava.kill(signal);
  } catch {
    // already gone
  }
  killTimer ??= setTimeout(() => ava.kill('SIGKILL'), 15_000);
}
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, onSignal);

const exitCode = await new Promise((resolve) => {
  ava.on('error', (error) => {
    fail(error);
    resolve(1);
  });
  ava.on('exit', (code, signal) => {
    resolve(code ?? 128 + (os.constants.signals[signal] ?? 1));
  });
});
if (killTimer) clearTimeout(killTimer);

await stack.stop();
removeDataDir();
process.exit(exitCode);
