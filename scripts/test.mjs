// npm test: install and build when needed, start throw-away Redis and FerretDB
// servers on free ports, run the AVA suite against them, clean up.
// Extra arguments are passed to AVA (`npm test -- --tap`, `npm test -- --match '*x*'`).

import path from 'node:path';

import { ROOT, runOnThrowawayStack } from './stack.mjs';

await runOnThrowawayStack({
  name: 'npm test',
  tempPrefix: 'payments-test-stack-',
  args: [path.join(ROOT, 'node_modules', 'ava', 'entrypoints', 'cli.mjs'), ...process.argv.slice(2)],
});
