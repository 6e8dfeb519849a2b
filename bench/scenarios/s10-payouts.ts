/**
 * S10: a batch of payouts, accepted → every payout `paid`, through the simulator with
 * zero delays, on 1 api and 1 worker (DESIGN.md section 17). The balance is funded
 * first (mtn_momo payments, each waited for by its `payment_intent.succeeded`); then
 * one `POST /v1/payout_batches` of `BENCH_S10_PAYOUTS` items (1,000 by default, the
 * route's limit). A local receiver notes each `payout.paid`: how long the batch took
 * to be accepted (the contract: p99 ≤ 2 s for 1,000 items), from accepted to all
 * paid, payouts paid a second, and the CPU and store commands per payout.
 */
import type { MongoClient } from 'mongodb';
import { round, type Measurement } from '../measure.js';
import { progress } from '../progress.js';
import type { GroupResult } from '../report.js';
import { reportLogs } from '../service.js';
import { settings, wanted, type ScenarioId } from '../settings.js';
import { accountFor, completion, EventClock, measurementOf, PHONE, post, startPaymentService } from './payment-path.js';

/** Each payout's amount; the funding payments cover them all. */
const AMOUNT = 100;
/** MTN's maximum for one payment in Côte d'Ivoire. */
const FUNDING_MAX = 1_500_000;

export async function runPayoutScenarios(mongo: MongoClient): Promise<GroupResult> {
  const measured = new Map<ScenarioId, Measurement>();
  if (!wanted('S10')) return { measured };
  const clock = new EventClock();
  const receiverUrl = await clock.listen();
  progress('S10: starting 1 api and 1 worker process (simulator delays 0 ms)');
  const service = await startPaymentService(mongo, 's10');
  try {
    const hook = await post(`${service.baseUrl}/v1/webhook_endpoints`, service.key, { url: receiverUrl, enabled_events: ['payment_intent.succeeded', 'payout.paid'] });
    if (hook.status !== 200) throw new Error(`S10: creating the endpoint failed: ${hook.status} ${JSON.stringify(hook.json)}`);
    const count = settings.s10Payouts;
    const needed = count * AMOUNT;
    const funding: string[] = [];
    for (let left = needed; left > 0; left -= FUNDING_MAX) {
      const created = await post(`${service.baseUrl}/v1/payment_intents`, service.key, { amount: Math.max(100, Math.min(left, FUNDING_MAX)), currency: 'xof', allowed_operators: ['mtn_momo'] });
      if (created.status !== 200) throw new Error(`S10: a funding payment failed: ${created.status} ${JSON.stringify(created.json)}`);
      const id = created.json.id as string;
      const confirmed = await post(`${service.baseUrl}/v1/payment_intents/${id}/confirm`, service.key, { phone_number: PHONE });
      if (confirmed.status !== 200) throw new Error(`S10: a confirm failed: ${confirmed.status} ${JSON.stringify(confirmed.json)}`);
      funding.push(id);
    }
    await clock.await('payment_intent.succeeded', funding, 120_000);

    progress(`S10: one batch of ${count} payouts`);
    const account = await accountFor(service, 'S10');
    const items = Array.from({ length: count }, (_, i) => ({ amount: AMOUNT, currency: 'xof', operator: 'mtn_momo', phone_number: PHONE, reference: `row-${i}` }));
    const sentAt = performance.now();
    const batch = await post(`${service.baseUrl}/v1/payout_batches`, service.key, { payouts: items });
    const acceptMs = Math.round(performance.now() - sentAt);
    if (batch.status !== 200) throw new Error(`S10: the batch was refused: ${batch.status} ${JSON.stringify(batch.json).slice(0, 300)}`);
    const ids = await payoutIds(service.baseUrl, service.key, batch.json.id as string);
    const sent = new Map(ids.map((id) => [id, sentAt]));
    await clock.await('payout.paid', ids, 600_000);
    const done = completion(sent, clock.of('payout.paid'));
    const cost = await account.stop(done.completed);
    const allPaidS = done.max === null ? null : round(done.max / 1000, 1);
    progress(`S10: accepted in ${acceptMs} ms; ${done.completed}/${count} paid, the last ${allPaidS} s after the batch was sent; ${done.perS} a second`);
    measured.set('S10', measurementOf(done, count, 0));
    service.api.assertRunning();
    return {
      measured,
      details: {
        S10: { payouts: count, accept_ms: acceptMs, completed: done.completed, all_paid_s: allPaidS ?? '', paid_per_s: done.perS, ...cost },
      },
    };
  } finally {
    reportLogs([service.api, ...service.workers]);
    await service.stop();
    clock.close();
  }
}

/** The batch's payout ids, through every page of `GET /v1/payouts?batch=`. */
async function payoutIds(baseUrl: string, key: string, batch: string): Promise<string[]> {
  const ids: string[] = [];
  let after: string | null = null;
  for (;;) {
    const query = new URLSearchParams({ batch, limit: '100', ...(after ? { starting_after: after } : {}) });
    const res = await fetch(`${baseUrl}/v1/payouts?${query}`, { headers: { Authorization: `Bearer ${key}` } });
    const page = (await res.json()) as { data: Array<{ id: string }>; has_more: boolean };
    ids.push(...page.data.map((p) => p.id));
    if (!page.has_more || page.data.length === 0) return ids;
    after = page.data[page.data.length - 1]!.id;
  }
}
