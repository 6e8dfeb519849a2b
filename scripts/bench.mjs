// npm run bench: install and build when needed, start throw-away Redis and
// FerretDB servers on free ports, run the benchmark (dist/bench/run.js)
// against them, clean up, and exit with the benchmark's code.
// Knobs are environment variables, read by bench/settings.ts (see bench/README.md).

import path from 'node:path';

import { ROOT, runOnThrowawayStack } from './stack.mjs';

await runOnThrowawayStack({
  name: 'npm run bench',
  tempPrefix: 'payments-bench-stack-',
  args: [path.join(ROOT, 'dist', 'bench', 'run.js')],
});
