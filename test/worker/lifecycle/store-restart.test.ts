/**
 * A store that crashes during a transition (the chaos run's FerretDB SIGKILL and
 * restart on the same data): the update may have been applied or not, and its
 * answer is lost either way. The transition retries it, and a job retried whole
 * finds its own history entry: exactly one transition is recorded, with one history
 * entry and one event, wherever the crash fell.
 */
import test from 'ava';
import type { PaymentIntentDoc } from '../../../common/documents.js';
import { IdGenerator } from '../../../common/ids.js';
import { openQueue, QUEUES, type TypedQueue } from '../../../common/jobs.js';
import { decideCancel } from '../../../worker/lifecycle/decide.js';
import { transition, type Mutation, type TransitionDeps } from '../../../worker/lifecycle/transition.js';
import type { Gate } from '../../../worker/write-gate.js';
import { InsertBatcher } from '../../../worker/group-commit.js';
import { FencedUpdates } from '../../../worker/fenced-updates.js';
import { STORE_PROFILES } from '../../../common/store-profile.js';
import { startFerretDBServer, type FerretDBServer } from '../../helpers/ferretdb-server.js';
import { openStack, type Stack } from '../../helpers/in-process.js';
import { sleep, uniqueName } from '../../helpers/service.js';

let ferret: FerretDBServer;
let stack: Stack;
let eventsQueue: TypedQueue<'events'>;
let intentsQueue: TypedQueue<'intents'>;

test.before(async () => {
  ferret = await startFerretDBServer();
  stack = await openStack({ MONGODB_URL: ferret.url });
  eventsQueue = openQueue(QUEUES.events, { connection: stack.redis, prefix: stack.config.queuePrefix });
  intentsQueue = openQueue(QUEUES.intents, { connection: stack.redis, prefix: stack.config.queuePrefix });
});

test.after.always(async () => {
  await eventsQueue?.close();
  await intentsQueue?.close();
  await stack?.close();
  await ferret?.dispose();
});

/** A new intent, and a cancel of it whose first update is sent `crashAfterMs` before the store is SIGKILLed. */
async function cancelDuringCrash(crashAfterMs: number) {
  const ids = new IdGenerator(Date.now);
  const scope = { project: uniqueName('store-restart'), livemode: false };
  const id = ids.next('payment_intent');
  const now = Math.floor(Date.now() / 1000);
  const doc: PaymentIntentDoc = {
    _id: id,
    ...scope,
    amount: 500,
    currency: 'xof',
    description: null,
    status: 'new',
    client_secret: `${id}_secret_test`,
    automatic_operator: true,
    allowed_operators: ['mtn_momo'],
    selected_operator: null,
    metadata: [],
    created: now,
    expires_at: now + 3600,
  };
  await stack.mongo.collections.paymentIntents.insertOne(doc);
  let crashed: Promise<void> | null = null;
  const writes: Gate = {
    async run(work) {
      const update = work();
      crashed ??= sleep(crashAfterMs).then(() => ferret.crash(1000));
      return update;
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
    now: Date.now,
    updates: new FencedUpdates({ maxDocs: 16, gate: writes, statementBoundMs: STORE_PROFILES.ferretdb.updateStatementBoundMs }),
    atomicConditionalUpdates: false,
  };
  const mutation: Mutation = { ...scope, target: id, id: `req_${id}`, requestId: `req_${id}`, baseUrl: 'http://api.test' };
  // As BullMQ would: a job that failed on the fault is run again, whole.
  let runs = 0;
  for (;;) {
    runs++;
    try {
      const result = await transition(deps, mutation, (read) => decideCancel(read, { cancellation_reason: 'abandoned' }, Math.floor(Date.now() / 1000)));
      if (result.kind !== 'applied') throw new Error(`not applied: ${result.kind}`);
      break;
    } catch (err) {
      if (runs >= 10 || (err as Error).message.startsWith('not applied')) throw err;
      await sleep(500);
    }
  }
  await crashed;
  const stored = (await stack.mongo.collections.paymentIntents.findOne({ _id: id }))!;
  // The created event, recorded before the intent's first change, apart from the transition's.
  const all = await stack.mongo.collections.events.find({ object_id: id }).toArray();
  const events = all.filter((e) => e.type !== 'payment_intent.created');
  const created = all.filter((e) => e.type === 'payment_intent.created');
  return { runs, stored, mine: (stored.history ?? []).filter((entry) => entry.m === mutation.id), events, created };
}

for (const crashAfterMs of [0, 5, 20]) {
  test.serial(`a store SIGKILLed ${crashAfterMs} ms into a transition's update, back 1 s later: one transition, one history entry, one event`, async (t) => {
    const { runs, stored, mine, events, created } = await cancelDuringCrash(crashAfterMs);
    t.log(`the transition ran ${runs} time(s)`);
    t.like(stored, { status: 'canceled', rev: 1 });
    t.is(stored.history?.length, 1, 'one history entry');
    t.is(mine.length, 1, "the entry is the cancel's");
    t.deepEqual(events.map((e) => e.type), ['payment_intent.canceled'], 'one event');
    t.deepEqual(events.map((e) => e._id), mine.map((entry) => entry.evt?.id), 'the event of that entry');
    t.is(created.length, 1, 'and the created event, recorded once before the change');
  });
}
