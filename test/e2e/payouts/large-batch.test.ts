/**
 * A batch of 1,000 payouts (DESIGN.md section 17): a body over 64 KiB (the route takes
 * up to 1 MiB) accepted at once, counted, retried without a second payout, and every
 * payout of it paid. A file of its own: its thousand payouts would hold up the others'.
 */
import test from 'ava';
import { fund, listAllPayouts, payee, PO, POB, retrieveBatch, retrievePayout, type PayoutBatch } from '../../helpers/payouts.js';
import { until } from '../../helpers/service.js';
import { useService } from '../../helpers/use-service.js';

const e2e = useService(test, { workers: 1, env: { SIMULATOR_APPROVAL_DELAY_MS: '100', SIMULATOR_PROCESSING_DELAY_MS: '200' } });

test('a batch of 1,000 payouts (a body over 64 KiB) is accepted at once and counted', async (t) => {
  const key = await e2e.key('batch-1000');
  await fund(e2e.service, key, 100_000);
  const payouts = Array.from({ length: 1000 }, (_, i) => ({ amount: 100, currency: 'xof', phone_number: payee('000', i), reference: `row-${i}`, description: `row ${i} of the June payroll` }));
  const body = JSON.stringify({ payouts });
  t.true(body.length > 64 * 1024);
  const res = await e2e.service.request('POST', POB, { key, rawBody: body, headers: { 'Content-Type': 'application/json', 'Idempotency-Key': 'big' } });
  t.is(res.status, 200, res.text.slice(0, 500));
  const batch = res.body as PayoutBatch;
  t.is(batch.counts.total, 1000);
  const now = await retrieveBatch(e2e.service, key, batch.id);
  t.is(now.counts.total, 1000);
  t.is((await listAllPayouts(e2e.service, key, { batch: batch.id })).length, 1000);
  // Any other route keeps 64 KiB.
  const other = await e2e.service.request('POST', PO, { key, rawBody: body, headers: { 'Content-Type': 'application/json' } });
  t.is(other.status, 413);
  const retried = await e2e.service.request('POST', POB, { key, rawBody: body, headers: { 'Content-Type': 'application/json', 'Idempotency-Key': 'big' } });
  t.is(retried.text, res.text);
  t.is((await listAllPayouts(e2e.service, key)).length, 1000);
  const first = await retrievePayout(e2e.service, key, (await listAllPayouts(e2e.service, key, { batch: batch.id }))[0]!.id);
  t.is(first.batch, batch.id);
  const done = await until('the batch to complete', async () => {
    const now = await retrieveBatch(e2e.service, key, batch.id);
    return now.status === 'completed' ? now : undefined;
  }, 150_000);
  t.like(done.counts, { total: 1000, paid: 1000 });
  const balance = await e2e.service.request('GET', '/v1/balance', { key });
  t.is(balance.status, 200, balance.text);
  t.is((balance.body.available as Array<{ currency: string; amount: number }>).find((b) => b.currency === 'xof')?.amount, 0);
});
