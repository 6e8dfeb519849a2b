// npm run chaos: install and build when needed, then run the fault-injection run
// (dist/bench/chaos/run.js), which starts its own throw-away Redis and FerretDB
// (or uses --redis-url / --mongodb-url), and exit with its code.
// Flags are passed through: `npm run chaos -- --duration 30 --rate 20`; `-- --help` lists them.

import { spawn } from 'node:child_process';
import path from 'node:path';

import { ensureBuild, ensureNodeModules, ROOT } from './stack.mjs';

try {
  ensureNodeModules();
  ensureBuild();
} catch (error) {
  process.stderr.write(`npm run chaos: ${error instanceof Error ? error.message : error}\n`);
  process.exit(2);
}

const child = spawn(process.execPath, [path.join(ROOT, 'dist', 'bench', 'chaos', 'run.js'), ...process.argv.slice(2)], {
  cwd: ROOT,
  stdio: 'inherit',
});
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 130 : 1)));
