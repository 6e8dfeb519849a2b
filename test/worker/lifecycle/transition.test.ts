/**
 * The store-dependent fork of worker/lifecycle/transition.ts: with the
 * `atomicConditionalUpdates` capability (common/store-profile.ts), a transition's
 * update names the intent's `rev` as it was read, and a transition that lost a race
 * decides again. The race is made deterministic: another write bumps `rev` between
 * the transition's read and its update (inside the write gate, which every update
 * passes). The test store evaluates the filter, so the path runs here as on MongoDB.
 */
import test from 'ava';
import type { PaymentIntentDoc } from '../../../common/documents.js';
import { IdGenerator } from '../../../common/ids.js';
import { openQueue, QUEUES, type TypedQueue } from '../../../common/jobs.js';
import { decideCancel, type Decision } from '../../../worker/lifecycle/decide.js';
import { transition, type Mutation, type TransitionDeps } from '../../../worker/lifecycle/transition.js';
import type { Gate } from '../../../worker/write-gate.js';
import { InsertBatcher } from '../../../worker/group-commit.js';
import { FencedUpdates } from '../../../worker/fenced-updates.js';
import { STORE_PROFILES } from '../../../common/store-profile.js';
import { FakeClock, openStack, type Stack } from '../../helpers/in-process.js';
import { uniqueName } from '../../helpers/service.js';
import { intentLockKey } from '../../../worker/record-lock.js';

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

/**
 * One test's intent, stored as a create leaves it, and a transition's dependencies
 * whose write gate runs `meanwhile` once, before the first update it lets through.
 */
async function world(atomicConditionalUpdates: boolean, meanwhile: (intents: Stack['mongo']['collections']['paymentIntents'], id: string) => Promise<unknown>, onGate?: () => Promise<unknown>) {
  const clock = new FakeClock();
  const ids = new IdGenerator(clock.now);
  const scope = { project: uniqueName('transition'), livemode: false };
  const id = ids.next('payment_intent');
  const intents = stack.mongo.collections.paymentIntents;
  const doc: PaymentIntentDoc = {
    _id: id,
    ...scope,
    amount: 500,
    currency: 'usd',
    description: null,
    status: 'new',
    client_secret: `${id}_secret_test`,
    automatic_operator: true,
    allowed_operators: ['wave'],
    selected_operator: null,
    metadata: [],
    created: Math.floor(clock.now() / 1000),
    expires_at: Math.floor(clock.now() / 1000) + 3600,
  };
  await intents.insertOne(doc);
  let raced = false;
  const writes: Gate = {
    async run(work) {
      if (!raced) {
        raced = true;
        await meanwhile(intents, id);
        await onGate?.();
      }
      return work();
    },
  };
  const deps: TransitionDeps = {
    collections: stack.mongo.collections,
    inserts: new InsertBatcher({ maxDocs: 16, waitMs: 2 }),
    redis: stack.redis,
    prefix: stack.config.queuePrefix,
    eventsQueue,
    intentsQueue,
    ids,
    now: clock.now,
    updates: new FencedUpdates({ maxDocs: 16, gate: writes, statementBoundMs: STORE_PROFILES.ferretdb.updateStatementBoundMs }),
    atomicConditionalUpdates,
  };
  const mutation: Mutation = { ...scope, target: id, id: `req_${id}`, requestId: `req_${id}`, baseUrl: 'http://api.test' };
  const other: Mutation = { ...mutation, id: `req_other_${id}`, requestId: `req_other_${id}` };
  const decisions: PaymentIntentDoc[] = [];
  const cancel = (read: PaymentIntentDoc): Decision => {
    decisions.push(read);
    return decideCancel(read, { cancellation_reason: 'requested_by_customer' }, Math.floor(clock.now() / 1000));
  };
  return {
    id,
    decisions,
    run: () => transition(deps, mutation, cancel),
    /** The same cancel, asked by another request in another worker: its own write gate and batcher. */
    runOther: () =>
      transition(
        { ...deps, inserts: new InsertBatcher({ maxDocs: 16, waitMs: 2 }), updates: new FencedUpdates({ maxDocs: 16, gate: { run: (work) => work() }, statementBoundMs: STORE_PROFILES.ferretdb.updateStatementBoundMs }) },
        other,
        cancel,
      ),
    stored: async () => (await intents.findOne({ _id: id }))!,
    /** The transitions' events: the created event, recorded before the intent's first change, is counted apart. */
    events: () => stack.mongo.collections.events.find({ object_id: id, type: { $ne: 'payment_intent.created' } }).toArray(),
    created: () => stack.mongo.collections.events.find({ object_id: id, type: 'payment_intent.created' }).toArray(),
    mine: (stored: PaymentIntentDoc) => (stored.history ?? []).filter((entry) => entry.m === mutation.id),
  };
}

