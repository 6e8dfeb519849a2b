/**
 * A live refund through an operator connector (worker/refunds/process.ts), against
 * real FerretDB and Redis with a connector written here: the request the connector
 * is given, a pending answer kept (the operator's reference, the next poll's job),
 * then the outcome applied once to the intent's ledger, the refund and its events;
 * a failure releasing the hold; a connector fault failing the step (retried), not
 * the refund.
 */
import test from 'ava';
import type { PaymentIntentDoc } from '../../../common/documents.js';
import { IdGenerator } from '../../../common/ids.js';
import { openQueue, QUEUES, type TypedQueue } from '../../../common/jobs.js';
import { createLogger } from '../../../common/logger.js';
import { resolveStoreProfile } from '../../../common/store-profile.js';
import { InsertBatcher } from '../../../worker/group-commit.js';
import { FencedUpdates } from '../../../worker/fenced-updates.js';
import { STORE_PROFILES } from '../../../common/store-profile.js';
import { WriteGate } from '../../../worker/write-gate.js';
import type { OperatorConnector, RefundRequest, RefundResult } from '../../../worker/operators/connector.js';
import { OperatorUnavailableError } from '../../../common/infra-errors.js';
import { OperatorConnectors } from '../../../worker/operators/registry.js';
import { holdRefund, settleRefund } from '../../../worker/refunds/ledger.js';
import { processJobId, processRefund, type ProcessDeps } from '../../../worker/refunds/process.js';
import { ensureRefundDoc } from '../../../worker/refunds/record.js';
import { openStack, type Stack } from '../../helpers/in-process.js';
import { uniqueName } from '../../helpers/service.js';

let stack: Stack;
let eventsQueue: TypedQueue<'events'>;
let intentsQueue: TypedQueue<'intents'>;

test.before(async () => {
  stack = await openStack();
  eventsQueue = openQueue(QUEUES.events, { connection: stack.redis, prefix: stack.config.queuePrefix });
  intentsQueue = openQueue(QUEUES.intents, { connection: stack.redis, prefix: stack.config.queuePrefix });
});

test.after.always(async () => {
  await eventsQueue?.close();
  await intentsQueue?.close();
  await stack?.close();
});

/** A connector that answers from a script and notes what it was asked. */
function connector(answers: { refund: () => Promise<RefundResult>; outcome?: () => Promise<RefundResult> }) {
  const asked: { refunds: RefundRequest[]; outcomes: Array<[string, string | undefined]> } = { refunds: [], outcomes: [] };
  const impl: OperatorConnector = {
    requestPayment: async () => ({}),
    outcome: async () => ({ kind: 'pending' }),
    refund: async (request) => {
      asked.refunds.push(request);
      return answers.refund();
    },
    refundOutcome: async (request, reference) => {
      asked.outcomes.push([request.refundId, reference]);
      return (answers.outcome ?? answers.refund)();
    },
    withdraw: async () => ({ kind: 'cannot' }),
    payout: async () => ({ kind: 'pending' }),
    payoutOutcome: async () => ({ kind: 'pending' }),
    probe: async () => undefined,
  };
  return { impl, asked };
}

async function world(impl: OperatorConnector, refundLimitMs = Number.MAX_SAFE_INTEGER) {
  const project = uniqueName('live');
  const ids = new IdGenerator(Date.now);
  const deps: ProcessDeps = {
    collections: stack.mongo.collections,
    redis: stack.redis,
    prefix: stack.config.queuePrefix,
    updates: new FencedUpdates({ maxDocs: 16, gate: new WriteGate(1), statementBoundMs: STORE_PROFILES.ferretdb.updateStatementBoundMs }),
    atomicConditionalUpdates: (await resolveStoreProfile(stack.config.storeProfile, stack.mongo.db)).atomicConditionalUpdates,
    ids,
    now: Date.now,
    inserts: new InsertBatcher({ maxDocs: 16, waitMs: 2 }),
    eventsQueue,
    intentsQueue,
    simulator: stack.config.simulator,
    connectors: new OperatorConnectors([{ id: 'mtn_momo:mtnivorycoast', operator: 'mtn_momo', countries: ['CI'], sandbox: false, config: {} as never }], () => impl),
    publicBaseUrl: 'https://pay.example',
    refundLimitMs,
    logger: createLogger('silent', 'test'),
  };
  const id = ids.next('payment_intent');
  const intent: PaymentIntentDoc = {
    _id: id, project, livemode: true, amount: 3000, currency: 'xof', description: null, status: 'succeeded', client_secret: `${id}_secret_x`,
    automatic_operator: false, allowed_operators: ['mtn_momo'], selected_operator: 'mtn_momo', metadata: [], created: 1, expires_at: 2, attempt: 2, rev: 4,
    payment: { operator: 'mtn_momo', phone_number: null, phone_masked: '+225*******000', return_url: null, checkout_token: null },
  };
  await stack.mongo.collections.paymentIntents.insertOne(intent);
  const refundId = ids.next('refund');
  const held = await holdRefund(deps, { target: id, scope: { project, livemode: true }, m: refundId, refundId, created: 1, amount: 1200, reason: null, liveOperators: new Set(['mtn_momo']) });
  if (held.kind !== 'held') throw new Error(`not held: ${JSON.stringify(held)}`);
  const refund = await ensureRefundDoc(deps, held.doc, held.entry, { description: null, metadata: [] });
  const step = (poll: number) => processRefund(deps, { refund: refund._id, paymentIntent: id, project, livemode: true, poll });
  const stored = async () => ({
    refund: await stack.mongo.collections.refunds.findOne({ _id: refund._id }),
    intent: await stack.mongo.collections.paymentIntents.findOne({ _id: id }),
    events: (await stack.mongo.collections.events.find({ project }).toArray()).map((e) => e.type).sort(),
  });
  return { deps, id, refundId: refund._id, step, stored };
}

