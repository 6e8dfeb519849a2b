/**
 * The retention sweeper (worker/processors/sweep-retention.ts) against real FerretDB
 * and Redis: documents made old by their ids (an IdGenerator on an old clock), as the
 * sweeper finds them by `_id` alone. Each test has a database of its own.
 */
import test from 'ava';
import type { EventDoc, PaymentIntentDoc, RefundDoc, WebhookAttemptDoc } from '../../../common/documents.js';
import { IdGenerator } from '../../../common/ids.js';
import { intentTokenKey } from '../../../common/intent-tokens.js';
import type { Collections } from '../../../common/mongo.js';
import type { OperatorDiscrepancyDoc, SimulatorPaymentDoc } from '../../../common/operator-discrepancies.js';
import type { PayoutBatchDoc, PayoutDoc, PayoutStatus } from '../../../common/payouts.js';
import { sweepRetention } from '../../../worker/processors/sweep-retention.js';
import { openStack, type Stack } from '../../helpers/in-process.js';

const DAY = 24 * 3600_000;
/** A pass's counts, none deleted. */
const NONE = { payment_intents: 0, refunds: 0, events: 0, webhook_attempts: 0, payouts: 0, payout_batches: 0, operator_discrepancies: 0, simulator_payments: 0 };
const NOW = Date.UTC(2026, 11, 1);
const retention = { eventMs: 30 * DAY, testDataMs: 30 * DAY };

/** Ids made `daysAgo` days before NOW. */
const idsAt = (daysAgo: number) => new IdGenerator(() => NOW - daysAgo * DAY);

function intent(id: string, livemode: boolean, refunds: string[] = []): PaymentIntentDoc {
  return {
    _id: id, project: 'p', livemode, amount: 1000, currency: 'xof', description: null, status: 'succeeded', client_secret: `${id}_secret_x`,
    automatic_operator: true, allowed_operators: ['mtn_momo'], selected_operator: null, metadata: [], created: 1, expires_at: 2, rev: 2,
    refunds: refunds.map((r) => ({ id: r, m: r, amount: 1, status: 'succeeded', c: 1, reason: null, ev: { created: 'evt_x' } })),
  };
}

function refund(id: string, livemode: boolean, paymentIntent: string): RefundDoc {
  return {
    _id: id, project: 'p', livemode, amount: 1, currency: 'xof', payment_intent: paymentIntent, status: 'succeeded', reason: null,
    failure_reason: null, description: null, metadata: [], operator: 'mtn_momo', created: 1, answer: '{}', requested: true, operator_reference: null, polls: 0,
  } as RefundDoc;
}

const event = (id: string, livemode: boolean): EventDoc => ({ _id: id, project: 'p', livemode, type: 'payment_intent.succeeded', object_id: 'pi_x', json: '{}', created_ms: 1 });

const attempt = (id: string, livemode: boolean): WebhookAttemptDoc => ({
  _id: id, project: 'p', livemode, endpoint_id: 'we_x', event_id: 'evt_x', attempt: 1, created: 1, duration_ms: 1, http_status: 200, error: null, succeeded: true, response_body: null,
});

async function ids(c: Collections) {
  const of = async (collection: { find: (f: object, o: object) => { toArray: () => Promise<Array<{ _id: string }>> } }) =>
    (await collection.find({}, { projection: { _id: 1 } }).toArray()).map((d) => d._id).sort();
  return { intents: await of(c.paymentIntents), refunds: await of(c.refunds), events: await of(c.events), attempts: await of(c.webhookAttempts) };
}

const stacks: Stack[] = [];
test.after.always(async () => {
  await Promise.all(stacks.map((s) => s.close()));
});

async function world() {
  const stack = await openStack();
  stacks.push(stack);
  const c = stack.mongo.collections;
  const deps = { collections: c, redis: stack.redis, prefix: stack.config.queuePrefix, retention, now: () => NOW };
  return { stack, c, deps };
}

test('old test objects, and old events and attempts of both modes, are deleted; live intents and refunds, and what is recent, stay', async (t) => {
  const { stack, c, deps } = await world();
  const old = idsAt(40);
  const mid = idsAt(10);
  // Test mode, 40 days old: an intent with two refunds (one of them younger), and one alone.
  const oldTestPi = old.next('payment_intent');
  const oldTestRe = old.next('refund');
  const youngerRe = mid.next('refund');
  const loneTestPi = old.next('payment_intent');
  // Live mode, 40 days old: kept for ever.
  const oldLivePi = old.next('payment_intent');
  const oldLiveRe = old.next('refund');
  const midTestPi = mid.next('payment_intent');
  await c.paymentIntents.insertMany([intent(oldTestPi, false, [oldTestRe, youngerRe]), intent(loneTestPi, false), intent(oldLivePi, true, [oldLiveRe]), intent(midTestPi, false)]);
  await c.refunds.insertMany([refund(oldTestRe, false, oldTestPi), refund(youngerRe, false, oldTestPi), refund(oldLiveRe, true, oldLivePi)]);
  const [oldTestEvt, oldLiveEvt, midTestEvt, midLiveEvt] = [old.next('event'), old.next('event'), mid.next('event'), mid.next('event')];
  await c.events.insertMany([event(oldTestEvt, false), event(oldLiveEvt, true), event(midTestEvt, false), event(midLiveEvt, true)]);
  const [oldTestWha, oldLiveWha, midLiveWha] = [old.next('attempt'), old.next('attempt'), mid.next('attempt')];
  await c.webhookAttempts.insertMany([attempt(oldTestWha, false), attempt(oldLiveWha, true), attempt(midLiveWha, true)]);
  // An api kept the old test intent under its token.
  await stack.redis.set(intentTokenKey(deps.prefix, oldTestPi), 'kept');

  const pass = await sweepRetention(deps, { batch: 1 });
  t.deepEqual(pass, { deleted: { ...NONE, payment_intents: 2, refunds: 2, events: 2, webhook_attempts: 2 }, done: true });
  t.deepEqual(await ids(c), {
    intents: [oldLivePi, midTestPi].sort(),
    refunds: [oldLiveRe],
    events: [midTestEvt, midLiveEvt].sort(),
    attempts: [midLiveWha],
  });
  t.is(await stack.redis.exists(intentTokenKey(deps.prefix, oldTestPi)), 0, "the deleted intent's token went with it");

  // Nothing is left for the next pass.
  t.deepEqual(await sweepRetention(deps), { deleted: NONE, done: true });
});

