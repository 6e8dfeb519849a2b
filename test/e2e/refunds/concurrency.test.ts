/**
 * Concurrent refunds of one intent never hold more than its amount together, across
 * worker processes and crashes (DESIGN.md section 11). Three workers take 60 keyed
 * partial refunds of two intents at once (each asks for more than its share, so
 * most are refused); one worker is SIGKILLed while they run and replaced. Then:
 * the accepted refunds of each intent add up to at most its amount, and exactly to
 * it once they succeeded; `amount_refunded` equals the sum of its succeeded refunds;
 * each keyed request, sent again, replays its first answer.
 *
 * The second part: a refund whose next step's job Redis lost is re-driven from
 * MongoDB by the sweeper, and so is a hold whose create job was lost before the
 * refund's document was written.
 */
import test from 'ava';
import { QUEUES } from '../../../common/jobs.js';
import { intentTokenKey } from '../../../common/intent-tokens.js';
import type { PaymentIntentDoc } from '../../../common/documents.js';
import { Service, serviceQueue, sleep, uniqueName, type ApiResponse } from '../../helpers/service.js';
import { mapLimit, retrieve } from '../../helpers/payment-intent-lifecycle.js';
import { listAllRefunds, paidIntent, refund, waitForRefund } from '../../helpers/refunds.js';

/** The same request with the same key until it gets an answer that is not 409 or 503 (or a network error). */
async function untilAnswered(send: () => Promise<ApiResponse>): Promise<ApiResponse> {
  for (let tries = 1; ; tries++) {
    const res = await send().catch(() => null);
    if (res && res.status !== 409 && res.status !== 503) return res;
    await sleep(Math.min(4000, 250 * 2 ** tries));
  }
}

test('concurrent partial refunds through three workers, one of them killed, never hold more than the amount', async (t) => {
  const service = await Service.start({
    workers: 3,
    env: { WRITE_TIMEOUT_MS: '30000', SIMULATOR_APPROVAL_DELAY_MS: '100', SIMULATOR_PROCESSING_DELAY_MS: '300', WORKER_CONCURRENCY: '16' },
  });
  t.teardown(() => service.stop());
  const key = await service.issueKey(uniqueName('race'));
  const intents = await Promise.all([paidIntent(service, key, { amount: 1000, n: 1 }), paidIntent(service, key, { amount: 999, n: 2 })]);

  // 30 refunds of 70 per intent: 2100 asked of 1000 (999), at most 14 fit.
  const asks = Array.from({ length: 60 }, (_, i) => ({ pi: intents[i % 2]!, key: `race-${i}` }));
  let killed = false;
  const answers = await mapLimit(asks, 30, async (ask, i) => {
    if (i === 20 && !killed) {
      killed = true;
      service.workers[0]!.kill('SIGKILL');
      void service.startWorker();
    }
    return untilAnswered(() => refund(service, key, { payment_intent: ask.pi.id, amount: 70 }, { 'Idempotency-Key': ask.key }));
  });
  for (const res of answers) {
    t.true(res.status === 200 || (res.status === 400 && ['amount_too_large', 'charge_already_refunded'].includes(res.body.error.code)), res.text);
  }
  for (const pi of intents) {
    const accepted = answers.filter((res, i) => res.status === 200 && asks[i]!.pi.id === pi.id);
    t.is(accepted.length, Math.floor(pi.amount / 70), `${pi.id}: ${accepted.length} accepted`);
    t.true(accepted.length * 70 <= pi.amount);
  }
  // Each keyed request replays its first answer.
  for (const [i, ask] of asks.entries()) {
    if (i % 5 !== 0) continue;
    const again = await refund(service, key, { payment_intent: ask.pi.id, amount: 70 }, { 'Idempotency-Key': ask.key });
    t.is(again.text, answers[i]!.text);
  }

  const db = await service.db();
  for (const pi of intents) {
    const refunds = await listAllRefunds(service, key, pi.id);
    t.is(refunds.length, Math.floor(pi.amount / 70));
    for (const r of refunds) await waitForRefund(service, key, r.id, 'succeeded', 60_000);
    const after = await retrieve(service, key, pi.id);
    t.is(after.amount_refunded, refunds.length * 70);
    const stored = (await db.collection<PaymentIntentDoc>('payment_intents').findOne({ _id: pi.id })) as PaymentIntentDoc;
    t.is(stored.amount_held, refunds.length * 70);
    t.is(stored.refunds?.length, refunds.length);
    t.is(stored.refunds_pending, 0);
    // Whatever remains is refundable still, and no more.
    const rest = await untilAnswered(() => refund(service, key, { payment_intent: pi.id }, { 'Idempotency-Key': `rest-${pi.id}` }));
    t.is(rest.status, 200, rest.text);
    t.is(rest.body.amount, pi.amount - refunds.length * 70);
  }
});

