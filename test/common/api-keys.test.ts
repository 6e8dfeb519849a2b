// The api's key cache against the real MongoDB of the test stack: a revocation
// racing a lookup is never cached as valid, and unknown keys are remembered briefly.
// The collection is the real one; the wrapper only counts its reads and can hold
// one back, to line the race up.

import test from 'ava';
import { MongoClient } from 'mongodb';
import { ApiKeyCache, hashKey, issueKey, revokeKey } from '../../common/api-keys.js';
import { IdGenerator } from '../../common/ids.js';
import { collections, type Collections } from '../../common/mongo.js';
import { stackUrls, uniqueName } from '../helpers/service.js';

let client: MongoClient;
let real: Collections;
const dbName = uniqueName('keys');

test.before(async () => {
  client = new MongoClient(stackUrls().mongoUrl);
  await client.connect();
  real = collections(client.db(dbName));
});

test.after.always(async () => {
  await client?.db(dbName).dropDatabase().catch(() => undefined);
  await client?.close();
});

/** The real collections, with `apiKeys.findOne` counted and, while `hold` is set, held back after reading. */
function observed() {
  const state = { queries: 0, read: 0, hold: null as Promise<void> | null };
  const apiKeys = new Proxy(real.apiKeys, {
    get(target, prop, receiver) {
      if (prop !== 'findOne') return Reflect.get(target, prop, receiver);
      return async (...args: Parameters<typeof target.findOne>) => {
        state.queries++;
        const doc = await target.findOne(...args);
        state.read++;
        if (state.hold) await state.hold;
        return doc;
      };
    },
  });
  return { state, c: { ...real, apiKeys } as Collections };
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

test('a key revoked while a lookup of it is in flight is not cached as valid', async (t) => {
  let clock = 1_000_000;
  const now = () => clock;
  const deps = { collections: real, ids: new IdGenerator(Date.now), now };
  const { doc, secret } = await issueKey(deps, uniqueName('race'), false);
  const { state, c } = observed();
  const cache = new ApiKeyCache(c, 30_000, now, 5_000);

  let release!: () => void;
  state.hold = new Promise<void>((resolve) => (release = resolve));
  const inFlight = cache.lookup(secret);
  while (state.read === 0) await sleep(5); // MongoDB has answered: the key was active
  await revokeKey(deps, null, 'p', doc._id);
  cache.evict(doc.hash); // as the revocation, pushed over Redis, does in every api process
  release();
  state.hold = null;
  t.truthy(await inFlight, 'the request that raced the revocation saw the key as it was read');

  clock += 1;
  t.is(await cache.lookup(secret), null, 'the next request is refused');
  t.is(state.queries, 2, 'because nothing was cached from the racing read');
});

test('a repeated unknown key costs one MongoDB query until the negative entry expires', async (t) => {
  let clock = 1_000_000;
  const { state, c } = observed();
  const cache = new ApiKeyCache(c, 30_000, () => clock, 5_000);
  const garbage = `sk_test_${'x'.repeat(40)}`;
  for (let i = 0; i < 50; i++) t.is(await cache.lookup(garbage), null);
  t.is(state.queries, 1);
  clock += 5_001;
  t.is(await cache.lookup(garbage), null);
  t.is(state.queries, 2);
});

test('a revoked key is remembered as unknown, and an eviction of a known key forces a new read', async (t) => {
  const clock = 1_000_000;
  const now = () => clock;
  const deps = { collections: real, ids: new IdGenerator(Date.now), now };
  const { doc, secret } = await issueKey(deps, uniqueName('evict'), false);
  const { state, c } = observed();
  const cache = new ApiKeyCache(c, 30_000, now, 5_000);
  t.truthy(await cache.lookup(secret));
  t.truthy(await cache.lookup(secret));
  t.is(state.queries, 1);
  await revokeKey(deps, null, 'p', doc._id);
  cache.evict(doc.hash);
  t.is(await cache.lookup(secret), null);
  t.is(await cache.lookup(secret), null);
  t.is(state.queries, 2);
  t.is(hashKey(secret), doc.hash);
});

test('lookups of one key at once share one read, but none made after an eviction joins a read from before it', async (t) => {
  const clock = 1_000_000;
  const now = () => clock;
  const deps = { collections: real, ids: new IdGenerator(Date.now), now };
  const { doc, secret } = await issueKey(deps, uniqueName('burst'), false);
  const { state, c } = observed();
  const cache = new ApiKeyCache(c, 30_000, now, 5_000);

  let release!: () => void;
  state.hold = new Promise<void>((resolve) => (release = resolve));
  const burst = Array.from({ length: 32 }, () => cache.lookup(secret));
  while (state.read === 0) await sleep(5);
  await revokeKey(deps, null, 'p', doc._id);
  cache.evict(doc.hash);
  const afterRevocation = cache.lookup(secret);
  release();
  state.hold = null;
  for (const found of await Promise.all(burst)) t.is(found?._id, doc._id, 'the burst saw the key as it was read');
  t.is(await afterRevocation, null, 'the lookup after the revocation read again, and was refused');
  t.is(state.queries, 2, 'one read for the 32 lookups of the burst, one after the eviction');
});
