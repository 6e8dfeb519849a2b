/**
 * The create loop of worker/processors/create.ts (exactly one object per job and per
 * idempotency key), driven through the payment intent processor against real
 * FerretDB and Redis, with an injected clock per test. Each test has a project of
 * its own, so they run side by side.
 */
import { randomBytes } from 'node:crypto';
import test from 'ava';
import type { Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { decodeEntry, idempotentJobId, redisKey, requestFingerprint, scopeHash } from '../../../common/idempotency.js';
import { errors } from '../../../common/errors.js';
import { IdGenerator } from '../../../common/ids.js';
import { openQueue, QUEUES, resultsChannel, type WriteJobResult, type CreatePaymentIntentData, type WriteResultMessage, type DispatchEventData, type Scope, type TypedQueue } from '../../../common/jobs.js';
import { createdEventId, dispatchJobId, PAYMENT_INTENT_CREATED } from '../../../common/events.js';
import { markScopeHooked } from '../../../worker/webhooks/subscriptions.js';
import { createRedis } from '../../../common/redis.js';
import { collections as collectionsOf, type Collections } from '../../../common/mongo.js';
import { MongoClient, type CommandStartedEvent } from 'mongodb';
import { InsertBatcher } from '../../../worker/group-commit.js';
import { createPaymentIntent } from '../../../worker/processors/create-payment-intent.js';
import { FakeClock, openStack, type Stack } from '../../helpers/in-process.js';
import { uniqueName, until } from '../../helpers/service.js';

/** The worker keeps the fingerprint the api made; any key makes one. */
const FINGERPRINT_KEY = randomBytes(32);

const PI = '/v1/payment_intents';

let stack: Stack;
let subscriber: Redis;
let eventsQueue: TypedQueue<'events'>;
let intentsQueue: TypedQueue<'intents'>;
const published = new Map<string, WriteResultMessage[]>();

test.before(async () => {
  stack = await openStack();
  subscriber = createRedis(stack.config.redisUrl, 'patient', 'test-results');
  subscriber.on('message', (_channel: string, raw: string) => {
    const message = JSON.parse(raw) as WriteResultMessage;
    published.set(message.jobId, [...(published.get(message.jobId) ?? []), message]);
  });
  await subscriber.subscribe(resultsChannel(stack.config.queuePrefix));
  eventsQueue = openQueue(QUEUES.events, { connection: stack.redis, prefix: stack.config.queuePrefix });
  intentsQueue = openQueue(QUEUES.intents, { connection: stack.redis, prefix: stack.config.queuePrefix });
});

test.after.always(async () => {
  await eventsQueue?.close();
  await intentsQueue?.close();
  await subscriber?.quit();
  await stack?.close();
});

/** One test's world: its scope, its clock, and jobs as the api would enqueue them. */
function world(options: { fanOut?: (event: DispatchEventData) => Promise<unknown>; collections?: Collections } = {}) {
  const scope: Scope = { project: uniqueName('create'), livemode: false };
  const clock = new FakeClock();
  const ids = new IdGenerator(clock.now);
  // The first insert of each job goes through group commit, as in the worker.
  const inserts = new InsertBatcher({ maxDocs: 16, waitMs: 2 });
  const deps = {
    collections: options.collections ?? stack.mongo.collections, redis: stack.redis, prefix: stack.config.queuePrefix, now: clock.now, eventsQueue, intentsQueue, inserts,
    fanOut: options.fanOut,
  };
  return {
    scope,
    clock,
    /** A create job; with an idempotency key, its job id comes from the key, as the api makes it. */
    job(options: { key?: string; amount?: number } = {}): Job<CreatePaymentIntentData> {
      const id = ids.next('payment_intent');
      const amount = options.amount ?? 100;
      const idempotency = options.key === undefined
        ? null
        : {
            scopeHash: scopeHash(scope, options.key),
            key: options.key,
            fingerprint: requestFingerprint(FINGERPRINT_KEY, 'POST', PI, { amount }),
            expiresAt: clock.now() + stack.config.idempotencyTtlMs,
          };
      const data: CreatePaymentIntentData = {
        ...scope,
        id,
        created: Math.floor(clock.now() / 1000),
        requestId: `req_${id}`,
        baseUrl: 'http://api.test',
        idempotency,
        input: {
          amount, currency: 'usd', description: null, metadata: [], allowed_operators: ['wave'], selected_operator: null,
          automatic_operator: true, expires_at: Math.floor(clock.now() / 1000) + 86_400,
        },
      };
      return { id: idempotency ? idempotentJobId(idempotency.scopeHash) : id, data } as Job<CreatePaymentIntentData>;
    },
    run: (job: Job<CreatePaymentIntentData>): Promise<WriteJobResult> => createPaymentIntent(deps, job),
    stored: () => stack.mongo.collections.paymentIntents.find({ project: scope.project }).sort({ _id: 1 }).toArray(),
  };
}

/**
 * The nth answer published under a job id (what the waiting api request sends). Jobs
 * for one key share their job id, as the api makes them.
 */
function answer(job: Job, n = 1): Promise<WriteResultMessage> {
  return until(`answer ${n} of ${job.id}`, () => published.get(String(job.id))?.[n - 1], 5000);
}

test('a keyed job inserts its object with the key, caches the answer for the key, and publishes it', async (t) => {
  const w = world();
  const job = w.job({ key: 'first' });
  t.deepEqual(await w.run(job), { ok: true, id: job.data.id, status: 200 });
  const [doc] = await w.stored();
  t.like(doc, {
    _id: job.data.id,
    idem: job.data.idempotency?.scopeHash,
    idem_fp: job.data.idempotency?.fingerprint,
    idem_expires_at: job.data.idempotency?.expiresAt,
  });
  const sent = await answer(job);
  t.is(sent.status, 200);
  t.is(JSON.parse(sent.body).id, job.data.id);
  const cacheKey = redisKey(stack.config.queuePrefix, job.data.idempotency!.scopeHash);
  t.like(decodeEntry(await stack.redis.get(cacheKey)), { s: 'done', status: 200, id: job.data.id, exp: job.data.idempotency?.expiresAt });
  const ttl = await stack.redis.pttl(cacheKey);
  t.true(ttl > 0 && ttl <= stack.config.idempotencyTtlMs, `cached until the key expires by the injected clock (${ttl} ms)`);
});

for (const keyed of [true, false]) {
  test(`a retried ${keyed ? 'keyed' : 'unkeyed'} job (same id) answers with the stored object, not a second one`, async (t) => {
    const w = world();
    const job = w.job(keyed ? { key: 'retried' } : {});
    const first = await w.run(job);
    const again = await w.run(job);
    t.deepEqual(again, first);
    t.is((await answer(job, 2)).body, (await answer(job, 1)).body, 'the same bytes, client secret included');
    t.is((await w.stored()).length, 1);
  });
}

test('a second job with the same key and the same request answers with the object the key created', async (t) => {
  const w = world();
  const first = w.job({ key: 'same', amount: 200 });
  const second = w.job({ key: 'same', amount: 200 });
  t.not(second.data.id, first.data.id, 'the second request got an id of its own');
  await w.run(first);
  t.deepEqual(await w.run(second), { ok: true, id: first.data.id, status: 200 });
  t.is(second.id, first.id);
  t.is((await answer(second, 2)).body, (await answer(first, 1)).body);
  t.deepEqual((await w.stored()).map((doc) => doc._id), [first.data.id]);
});

test('a keyed create points its key at its object, and a second job of the key finds the object through it, by `_id` alone', async (t) => {
  // The processor's commands, seen by a client of its own.
  const client = new MongoClient(stack.config.mongodbUrl, { monitorCommands: true });
  const finds: Array<Record<string, unknown>> = [];
  client.on('commandStarted', (event: CommandStartedEvent) => {
    if (event.commandName === 'find') finds.push({ collection: event.command.find, ...(event.command.filter as object) });
  });
  t.teardown(() => client.close());
  const w = world({ collections: collectionsOf(client.db(stack.config.mongodbDb)) });
  const first = w.job({ key: 'pointed', amount: 250 });
  const second = w.job({ key: 'pointed', amount: 250 });
  await w.run(first);
  const scopeHash = first.data.idempotency!.scopeHash;
  t.deepEqual(await stack.mongo.collections.idempotencyKeys.findOne({ _id: scopeHash }), {
    _id: scopeHash, object: first.data.id, expires_at: first.data.idempotency!.expiresAt,
  });
  finds.length = 0;
  t.deepEqual(await w.run(second), { ok: true, id: first.data.id, status: 200 });
  t.is((await answer(second, 2)).body, (await answer(first, 1)).body);
  t.true(finds.length > 0);
  t.deepEqual(finds.filter((f) => 'idem' in f), [], 'no look-up by key (a scan of every object on FerretDB)');
  t.true(finds.some((f) => f.collection === 'payment_intents' && f._id === first.data.id), 'the object read by the id the pointer gave');
});

test('a pointer that names another object is not trusted: the key is looked up, and the pointer moved to its object', async (t) => {
  const w = world();
  const first = w.job({ key: 'stale', amount: 260 });
  const second = w.job({ key: 'stale', amount: 260 });
  await w.run(first);
  const scopeHash = first.data.idempotency!.scopeHash;
  const other = w.job({ key: 'other', amount: 1 });
  await w.run(other);
  // As after a lost race, or a pointer left from a key freed since.
  await stack.mongo.collections.idempotencyKeys.updateOne({ _id: scopeHash }, { $set: { object: other.data.id } });
  t.deepEqual(await w.run(second), { ok: true, id: first.data.id, status: 200 });
  t.is((await stack.mongo.collections.idempotencyKeys.findOne({ _id: scopeHash }))?.object, first.data.id);
  await stack.mongo.collections.idempotencyKeys.deleteOne({ _id: scopeHash });
  const third = w.job({ key: 'stale', amount: 260 });
  t.deepEqual(await w.run(third), { ok: true, id: first.data.id, status: 200 }, 'and without a pointer');
  t.deepEqual((await w.stored()).map((doc) => doc._id).sort(), [first.data.id, other.data.id].sort());
});

test('a second job with the same key and another request is idempotency_key_reused, and stores nothing', async (t) => {
  const w = world();
  const first = w.job({ key: 'reused', amount: 300 });
  const other = w.job({ key: 'reused', amount: 301 });
  await w.run(first);
  t.deepEqual(await w.run(other), { ok: false, id: null, status: 400 });
  const sent = await answer(other, 2);
  t.is(sent.status, 400);
  t.like(JSON.parse(sent.body).error, {
    type: 'idempotency_error',
    code: 'idempotency_key_reused',
    message: errors.idempotencyKeyReused().message,
    request_id: other.data.requestId,
  });
  t.deepEqual((await w.stored()).map((doc) => doc._id), [first.data.id]);
  const cached = decodeEntry(await stack.redis.get(redisKey(stack.config.queuePrefix, first.data.idempotency!.scopeHash)));
  t.like(cached, { s: 'done', fp: first.data.idempotency?.fingerprint }, 'the key still answers the first request');
});

test('a holder whose key has expired by the clock is freed, and the new job inserts its own object', async (t) => {
  const w = world();
  const old = w.job({ key: 'expired', amount: 400 });
  await w.run(old);
  // Past the expiry, before the sweeper has freed the key.
  w.clock.advance(stack.config.idempotencyTtlMs + 1);
  const fresh = w.job({ key: 'expired', amount: 401 });
  t.deepEqual(await w.run(fresh), { ok: true, id: fresh.data.id, status: 200 });
  const [oldDoc, newDoc] = await w.stored();
  t.is(oldDoc?._id, old.data.id);
  t.is(oldDoc?.idem, undefined, 'the expired object gave up the key');
  t.like(newDoc, { _id: fresh.data.id, amount: 401, idem: fresh.data.idempotency?.scopeHash, idem_fp: fresh.data.idempotency?.fingerprint });
  t.is(JSON.parse((await answer(fresh, 2)).body).id, fresh.data.id);
  t.is((await stack.mongo.collections.idempotencyKeys.findOne({ _id: fresh.data.idempotency!.scopeHash }))?.object, fresh.data.id, 'the key points at its new object');
});

test('in a scope with an endpoint, the outbox entry is written before the answer and the fan-out runs after it, in the job', async (t) => {
  const seen: Array<{ event: DispatchEventData; entry: boolean; answered: boolean }> = [];
  const running: { job?: Job<CreatePaymentIntentData> } = {};
  const w = world({
    fanOut: async (event) => {
      const entry = (await stack.mongo.collections.outbox.findOne({ _id: event.eventId })) !== null;
      // Had the answer waited for the fan-out, it would not come while this waits.
      const answered = await answer(running.job!).then(() => true, () => false);
      seen.push({ event, entry, answered });
    },
  });
  await markScopeHooked(stack.redis, stack.config.queuePrefix, w.scope, [PAYMENT_INTENT_CREATED]);
  const job = w.job({ key: 'hooked' });
  running.job = job;
  await w.run(job);
  t.is(seen.length, 1);
  t.like(seen[0], { entry: true, answered: true });
  t.like(seen[0].event, { eventId: createdEventId(job.data.id), ...w.scope, type: PAYMENT_INTENT_CREATED });
  t.is(await eventsQueue.getJob(dispatchJobId(createdEventId(job.data.id))), undefined, 'no dispatch job when the fan-out ran');
});

test('a fan-out that fails leaves the event to a dispatch job; without a hooked scope there is neither', async (t) => {
  const w = world({ fanOut: () => Promise.reject(new Error('MongoDB away')) });
  await markScopeHooked(stack.redis, stack.config.queuePrefix, w.scope, [PAYMENT_INTENT_CREATED]);
  const job = w.job({ key: 'fallback' });
  t.like(await w.run(job), { ok: true, status: 200 });
  const dispatch = await eventsQueue.getJob(dispatchJobId(createdEventId(job.data.id)));
  t.like(dispatch?.data, { eventId: createdEventId(job.data.id), ...w.scope, type: PAYMENT_INTENT_CREATED });

  const quiet = world({ fanOut: () => Promise.reject(new Error('never called')) });
  const other = quiet.job({ key: 'no-endpoint' });
  await quiet.run(other);
  t.is(await stack.mongo.collections.outbox.findOne({ _id: createdEventId(other.data.id) }), null);
  t.is(await eventsQueue.getJob(dispatchJobId(createdEventId(other.data.id))), undefined);
});