/** Another write to the intent that changes no status (an update of its description): `rev` moves on. */
const describe = (intents: Stack['mongo']['collections']['paymentIntents'], id: string) =>
  intents.updateOne({ _id: id }, { $set: { description: 'changed meanwhile', rev: 1 } });

/** Another cancel, applied first: status and `rev` move on. */
const cancelFirst = (intents: Stack['mongo']['collections']['paymentIntents'], id: string) =>
  intents.updateOne({ _id: id }, { $set: { status: 'canceled', canceled_at: 1, cancellation_reason: 'abandoned', rev: 1 } });

test('with atomic conditional updates, a transition whose intent changed after its read decides again, and applies once', async (t) => {
  const w = await world(true, describe);
  const result = await w.run();
  t.is(result.kind, 'applied');
  t.is(w.decisions.length, 2, 'decided twice: the first update matched nothing');
  t.is(w.decisions[0]?.rev, undefined);
  t.is(w.decisions[1]?.rev, 1, 'the second decision read the other write');
  const stored = await w.stored();
  t.like(stored, { status: 'canceled', rev: 2, description: 'changed meanwhile' });
  t.is(w.mine(stored).length, 1, 'one history entry');
  const events = await w.events();
  t.deepEqual(events.map((e) => e.type), ['payment_intent.canceled'], 'one event');
  t.deepEqual(events.map((e) => e._id), w.mine(stored).map((entry) => entry.evt?.id), 'the event of that entry');
  t.is((await w.created()).length, 1, 'the created event recorded once, before the first change, however often decided');
});

test('with atomic conditional updates, a cancel that lost to another cancel decides again and is refused: nothing of it is written', async (t) => {
  const w = await world(true, cancelFirst);
  const result = await w.run();
  t.is(result.kind, 'refused');
  t.is(result.kind === 'refused' ? result.status : 0, 400);
  t.is(w.decisions.length, 2);
  const stored = await w.stored();
  t.like(stored, { status: 'canceled', cancellation_reason: 'abandoned', rev: 1 });
  t.deepEqual(w.mine(stored), []);
  t.deepEqual(await w.events(), [], 'no event');
});

test('without the capability, the update names `_id` alone: the same race is not seen, and only the record lock keeps transitions apart', async (t) => {
  const w = await world(false, cancelFirst);
  const result = await w.run();
  t.is(result.kind, 'applied', 'applied over the other cancel');
  t.is(w.decisions.length, 1);
  const stored = await w.stored();
  t.like(stored, { status: 'canceled', cancellation_reason: 'requested_by_customer', rev: 1 });
  t.is(w.mine(stored).length, 1);
});

test('without the capability, a lock that Redis forgot and gave back: both workers apply the same change, and it is recorded once (DESIGN section 15)', async (t) => {
  // Worker A has read the intent and holds its lock; at its write gate, Redis forgets
  // the lock (a rollback), worker B takes it and applies the same cancel in full,
  // then the rollback's state gives A its lock back: A's fence passes and A writes too.
  let w: Awaited<ReturnType<typeof world>> | null = null;
  const lockKey = () => intentLockKey(stack.config.queuePrefix, w!.id);
  w = await world(false, async () => undefined, async () => {
    const held = await stack.redis.get(lockKey());
    await stack.redis.del(lockKey());
    const other = await w!.runOther();
    t.is(other.kind, 'applied', 'B applied the cancel');
    await stack.redis.set(lockKey(), held!, 'PX', 10_000);
  });
  const result = await w.run();
  t.is(result.kind, 'applied', 'A applied it too: the store cannot tell');
  const events = await w.events();
  t.deepEqual(events.map((e) => e.type), ['payment_intent.canceled'], 'one event');
  const stored = await w.stored();
  t.is((stored.history ?? []).filter((entry) => entry.evt?.type === 'payment_intent.canceled').length, 1, 'one history entry');
  const keys = await stack.mongo.collections.eventKeys.find({ _id: { $regex: `^${w.id}:` } }).toArray();
  t.is(keys.length, 1);
  t.is(keys[0]?.event, events[0]?._id, 'the change is named by the event recorded');
});