test('a pending answer keeps the operator reference and schedules the next poll; the outcome is applied once', async (t) => {
  let final: RefundResult = { kind: 'pending', operatorReference: 'MTN-REF-1' };
  const c = connector({ refund: async () => ({ kind: 'pending', operatorReference: 'MTN-REF-1' }), outcome: async () => final });
  const w = await world(c.impl);
  t.deepEqual(await w.step(0), { status: 'pending' });
  t.is(c.asked.refunds.length, 1);
  t.like(c.asked.refunds[0], {
    refundId: w.refundId, paymentIntent: w.id, attemptId: `${w.id}:2`, amount: 1200, currency: 'xof', phoneNumber: null,
    callbackUrl: 'https://pay.example/operators/mtn_momo/callback', reason: null,
  });
  let now = await w.stored();
  t.like(now.refund, { status: 'pending', requested: true, operator_reference: 'MTN-REF-1', polls: 1 });
  const next = await intentsQueue.getJob(processJobId(w.refundId, 1));
  t.truthy(next, 'the first poll is scheduled');
  t.is(next?.opts.delay, 5000);

  // Asked again (the poll): still pending, then succeeded.
  t.deepEqual(await w.step(1), { status: 'pending' });
  t.deepEqual(c.asked.outcomes, [[w.refundId, 'MTN-REF-1']]);
  final = { kind: 'succeeded', operatorReference: 'MTN-REF-1' };
  t.deepEqual(await w.step(2), { status: 'succeeded' });
  // A step that runs again asks nothing more and changes nothing.
  t.deepEqual(await w.step(2), { status: 'succeeded' });
  t.is(c.asked.outcomes.length, 2);
  now = await w.stored();
  t.like(now.refund, { status: 'succeeded', failure_reason: null, operator_reference: 'MTN-REF-1' });
  t.like(now.intent, { amount_refunded: 1200, amount_held: 1200, refunds_pending: 0 });
  t.deepEqual(now.events, ['payment_intent.refunded', 'refund.succeeded']);
});

test('a step after a run that ended the entry but died before the document: the outcome is asked again, applied once, and the document finished', async (t) => {
  const c = connector({ refund: async () => ({ kind: 'pending', operatorReference: 'MTN-REF-2' }), outcome: async () => ({ kind: 'succeeded', operatorReference: 'MTN-REF-2' }) });
  const w = await world(c.impl);
  t.deepEqual(await w.step(0), { status: 'pending' });
  // The run of poll 1 ends the ledger entry, then dies: no event, the document still pending.
  const scope = { project: (await w.stored()).refund!.project, livemode: true };
  t.truthy(await settleRefund(w.deps, w.id, scope, w.refundId, { kind: 'succeeded' }));
  t.like((await w.stored()).refund, { status: 'pending' });

  t.deepEqual(await w.step(1), { status: 'succeeded' });
  t.is(c.asked.outcomes.length, 0, 'the entry had ended: the step finishes it without asking the operator again');
  const now = await w.stored();
  t.like(now.refund, { status: 'succeeded', operator_reference: 'MTN-REF-2' });
  t.like(now.intent, { amount_refunded: 1200, amount_held: 1200, refunds_pending: 0 }, 'applied once: the settlement found the entry ended');
  t.deepEqual(now.events, ['payment_intent.refunded', 'refund.succeeded']);
  // Once the document has ended, a step returns before asking anything.
  t.deepEqual(await w.step(2), { status: 'succeeded' });
  t.is(c.asked.outcomes.length, 0);
});

