/**
 * Test mode's `…008` (DESIGN.md section 17): the payout stays `enqueued` for
 * `SIMULATOR_PAYOUT_ENQUEUED_MS` (30 s by default, a few seconds here), then pays; and
 * a payout whose delayed step Redis lost is found again by the payouts' sweeper.
 */
import test from 'ava';
import { Queue } from 'bullmq';
import { QUEUES } from '../../../common/jobs.js';
import { payoutStepJobId } from '../../../common/payouts.js';
import { createPayout, eventTypesOf, fund, payee, retrievePayout, waitForPayout, type Payout } from '../../helpers/payouts.js';
import { until, withService } from '../../helpers/service.js';

test('a payout to a number ending 008 is enqueued for the configured time, then paid', async (t) => {
  const enqueuedMs = 3000;
  const { service, key } = await withService(t, { workers: 1, env: { SIMULATOR_APPROVAL_DELAY_MS: '100', SIMULATOR_PROCESSING_DELAY_MS: '100', SIMULATOR_PAYOUT_ENQUEUED_MS: String(enqueuedMs) } });
  await fund(service, key, 5000);
  const res = await createPayout(service, key, { amount: 5000, phone_number: payee('008') });
  t.is(res.status, 200, res.text);
  const po = res.body as Payout;
  const created = Date.now();
  await waitForPayout(service, key, po.id, 'enqueued');
  const paid = await waitForPayout(service, key, po.id, 'paid', 60_000);
  t.true(Date.now() - created >= enqueuedMs - 500, 'not before its time');
  t.is((await retrievePayout(service, key, po.id)).status, 'paid');
  t.is(paid.failure_code, null);
  await until('its events', async () => ((await eventTypesOf(service, key, po.id)).length === 2 ? true : undefined));
  t.deepEqual(await eventTypesOf(service, key, po.id), ['payout.created', 'payout.paid']);
});

test("a payout whose next step Redis lost is driven again from MongoDB by the sweeper, and paid once", async (t) => {
  const { service, key } = await withService(t, {
    workers: 1,
    env: { SIMULATOR_APPROVAL_DELAY_MS: '100', SIMULATOR_PROCESSING_DELAY_MS: '100', SIMULATOR_PAYOUT_ENQUEUED_MS: '4000', INTENTS_SWEEP_INTERVAL_MS: '2000' },
  });
  await fund(service, key, 5000);
  const po = (await createPayout(service, key, { amount: 5000, phone_number: payee('008') })).body as Payout;
  await waitForPayout(service, key, po.id, 'enqueued');
  const db = await service.db();
  const stored = await db.collection<{ _id: string; steps: number }>('payouts').findOne({ _id: po.id });
  const queue = new Queue(QUEUES.intents, { connection: { url: service.env.REDIS_URL }, prefix: service.prefix });
  t.teardown(() => queue.close());
  t.is(await queue.remove(payoutStepJobId(po.id, stored!.steps)), 1, 'the delayed step was there to remove');
  const paid = await waitForPayout(service, key, po.id, 'paid', 60_000);
  t.is(paid.status, 'paid');
  await until('its events', async () => ((await eventTypesOf(service, key, po.id)).length === 2 ? true : undefined));
  t.deepEqual(await eventTypesOf(service, key, po.id), ['payout.created', 'payout.paid']);
});