test('the sweeper re-drives a refund whose next step Redis lost, and a hold whose create job was lost before its refund was written', async (t) => {
  const service = await Service.start({
    workers: 1,
    env: { SIMULATOR_APPROVAL_DELAY_MS: '100', SIMULATOR_PROCESSING_DELAY_MS: '3000', INTENTS_SWEEP_INTERVAL_MS: '500' },
  });
  t.teardown(() => service.stop());
  const project = uniqueName('sweep');
  const key = await service.issueKey(project);
  const pi = await paidIntent(service, key, { amount: 1000, n: 3 });

  // Lost create: a hold on the intent's ledger, without its refund's document. Written
  // first, while no job writes the intent: on the local store an update rewrites the
  // whole document, and this one, made outside the intent's lock, would otherwise race
  // the lost step's settlement (docs/storage.md). Like any write made outside the
  // service, it drops the intent's token: the worker that paid the intent keeps it
  // under that token for its next change (docs/decisions/0020-kept-intents-in-workers.md).
  const db = await service.db();
  const orphan = `re_00Vc0000000000000${uniqueName('x').slice(-9)}`;
  const entry = { id: orphan, m: orphan, amount: 100, status: 'pending', c: Math.floor(Date.now() / 1000) - 60, reason: 'duplicate', ev: { created: `evt_00Vc0000000000000${uniqueName('x').slice(-9)}` } };
  const intents = db.collection<PaymentIntentDoc>('payment_intents');
  const before = (await intents.findOne({ _id: pi.id })) as PaymentIntentDoc;
  await intents.updateOne({ _id: pi.id }, { $set: { amount_held: (before.amount_held ?? 0) + 100, refunds_pending: (before.refunds_pending ?? 0) + 1, refunds: [...(before.refunds ?? []), entry as never] } });
  const redis = service.redis();
  t.teardown(() => redis.disconnect());
  await redis.del(intentTokenKey(service.prefix, pi.id));

  // Lost step: the poll after the operator's "pending" is removed from Redis.
  const res = await refund(service, key, { payment_intent: pi.id, amount: 400 });
  t.is(res.status, 200, res.text);
  const queue = serviceQueue(service, QUEUES.intents);
  t.teardown(() => queue.close());
  const jobId = `refund-${res.body.id}-1`;
  for (let i = 0; i < 100 && !(await queue.getJob(jobId)); i++) await sleep(20);
  const removed = await queue.remove(jobId);
  t.is(removed, 1, 'the delayed poll was there to remove');

  const lost = await waitForRefund(service, key, res.body.id as string, 'succeeded', 60_000);
  t.is(lost.amount, 400);
  const rebuilt = await waitForRefund(service, key, orphan, 'succeeded', 60_000);
  t.like(rebuilt, { amount: 100, reason: 'duplicate', payment_intent: pi.id, description: null });
  const after = await retrieve(service, key, pi.id);
  t.is(after.amount_refunded, 500);
  const events = await service.request('GET', '/v1/events?type=refund.created&limit=100', { key });
  t.true(events.body.data.some((e: { data: { object: { id: string } } }) => e.data.object.id === orphan));
});
