// npm run bench: install and build when needed, start throw-away Redis and
// FerretDB servers on free ports, run the benchmark (dist/bench/run.js)
// against them, clean up, and exit with the benchmark's code.
// Knobs are environment variables, read by bench/run.ts (see bench/README.md).

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { ROOT, ensureBuild, ensureNodeModules, reapStaleTempStacks, startStack } from './stack.mjs';

const TEMP_PREFIX = 'payments-bench-stack-';

function fail(error) {
  process.stderr.write(`npm run bench: ${error instanceof Error ? error.message : error}\n`);
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

const bench = spawn(process.execPath, [path.join(ROOT, 'dist', 'bench', 'run.js')], {
  cwd: ROOT,
  stdio: 'inherit',
  env: { ...process.env, REDIS_URL: stack.redisUrl, MONGODB_URL: stack.mongoUrl },
});

let killTimer = null;
function onSignal(signal) {
  // The benchmark stops its own api and worker processes; the servers are
  // stopped below once it has exited.
  try {
    bench.kill(signal);
  } catch {
    // already gone
  }
  killTimer ??= setTimeout(() => bench.kill('SIGKILL'), 15_000);
}
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, onSignal);

const exitCode = await new Promise((resolve) => {
  bench.on('error', (error) => {
    fail(error);
    resolve(1);
  });
  bench.on('exit', (code, signal) => {
    resolve(code ?? 128 + (os.constants.signals[signal] ?? 1));
  });
});
if (killTimer) clearTimeout(killTimer);

await stack.stop();
removeDataDir();
process.exit(exitCode);
