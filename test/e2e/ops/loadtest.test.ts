// The compose load script (bench/loadtest.mjs) against a real api: it issues its
// own key with ADMIN_TOKEN, drives creates with autocannon and prints a summary.

import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { Proc, Service } from '../../helpers/service.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../..');

test('the load script creates payment intents and prints a summary', async (t) => {
  const service = await Service.start({ workers: 1 });
  t.teardown(() => service.stop());
  const child = spawn(process.execPath, [path.join(root, 'bench', 'loadtest.mjs')], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', API_URL: service.baseUrl, ADMIN_TOKEN: service.adminToken, CONNECTIONS: '4', DURATION: '2', IDEMPOTENCY: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const script = new Proc('loadtest', child);
  t.is(await script.exited, 0, script.output.join('\n'));
  const line = script.output.find((l) => l.startsWith('{"loadtest"'));
  t.truthy(line, 'a JSON summary line');
  const summary = JSON.parse(line as string).loadtest;
  t.true(summary.ok > 0);
  t.is(summary.errors, 0);
  t.true((summary.statuses['200'] ?? 0) > 0);
  t.true(script.output.some((l) => /^latency: +p50 /.test(l)));

  const stored = await (await service.db()).collection('payment_intents').countDocuments({ project: 'loadtest' });
  // Requests still in flight when the run ends are not counted by autocannon, but
  // their creates go on: at most one more object per connection.
  t.true(stored >= summary.statuses['200'] && stored <= summary.statuses['200'] + 4, `${stored} stored for ${summary.statuses['200']} answered`);
});
