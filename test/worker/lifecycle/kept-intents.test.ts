/**
 * The intents a worker keeps for their next change (common/kept-intents.ts),
 * alone and under worker/lifecycle/transition.ts against the real Redis and store:
 * a change that follows this worker's own write reads nothing from MongoDB; one
 * that follows another worker's write reads it (its token moved), so no history
 * entry of the other is lost, even on a store whose update names `_id` alone; and a
 * change that lost a race reads MongoDB again.
 */
import test from 'ava';
import type { PaymentIntentDoc } from '../../../common/documents.js';
import { IdGenerator } from '../../../common/ids.js';
import { openQueue, QUEUES, type TypedQueue } from '../../../common/jobs.js';
import { decideUpdate } from '../../../worker/lifecycle/decide.js';
import { KeptIntents } from '../../../common/kept-intents.js';
import { transition, type Mutation, type TransitionDeps } from '../../../worker/lifecycle/transition.js';
import type { Gate } from '../../../worker/write-gate.js';
import { InsertBatcher } from '../../../worker/group-commit.js';
import { FencedUpdates } from '../../../worker/fenced-updates.js';
import { STORE_PROFILES } from '../../../common/store-profile.js';
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

const scopeA = { project: 'proj_a', livemode: false };
const docOf = (id: string, scope = scopeA) => ({ _id: id, ...scope, status: 'new' }) as PaymentIntentDoc;

test('a kept intent is given back once, under the token its write set, in its scope, while it is young', (t) => {
  let now = 1_000;
  const kept = new KeptIntents({ redis: stack.redis, prefix: stack.config.queuePrefix, maxEntries: 2, maxAgeMs: 30_000, now: () => now });
  kept.keep(docOf('pi_1'), 'T1');
  t.is(kept.take(scopeA, 'pi_1', 'T1')?._id, 'pi_1');
  t.is(kept.take(scopeA, 'pi_1', 'T1'), null, 'taken out once given');

  kept.keep(docOf('pi_1'), 'T1');
  t.is(kept.take(scopeA, 'pi_1', 'T2'), null, 'another token: written since');
  kept.keep(docOf('pi_1'), 'T1');
  t.is(kept.take(scopeA, 'pi_1', null), null, 'no token: expired or lost');
  kept.keep(docOf('pi_1'), 'T1');
  t.is(kept.take({ project: 'proj_b', livemode: false }, 'pi_1', 'T1'), null, 'another scope');
  kept.keep(docOf('pi_1'), 'T1');
  t.is(kept.take({ ...scopeA, livemode: true }, 'pi_1', 'T1'), null, 'the other mode');
  kept.keep(docOf('pi_1'), 'T1');
  now += 30_001;
  t.is(kept.take(scopeA, 'pi_1', 'T1'), null, 'too old');

  kept.keep(docOf('pi_1'), 'T1');
  kept.keep(docOf('pi_2'), 'T2');
  kept.keep(docOf('pi_3'), 'T3');
  t.is(kept.take(scopeA, 'pi_1', 'T1'), null, 'the oldest dropped past max');
  t.is(kept.take(scopeA, 'pi_3', 'T3')?._id, 'pi_3');
  kept.clear();
  t.is(kept.take(scopeA, 'pi_2', 'T2'), null, 'cleared');
});

/** An intent stored as a create leaves it, and two workers' transition dependencies (the first keeps intents). */
async function world(atomicConditionalUpdates: boolean) {
  const ids = new IdGenerator(Date.now);
  const scope = { project: uniqueName('kept-docs'), livemode: false };
  const id = ids.next('payment_intent');
  const intents = stack.mongo.collections.paymentIntents;
  const now = Math.floor(Date.now() / 1000);
  await intents.insertOne({
    _id: id, ...scope, amount: 500, currency: 'xof', description: null, status: 'new', client_secret: `${id}_secret_test`,
    automatic_operator: true, allowed_operators: ['wave'], selected_operator: null, metadata: [], created: now, expires_at: now + 3600,
  } as PaymentIntentDoc);
  let meanwhile: (() => Promise<unknown>) | null = null;
  const writes: Gate = {
    async run(work) {
      const once = meanwhile;
      meanwhile = null;
      if (once) await once();
      return work();
    },
  };
  const base = {
    collections: stack.mongo.collections, inserts: new InsertBatcher({ maxDocs: 16, waitMs: 2 }), redis: stack.redis, prefix: stack.config.queuePrefix,
    eventsQueue, intentsQueue, ids, now: Date.now, updates: new FencedUpdates({ maxDocs: 16, gate: writes, statementBoundMs: STORE_PROFILES.ferretdb.updateStatementBoundMs }), atomicConditionalUpdates,
  };
  const kept = new KeptIntents({ redis: stack.redis, prefix: stack.config.queuePrefix, maxEntries: 100, maxAgeMs: 30_000, now: Date.now });
  const keeper: TransitionDeps = { ...base, kept };
  const other: TransitionDeps = { ...base };
  const reads: number[] = [];
  const describe = (deps: TransitionDeps, description: string) => {
    const mutation: Mutation = { ...scope, target: id, id: `req_${description}`, requestId: `req_${description}`, baseUrl: 'http://api.test' };
    return transition(deps, mutation, (doc) => {
      reads.push(doc.rev ?? 0);
      return decideUpdate(doc, { description });
    });
  };
  return {
    kept,
    reads,
    describe,
    keeper,
    other,
    setMeanwhile: (work: () => Promise<unknown>) => {
      meanwhile = work;
    },
    stored: async () => (await intents.findOne({ _id: id }))!,
    bumpRev: () => intents.updateOne({ _id: id }, { $set: { rev: 99 } }),
  };
}

for (const atomic of [false, true]) {
  const store = atomic ? 'with atomic conditional updates' : 'with updates by `_id` alone';
  test(`${store}: the next change reads its own write from memory, another worker's from MongoDB, and no history entry is lost`, async (t) => {
    const w = await world(atomic);
    t.is((await w.describe(w.keeper, 'one')).kind, 'applied');
    t.is((await w.describe(w.keeper, 'two')).kind, 'applied');
    t.deepEqual([w.kept.hits, w.kept.misses], [1, 1], 'the second change found the first one kept');
    t.is((await w.describe(w.other, 'three')).kind, 'applied', 'another worker changes the intent');
    t.is((await w.describe(w.keeper, 'four')).kind, 'applied');
    t.deepEqual([w.kept.hits, w.kept.misses], [1, 2], "the other worker's write moved the token: read again");
    t.deepEqual(w.reads, [0, 1, 2, 3], 'each change decided on the intent as the one before left it');
    const stored = await w.stored();
    t.is(stored.description, 'four');
    t.is(stored.rev, 4);
    t.deepEqual(stored.history?.map((entry) => entry.m), ['req_one', 'req_two', 'req_three', 'req_four']);
  });
}

test('with atomic conditional updates, a change that lost its race after deciding on a kept intent reads MongoDB again', async (t) => {
  const w = await world(true);
  t.is((await w.describe(w.keeper, 'one')).kind, 'applied');
  // Written between the decision and the update, without the lock (only a conditional update sees it).
  w.setMeanwhile(w.bumpRev);
  t.is((await w.describe(w.keeper, 'two')).kind, 'applied');
  t.deepEqual(w.reads, [0, 1, 99], 'decided on the kept intent, then again on the stored one');
  t.is(w.kept.hits, 1);
  const stored = await w.stored();
  t.like(stored, { description: 'two', rev: 100 });
  t.deepEqual(stored.history?.map((entry) => entry.m), ['req_one', 'req_two']);
});