test('a failed answer releases the hold and records the decline code', async (t) => {
  const c = connector({ refund: async () => ({ kind: 'failed', code: 'insufficient_funds', operatorCode: 'NOT_ENOUGH_FUNDS' }) });
  const w = await world(c.impl);
  t.deepEqual(await w.step(0), { status: 'failed' });
  const now = await w.stored();
  t.like(now.refund, { status: 'failed', failure_reason: 'insufficient_funds' });
  t.like(now.intent, { amount_held: 0, refunds_pending: 0 });
  t.is(now.intent?.amount_refunded, undefined);
  t.deepEqual(now.events, ['refund.failed']);
});

test('a connector fault (an operator 5xx or timeout) fails the step, to be retried, and changes nothing', async (t) => {
  const c = connector({ refund: async () => Promise.reject(new Error('operator answered 503')) });
  const w = await world(c.impl);
  await t.throwsAsync(w.step(0), { message: /503/ });
  const now = await w.stored();
  t.like(now.refund, { status: 'pending', requested: false, polls: 0 });
  t.like(now.intent, { amount_held: 1200, refunds_pending: 1 });
});

test("a crash between a refund event's outbox entry and its document: the refund stays pending, the retry records the JSON written first, and the delivery stays recorded", async (t) => {
  const c = connector({ refund: async () => ({ kind: 'failed', code: 'insufficient_funds', operatorCode: 'NOT_ENOUGH_FUNDS' }) });
  const w = await world(c.impl);
  const refund = await stack.mongo.collections.refunds.findOne({ _id: w.refundId });
  // An endpoint takes every event of the scope: the event gets an outbox entry.
  await stack.mongo.collections.webhookEndpoints.insertOne({
    _id: uniqueName('we'), project: refund!.project, livemode: true, url: 'https://hooks.example/', enabled_events: ['*'], description: null,
    metadata: [], status: 'enabled', secret: 'whsec_test', created: 1, failing_since: null, disabled_reason: null,
  });
  // The event's document cannot be written (the process dies there): the step fails.
  const real = w.deps.inserts;
  w.deps.inserts = {
    insert: (collection: { collectionName: string }, doc: unknown) =>
      collection.collectionName === 'events' ? Promise.reject(new Error('killed')) : real.insert(collection as never, doc as never),
  } as unknown as InsertBatcher;
  await t.throwsAsync(() => w.step(0), { message: 'killed' });
  const outbox = await stack.mongo.collections.outbox.find({ project: refund!.project, type: 'refund.failed' }).toArray();
  t.is(outbox.length, 1, 'the outbox entry is written before the document: the sweeper delivers it whatever happens to the job');
  t.is(await stack.mongo.collections.events.countDocuments({ project: refund!.project }), 0);
  t.like(await stack.mongo.collections.refunds.findOne({ _id: w.refundId }), { status: 'pending' }, 'still pending without its event: the sweeper finishes it if the job is lost');

  // The refund changes before the retry: the retry's own JSON would differ.
  await stack.mongo.collections.refunds.updateOne({ _id: w.refundId }, { $set: { metadata: [{ k: 'order', v: '42' }] } });
  w.deps.inserts = real;
  t.deepEqual(await w.step(0), { status: 'failed' });
  const events = await stack.mongo.collections.events.find({ project: refund!.project }).toArray();
  t.deepEqual(events.map((e) => e.type), ['refund.failed']);
  t.is(events[0]!._id, outbox[0]!._id);
  t.is(events[0]!.json, outbox[0]!.json, 'the event listed is the one delivered, byte for byte');
});

test('no answer is no failure: a fault schedules the next step and asks again; a refund never resolved fails at the limit', async (t) => {
  let fault = true;
  const c = connector({
    refund: async () => {
      if (fault) throw new OperatorUnavailableError('mtn_momo', 'throttled', 'POST /disbursement/v1_0/refund answered 429', 429, 7_000);
      return { kind: 'pending', operatorReference: 'MTN-REF-3' };
    },
  });
  const w = await world(c.impl);
  t.deepEqual(await w.step(0), { status: 'pending' });
  t.like((await w.stored()).refund, { status: 'pending', requested: false, polls: 1 }, 'throttled: not recorded as asked, not failed');
  t.is((await intentsQueue.getJob(processJobId(w.refundId, 1)))?.opts.delay, 7_000, "the operator's Retry-After");
  fault = false;
  t.deepEqual(await w.step(1), { status: 'pending' });
  t.is(c.asked.refunds.length, 2, 'asked again, idempotent on the refund id');
  t.like((await w.stored()).refund, { requested: true, operator_reference: 'MTN-REF-3' });

  const never = connector({ refund: async () => ({ kind: 'pending', operatorReference: 'MTN-REF-4' }) });
  const limited = await world(never.impl, 0);
  t.deepEqual(await limited.step(0), { status: 'failed' });
  t.like((await limited.stored()).refund, { status: 'failed', failure_reason: 'operator_unavailable' });
});