test('test data kept shorter than events takes its events and attempts with it', async (t) => {
  const { c, deps } = await world();
  const old = idsAt(10);
  const [testEvt, liveEvt] = [old.next('event'), old.next('event')];
  await c.events.insertMany([event(testEvt, false), event(liveEvt, true)]);
  const [testWha, liveWha] = [old.next('attempt'), old.next('attempt')];
  await c.webhookAttempts.insertMany([attempt(testWha, false), attempt(liveWha, true)]);
  const pass = await sweepRetention({ ...deps, retention: { eventMs: 30 * DAY, testDataMs: 7 * DAY } });
  t.like(pass.deleted, { events: 1, webhook_attempts: 1 });
  t.deepEqual(await ids(c), { intents: [], refunds: [], events: [liveEvt], attempts: [liveWha] });
});

test('a pass stops between batches once its time is up, and says so; the next one goes on', async (t) => {
  const { c, deps } = await world();
  const old = idsAt(40);
  await c.events.insertMany(Array.from({ length: 7 }, () => event(old.next('event'), true)));
  // Each reading of the clock is a second later. The pass reads it once to begin, once
  // for each of the seven empty steps before the live events, then before each batch:
  // two batches fit in 9.5 s.
  let clock = NOW;
  const first = await sweepRetention({ ...deps, now: () => (clock += 1000) }, { batch: 2, budgetMs: 9500 });
  t.deepEqual(first, { deleted: { ...NONE, events: 4 }, done: false });
  const second = await sweepRetention(deps, { batch: 2 });
  t.deepEqual(second, { deleted: { ...NONE, events: 3 }, done: true });
  t.deepEqual((await ids(c)).events, []);
});

test('old test payouts that ended, completed batches, discrepancies and simulator payments are deleted; one on its way, live ones and recent ones stay', async (t) => {
  const { c, deps } = await world();
  const old = idsAt(40);
  const mid = idsAt(10);
  const payout = (id: string, livemode: boolean, status: PayoutStatus) => ({ _id: id, project: 'p', livemode, status, amount: 1, currency: 'xof' }) as unknown as PayoutDoc;
  const [paid, failed, canceled, onItsWay, live, recent] = [old.next('payout'), old.next('payout'), old.next('payout'), old.next('payout'), old.next('payout'), mid.next('payout')];
  await c.payouts.insertMany([payout(paid, false, 'paid'), payout(failed, false, 'failed'), payout(canceled, false, 'canceled'), payout(onItsWay, false, 'enqueued'), payout(live, true, 'paid'), payout(recent, false, 'paid')]);
  const batch = (id: string, status: PayoutBatchDoc['status']) => ({ _id: id, project: 'p', livemode: false, status, total: 1 }) as unknown as PayoutBatchDoc;
  const [completed, processing] = [old.next('payout_batch'), old.next('payout_batch')];
  await c.payoutBatches.insertMany([batch(completed, 'completed'), batch(processing, 'processing')]);
  const discrepancy = (id: string, livemode: boolean) => ({ _id: id, project: 'p', livemode }) as unknown as OperatorDiscrepancyDoc;
  const [oldTestOd, oldLiveOd] = [old.next('operator_discrepancy'), old.next('operator_discrepancy')];
  await c.operatorDiscrepancies.insertMany([discrepancy(oldTestOd, false), discrepancy(oldLiveOd, true)]);
  const simulated = (pi: string) => ({ _id: `${pi}:1`, project: 'p', livemode: false, payment_intent: pi, attempt: 1, operator: 'mtn_momo', amount: 1, currency: 'xof', phone_masked: '', paid_ms: 1 }) as SimulatorPaymentDoc;
  const [oldSim, midSim] = [simulated(old.next('payment_intent')), simulated(mid.next('payment_intent'))];
  await c.simulatorPayments.insertMany([oldSim, midSim]);

  const pass = await sweepRetention(deps, { batch: 2 });
  t.deepEqual(pass, { deleted: { ...NONE, payouts: 3, payout_batches: 1, operator_discrepancies: 1, simulator_payments: 1 }, done: true });
  const left = async (collection: { find: (f: object) => { toArray: () => Promise<Array<{ _id: string }>> } }) => (await collection.find({}).toArray()).map((d) => d._id).sort();
  t.deepEqual(await left(c.payouts), [onItsWay, live, recent].sort());
  t.deepEqual(await left(c.payoutBatches), [processing]);
  t.deepEqual(await left(c.operatorDiscrepancies), [oldLiveOd]);
  t.deepEqual(await left(c.simulatorPayments), [midSim._id]);
});
