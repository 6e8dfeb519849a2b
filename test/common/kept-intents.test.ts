// The intents an api keeps for its retrieves (common/kept-intents.ts, `get`), against the test
// stack's real Redis and MongoDB: a kept intent is answered only while its token is
// the one it was read under, and every write replaces the token (common/intent-tokens.ts).

import test from 'ava';
import { Redis } from 'ioredis';
import type { PaymentIntentDoc } from '../../common/documents.js';
import { intentTokenKey, intentTokenReplacement } from '../../common/intent-tokens.js';
import { INTENT_LOCK, intentLockKey, RecordLock } from '../../worker/record-lock.js';
import { KEPT_FOR_RETRIEVES, KeptIntents } from '../../common/kept-intents.js';
import { IdGenerator } from '../../common/ids.js';
import { openStack, type Stack } from '../helpers/in-process.js';
import { uniqueName } from '../helpers/service.js';

let stack: Stack;
const ids = new IdGenerator(Date.now);

test.before(async () => {
  stack = await openStack();
});

test.after.always(async () => {
  await stack?.close();
});

async function storedIntent(scope: { project: string; livemode: boolean }): Promise<PaymentIntentDoc> {
  const id = ids.next('payment_intent');
  const doc = {
    _id: id, ...scope, amount: 2500, currency: 'xof', description: null, status: 'new', client_secret: `${id}_secret_x`, automatic_operator: true,
    allowed_operators: ['mtn_momo'], selected_operator: null, metadata: [], created: 1, expires_at: 2,
  } as PaymentIntentDoc;
  await stack.mongo.collections.paymentIntents.insertOne(doc);
  return doc;
}

const readOf = (id: string) => async () => (await stack.mongo.collections.paymentIntents.findOne({ _id: id })) as PaymentIntentDoc;
const setStatus = (id: string, status: string) => stack.mongo.collections.paymentIntents.updateOne({ _id: id }, { $set: { status: status as PaymentIntentDoc['status'] } });

test('a kept intent answers until its token is replaced; a write between two replacements is seen by every api at once', async (t) => {
  const scope = { project: uniqueName('kept'), livemode: false };
  const doc = await storedIntent(scope);
  const prefix = stack.config.queuePrefix;
  const [api1, api2] = [new KeptIntents({ redis: stack.redis, prefix, now: Date.now, ...KEPT_FOR_RETRIEVES }), new KeptIntents({ redis: stack.redis, prefix, now: Date.now, ...KEPT_FOR_RETRIEVES })];

  t.is((await api1.get(scope, doc._id, readOf(doc._id))).status, 'new');
  t.truthy(await stack.redis.get(intentTokenKey(prefix, doc._id)), 'a first reader sets the token');
  t.is((await api2.get(scope, doc._id, readOf(doc._id))).status, 'new');
  // A write that does not replace the token is not seen: the kept intent answers (this is what the replacements are for).
  await setStatus(doc._id, 'processing');
  t.is((await api1.get(scope, doc._id, readOf(doc._id))).status, 'new');
  t.is(api1.misses, 1);

  // As the worker writes (worker/lifecycle/transition.ts): the token replaced by the
  // fence right before the write and by the lock's release after it.
  const lock = new RecordLock(stack.redis, intentLockKey(prefix, doc._id), INTENT_LOCK);
  await lock.acquire();
  await lock.fenced(() => setStatus(doc._id, 'succeeded'), intentTokenReplacement(prefix, doc._id));
  t.is((await api1.get(scope, doc._id, readOf(doc._id))).status, 'succeeded', 'dropped by the replacement before the write');
  await lock.release(intentTokenReplacement(prefix, doc._id));
  t.is((await api1.get(scope, doc._id, readOf(doc._id))).status, 'succeeded');
  t.is((await api2.get(scope, doc._id, readOf(doc._id))).status, 'succeeded');
  t.is((await api2.get(scope, doc._id, readOf(doc._id))).status, 'succeeded');
  t.deepEqual([api1.misses, api2.misses], [3, 2], 'api1 read again after each replacement, api2 after the last');
});

test('kept by scope, for a bounded time, dropped with the Redis connection, and not kept at all without Redis', async (t) => {
  const scope = { project: uniqueName('kept'), livemode: false };
  const doc = await storedIntent(scope);
  const prefix = stack.config.queuePrefix;
  let now = 1_000_000;
  const kept = new KeptIntents({ redis: stack.redis, prefix, now: () => now, ...KEPT_FOR_RETRIEVES, maxAgeMs: 60_000 });
  await kept.get(scope, doc._id, readOf(doc._id));

  // Another scope (the live key of the project) does not find it here: it is read (and answered 404 by the route).
  let asked = 0;
  await t.throwsAsync(kept.get({ ...scope, livemode: true }, doc._id, async () => {
    asked++;
    throw new Error('resource_missing');
  }));
  t.is(asked, 1);

  await setStatus(doc._id, 'processing');
  now += 59_000;
  t.is((await kept.get(scope, doc._id, readOf(doc._id))).status, 'new');
  now += 2_000;
  t.is((await kept.get(scope, doc._id, readOf(doc._id))).status, 'processing', 'read again past its age');

  await setStatus(doc._id, 'succeeded');
  kept.clear();
  t.is((await kept.get(scope, doc._id, readOf(doc._id))).status, 'succeeded', 'read again once the connection closed');

  // Redis unreachable: every retrieve reads MongoDB, and nothing is kept.
  const away = new Redis({ port: 1, lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy: () => null });
  away.on('error', () => undefined);
  t.teardown(() => away.disconnect());
  const without = new KeptIntents({ redis: away, prefix, now: Date.now, ...KEPT_FOR_RETRIEVES });
  t.is((await without.get(scope, doc._id, readOf(doc._id))).status, 'succeeded');
  await setStatus(doc._id, 'canceled');
  t.is((await without.get(scope, doc._id, readOf(doc._id))).status, 'canceled');
  t.is(without.size, 0);
});

test('a read of an id that names no intent in the scope leaves no token behind', async (t) => {
  const scope = { project: uniqueName('kept'), livemode: false };
  const prefix = stack.config.queuePrefix;
  const api = new KeptIntents({ redis: stack.redis, prefix, now: Date.now, ...KEPT_FOR_RETRIEVES });
  const missing = () => async (): Promise<PaymentIntentDoc> => {
    throw new Error('404');
  };
  const unknown = ids.next('payment_intent');
  await t.throwsAsync(() => api.get(scope, unknown, missing()), { message: '404' });
  t.is(await stack.redis.exists(intentTokenKey(prefix, unknown)), 0, 'a well-formed id of no intent');
  for (const junk of ['+2250700000123', 'pi_short', 'x'.repeat(300)]) {
    await t.throwsAsync(() => api.get(scope, junk, missing()), { message: '404' });
    t.is(await stack.redis.exists(intentTokenKey(prefix, junk)), 0, junk.slice(0, 20));
  }
  // Another scope's intent: its own token, set by its own reader, stays.
  const other = await storedIntent({ project: uniqueName('kept'), livemode: false });
  await api.get({ project: other.project, livemode: false }, other._id, readOf(other._id));
  const token = await stack.redis.get(intentTokenKey(prefix, other._id));
  t.truthy(token);
  await t.throwsAsync(() => api.get(scope, other._id, missing()), { message: '404' });
  t.is(await stack.redis.get(intentTokenKey(prefix, other._id)), token, 'a token this reader did not make is left');
});
