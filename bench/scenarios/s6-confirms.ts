/**
 * S6: payments, confirm → `payment_intent.succeeded`, through the simulator with
 * zero delays (mtn_momo, phone approval: requires_action → processing → succeeded,
 * each step a job), on 1 api and 1 worker. Intents are created first (keyless, 64 at
 * a time); then each is confirmed once, and a local receiver notes when its
 * succeeded event arrives (payment-path.ts).
 *
 * - S6: `BENCH_S6_INTENTS` confirms at once, at 64 connections: a flash sale.
 * - S6-steady: `BENCH_S6_RATE` confirms a second for `BENCH_S6_STEADY_S` seconds,
 *   each sent on time whatever the answers: a busy hour below capacity. By default
 *   the rate is half of what S6 completed a second in the same run (else 20), so it
 *   stays below this machine's capacity whatever the machine.
 *
 * Each reports completed payments a second (first confirm to last event) and the
 * confirm → event latency at p50 and p99, with where the CPU and the store's time went.
 */
import type { MongoClient } from 'mongodb';
import { round, type Measurement } from '../measure.js';
import { progress } from '../progress.js';
import type { GroupResult } from '../report.js';
import { reportLogs } from '../service.js';
import { settings, wanted, type ScenarioId } from '../settings.js';
import { accountFor, burst, completion, EventClock, measurementOf, PHONE, post, startPaymentService, steady, type PaymentService } from './payment-path.js';

const SUCCEEDED = 'payment_intent.succeeded';

async function createIntents(service: PaymentService, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i += 64) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(64, count - i) }, () => post(`${service.baseUrl}/v1/payment_intents`, service.key, { amount: 2000, currency: 'xof', allowed_operators: ['mtn_momo'] })),
    );
    for (const r of batch) {
      if (r.status !== 200) throw new Error(`S6: a create failed: ${r.status} ${JSON.stringify(r.json)}`);
      ids.push(r.json.id as string);
    }
  }
  return ids;
}

async function confirmAll(
  id: 'S6' | 'S6-steady',
  service: PaymentService,
  clock: EventClock,
  ids: string[],
  rate: number,
): Promise<{ m: Measurement; details: Record<string, number | string | null> }> {
  const sent = new Map<string, number>();
  const request = (i: number) => ({ path: `/v1/payment_intents/${ids[i]}/confirm`, body: JSON.stringify({ phone_number: PHONE }) });
  const note = (i: number) => sent.set(ids[i] as string, performance.now());
  const account = await accountFor(service, id);
  let answers: Record<string, number | string>;
  let non2xx: number;
  if (id === 'S6') {
    progress(`S6: ${ids.length} confirms at once (64 connections)`);
    const r = await burst(service, ids.length, request, note);
    non2xx = r.non2xx;
    answers = { confirm_answers_per_s: round(r.answersPerS, 1), confirm_answer_p50_ms: r.p50, confirm_answer_p99_ms: r.p99, statuses: JSON.stringify(r.statuses) };
  } else {
    progress(`S6-steady: ${rate} confirms a second for ${settings.s6SteadyS} s`);
    const r = await steady(service, rate, ids.length, request, note);
    non2xx = r.non2xx;
    answers = { rate_per_s: rate, statuses: JSON.stringify(r.statuses) };
  }
  await clock.await(SUCCEEDED, ids, 60_000);
  const done = completion(sent, clock.of(SUCCEEDED));
  const cost = await account.stop(done.completed);
  progress(`${id}: ${done.completed}/${ids.length} payments completed, ${done.perS} a second; confirm → succeeded event p50 ${done.p50} ms, p99 ${done.p99} ms, max ${done.max} ms`);
  return {
    m: measurementOf(done, ids.length, non2xx),
    details: { payments: ids.length, completed: done.completed, confirm_to_event_p50_ms: done.p50, confirm_to_event_p99_ms: done.p99, confirm_to_event_max_ms: done.max, ...answers, ...cost },
  };
}

export async function runConfirmScenarios(mongo: MongoClient): Promise<GroupResult> {
  const measured = new Map<ScenarioId, Measurement>();
  const details: NonNullable<GroupResult['details']> = {};
  for (const id of ['S6', 'S6-steady'] as const) {
    if (!wanted(id)) continue;
    const clock = new EventClock();
    const receiverUrl = await clock.listen();
    progress(`${id}: starting 1 api and 1 worker process (simulator delays 0 ms)`);
    const service = await startPaymentService(mongo, id === 'S6' ? 's6' : 's6s');
    try {
      const hook = await post(`${service.baseUrl}/v1/webhook_endpoints`, service.key, { url: receiverUrl, enabled_events: [SUCCEEDED] });
      if (hook.status !== 200) throw new Error(`${id}: creating the endpoint failed: ${hook.status} ${JSON.stringify(hook.json)}`);
      const s6PerS = measured.get('S6')?.rps ?? 0;
      const rate = settings.s6Rate > 0 ? settings.s6Rate : s6PerS > 0 ? Math.max(1, Math.round(s6PerS / 2)) : 20;
      const count = id === 'S6' ? settings.s6Intents : Math.max(1, Math.round(rate * settings.s6SteadyS));
      progress(`${id}: creating ${count} intents`);
      const ids = await createIntents(service, count);
      const result = await confirmAll(id, service, clock, ids, rate);
      measured.set(id, result.m);
      details[id] = result.details;
      service.api.assertRunning();
    } finally {
      reportLogs([service.api, ...service.workers]);
      await service.stop();
      clock.close();
    }
  }
  return { measured, details };
}
