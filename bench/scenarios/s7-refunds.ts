/**
 * S7: refunds, refund → `refund.succeeded`, through the simulator with zero delays,
 * on 1 api and 1 worker. `BENCH_S7_REFUNDS` intents are created and paid first
 * (mtn_momo, confirmed 64 at a time, each waited for by its
 * `payment_intent.succeeded`); then each is refunded once, whole, all at once at 64
 * connections. A local receiver notes when each refund's event arrives
 * (payment-path.ts): completed refunds a second (first refund to last event) and the
 * refund → event latency, through the queue, the hold on the intent, the
 * simulator's steps and the outbox, with where the CPU and the store's time went.
 */
import type { MongoClient } from 'mongodb';
import { round, type Measurement } from '../measure.js';
import { progress } from '../progress.js';
import type { GroupResult } from '../report.js';
import { reportLogs } from '../service.js';
import { settings, wanted, type ScenarioId } from '../settings.js';
import { accountFor, burst, completion, EventClock, measurementOf, PHONE, post, startPaymentService } from './payment-path.js';

export async function runRefundScenarios(mongo: MongoClient): Promise<GroupResult> {
  const measured = new Map<ScenarioId, Measurement>();
  if (!wanted('S7')) return { measured };
  // A refund's events are about the refund: keyed by its payment intent here.
  const clock = new EventClock((type, object) => (type.startsWith('refund.') ? (object.payment_intent as string) : (object.id as string)));
  const receiverUrl = await clock.listen();
  progress('S7: starting 1 api and 1 worker process (simulator delays 0 ms)');
  const service = await startPaymentService(mongo, 's7');
  try {
    const hook = await post(`${service.baseUrl}/v1/webhook_endpoints`, service.key, { url: receiverUrl, enabled_events: ['payment_intent.succeeded', 'refund.succeeded'] });
    if (hook.status !== 200) throw new Error(`S7: creating the endpoint failed: ${hook.status} ${JSON.stringify(hook.json)}`);

    const count = settings.s7Refunds;
    progress(`S7: creating and paying ${count} intents`);
    const ids: string[] = [];
    for (let i = 0; i < count; i += 64) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(64, count - i) }, async () => {
          const created = await post(`${service.baseUrl}/v1/payment_intents`, service.key, { amount: 2000, currency: 'xof', allowed_operators: ['mtn_momo'] });
          if (created.status !== 200) throw new Error(`S7: a create failed: ${created.status} ${JSON.stringify(created.json)}`);
          const id = created.json.id as string;
          const confirmed = await post(`${service.baseUrl}/v1/payment_intents/${id}/confirm`, service.key, { phone_number: PHONE });
          if (confirmed.status !== 200) throw new Error(`S7: a confirm failed: ${confirmed.status} ${JSON.stringify(confirmed.json)}`);
          return id;
        }),
      );
      ids.push(...batch);
    }
    await clock.await('payment_intent.succeeded', ids, 120_000);
    const unpaid = ids.filter((id) => !clock.of('payment_intent.succeeded').has(id)).length;
    if (unpaid > 0) throw new Error(`S7: ${unpaid} of ${count} payments did not succeed within 120 s`);

    progress(`S7: ${count} refunds at once (64 connections)`);
    const sent = new Map<string, number>();
    const account = await accountFor(service, 'S7');
    const r = await burst(
      service,
      count,
      (i) => ({ path: '/v1/refunds', body: JSON.stringify({ payment_intent: ids[i] }) }),
      (i) => sent.set(ids[i] as string, performance.now()),
    );
    await clock.await('refund.succeeded', ids, 60_000);
    const done = completion(sent, clock.of('refund.succeeded'));
    const cost = await account.stop(done.completed);
    progress(`S7: ${done.completed}/${count} refunds completed, ${done.perS} a second; refund → refund.succeeded p50 ${done.p50} ms, p99 ${done.p99} ms, max ${done.max} ms`);
    measured.set('S7', measurementOf(done, count, r.non2xx));
    service.api.assertRunning();
    return {
      measured,
      details: {
        S7: {
          refunds: count,
          completed: done.completed,
          refund_to_event_p50_ms: done.p50,
          refund_to_event_p99_ms: done.p99,
          refund_to_event_max_ms: done.max,
          refund_answers_per_s: round(r.answersPerS, 1),
          refund_answer_p50_ms: r.p50,
          refund_answer_p99_ms: r.p99,
          statuses: JSON.stringify(r.statuses),
          ...cost,
        },
      },
    };
  } finally {
    reportLogs([service.api, ...service.workers]);
    await service.stop();
    clock.close();
  }
}
