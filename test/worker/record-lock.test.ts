/**
 * The record lock (worker/record-lock.ts) against a real Redis and FerretDB: racing
 * writers of one document take turns, so neither's fields are lost, though FerretDB
 * replaces the whole document it read on every update.
 */
import test from 'ava';
import { MongoClient } from 'mongodb';
import { Redis } from 'ioredis';
import { withRecordLock } from '../../worker/record-lock.js';
import { stackUrls, uniqueName } from '../helpers/service.js';

interface Doc {
  _id: string;
  url: string;
  failing_since: number | null;
}

let client: MongoClient;
let redis: Redis;
const dbName = uniqueName('lock');

test.before(async () => {
  client = new MongoClient(stackUrls().mongoUrl);
  await client.connect();
  redis = new Redis(stackUrls().redisUrl);
});

test.after.always(async () => {
  await client.db(dbName).dropDatabase().catch(() => undefined);
  await client.close();
  redis.disconnect();
});

const ROUNDS = 30;

/**
 * Each round, two writers at once: one sets the url (a merchant's update), the other
 * the start of a failure run (a delivery), each on a field of its own.
 */
async function race(locked: boolean): Promise<{ lostUrls: number; lostFailures: number }> {
  const collection = client.db(dbName).collection<Doc>(uniqueName('endpoints'));
  const ids = Array.from({ length: ROUNDS }, (_, i) => `we_${i}`);
  await collection.insertMany(ids.map((_id) => ({ _id, url: 'https://a.example/', failing_since: null })));
  const guarded = (id: string, write: () => Promise<unknown>) => (locked ? withRecordLock(redis, `${dbName}:lock:${id}`, write) : write());
  for (const id of ids) {
    await Promise.all([
      guarded(id, () => collection.updateOne({ _id: id }, { $set: { url: 'https://b.example/' } })),
      guarded(id, () => collection.updateOne({ _id: id, failing_since: null }, { $set: { failing_since: 1 } })),
    ]);
  }
  const docs = await collection.find({}).toArray();
  return {
    lostUrls: docs.filter((d) => d.url !== 'https://b.example/').length,
    lostFailures: docs.filter((d) => d.failing_since !== 1).length,
  };
}

test.serial('racing updates of different fields of one document: under the lock, neither is ever lost', async (t) => {
  const unlocked = await race(false);
  // What the lock is for; how often FerretDB loses one depends on timing, so it is shown, not asserted.
  t.log(`without the lock, of ${ROUNDS} races: ${unlocked.lostUrls} urls and ${unlocked.lostFailures} failure runs lost`);
  t.deepEqual(await race(true), { lostUrls: 0, lostFailures: 0 });
});

test.serial('a holder keeps others out until it releases; a dead holder\'s lock expires by itself', async (t) => {
  const key = uniqueName('held');
  const order: string[] = [];
  let release: () => void = () => undefined;
  const first = withRecordLock(redis, key, async () => {
    order.push('first in');
    await new Promise<void>((resolve) => (release = resolve));
    order.push('first out');
  });
  await new Promise((resolve) => setTimeout(resolve, 50));
  const second = withRecordLock(redis, key, async () => void order.push('second in'));
  await new Promise((resolve) => setTimeout(resolve, 200));
  t.deepEqual(order, ['first in'], 'the second waits while the first holds it');
  release();
  await Promise.all([first, second]);
  t.deepEqual(order, ['first in', 'first out', 'second in']);

  // A holder that never releases (its process died): the lock lapses after ttlMs.
  await redis.set(key, 'a dead worker\'s token', 'PX', 300);
  const startedMs = Date.now();
  await withRecordLock(redis, key, async () => undefined, { ttlMs: 1000, waitMs: 5000 });
  t.true(Date.now() - startedMs >= 200, 'taken only once the dead holder\'s lock expired');
});
