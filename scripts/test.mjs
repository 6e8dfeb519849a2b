// npm test: install and build when needed, start throw-away Redis and FerretDB
// servers on free ports, run the AVA suite against them, clean up.
// Extra arguments are passed to AVA (`npm test -- --tap`, `npm test -- --match '*x*'`).

import path from 'node:path';

import { ROOT, runOnThrowawayStack } from './stack.mjs';

// The suite's webhook receivers listen on 127.0.0.1: let test-mode endpoints reach
// them (the services the tests start set it too). Never set in production.
process.env.WEBHOOK_ALLOW_PRIVATE_TARGETS ??= 'true';
process.stderr.write(
  `npm test: WEBHOOK_ALLOW_PRIVATE_TARGETS=${process.env.WEBHOOK_ALLOW_PRIVATE_TARGETS} (test-mode webhooks may reach loopback and private addresses)\n`,
);

await runOnThrowawayStack({
  name: 'npm test',
  tempPrefix: 'payments-test-stack-',
  args: [path.join(ROOT, 'node_modules', 'ava', 'entrypoints', 'cli.mjs'), ...process.argv.slice(2)],
});
