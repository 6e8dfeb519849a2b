/**
 * The record lock (worker/record-lock.ts) against a real Redis and FerretDB: racing
 * writers of one document take turns, so neither's fields are lost, though FerretDB
 * replaces the whole document it read on every update; the idempotency sweep takes
 * each object's lock too; a SIGKILLed holder's intent lock is taken over within its
 * 3 s ttl; a write fenced by a lost lock is never sent (the store's half of the
 * fence: ../ferretdb-busy.test.ts).
 */
import { spawn } from 'node:child_process';
import test from 'ava';
import { MongoClient } from 'mongodb';
import { Redis } from 'ioredis';
import type { PaymentIntentDoc } from '../../common/documents.js';
import { collections as collectionsOf } from '../../common/mongo.js';
import { sweepIdempotency } from '../../worker/processors/sweep-idempotency.js';
import { INTENT_LOCK, intentLockKey, RECORD_LOCK, RecordLock, withRecordLock } from '../../worker/record-lock.js';
import { sleep, stackUrls, uniqueName, until } from '../helpers/service.js';

/**
 * How long a waiter is watched to show that it does NOT get a lock that is held: it
 * polls every 10 to 40 ms (worker/record-lock.ts), so it would have taken a free lock
 * several times over.
 */
const STILL_WAITING_MS = 200;

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
  await until('the first to hold the lock', () => (order.includes('first in') ? true : undefined), 5000);
  const second = withRecordLock(redis, key, async () => void order.push('second in'));
  await sleep(STILL_WAITING_MS);
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

/** A process that takes the intent lock at `key`, says so, and holds it until it is killed. */
function holderProcess(key: string): Promise<{ kill: () => void }> {
  const lockModule = new URL('../../worker/record-lock.js', import.meta.url).href;
  const script = `
    const { Redis } = await import('ioredis');
    const { INTENT_LOCK, RecordLock } = await import(${JSON.stringify(lockModule)});
    const lock = new RecordLock(new Redis(process.env.REDIS_URL), process.env.LOCK_KEY, INTENT_LOCK);
    await lock.acquire();
    console.log('held');
    setInterval(() => undefined, 1000);
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
    env: { ...process.env, REDIS_URL: stackUrls().redisUrl, LOCK_KEY: key },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code) => reject(new Error(`the holder exited (${code}) before it held the lock`)));
    child.stdout.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('held')) resolve({ kill: () => child.kill('SIGKILL') });
    });
  });
}

test.serial('the intent lock of a SIGKILLed worker is taken over within its ttl (3 s), not the 10 s of other records', async (t) => {
  const key = intentLockKey(uniqueName('killed'), 'pi_1');
  const holder = await holderProcess(key);
  // Held past several ttls: the holder's heartbeat keeps it while the process lives.
  // Waiting past the ttl is the point of this sleep.
  await sleep(2 * INTENT_LOCK.ttlMs);
  t.truthy(await redis.get(key), 'a live holder keeps its lock past its ttl');
  holder.kill();
  const killedMs = Date.now();
  // Waited for as long as a record's ttl (a job's own wait, RECORD_LOCK_WAIT_MS, is shorter than the takeover).
  await withRecordLock(redis, key, async () => undefined, { ...INTENT_LOCK, waitMs: RECORD_LOCK.ttlMs });
  const waitedMs = Date.now() - killedMs;
  t.log(`taken over ${waitedMs} ms after the holder's death`);
  t.true(waitedMs < RECORD_LOCK.ttlMs, `taken over only after ${waitedMs} ms`);
});

test.serial('a write fenced by a lock another has taken over is not sent; one under a held lock is', async (t) => {
  const key = uniqueName('fenced');
  const lock = new RecordLock(redis, key, INTENT_LOCK);
  await lock.acquire();
  let sent = 0;
  t.is(await lock.fenced(async () => ++sent), 1);
  t.true((await redis.pttl(key)) > INTENT_LOCK.ttlMs - 500, 'renewed for a whole ttl right before the send');
  // The lock lapsed (the holder stalled, Redis lost it) and another worker took it.
  await redis.set(key, "another worker's token", 'PX', INTENT_LOCK.ttlMs);
  t.is(await lock.fenced(async () => ++sent), null);
  t.is(sent, 1, 'nothing sent under the other holder');
  await lock.release();
  t.is(await redis.get(key), "another worker's token", "the other holder's lock is left alone");
});

test.serial('a key set with the fence only while the lock is held, and with the release always, a failure thrown', async (t) => {
  const key = uniqueName('fenced-set');
  const token = `${key}:token`;
  const also = (value: string) => ({ key: token, value, px: 60_000 });
  const lock = new RecordLock(redis, key, INTENT_LOCK);
  await lock.acquire();
  t.is(await lock.fenced(async () => redis.get(token), also('before')), 'before', 'set in the fence, before the send');
  t.true((await redis.pttl(token)) > 59_000);
  await redis.set(key, "another worker's token", 'PX', INTENT_LOCK.ttlMs);
  t.is(await lock.fenced(async () => 'sent', also('lost')), null);
  t.is(await redis.get(token), 'before', 'a lost lock sets nothing');
  await lock.release(also('after'));
  t.is(await redis.get(token), 'after', "set by the release, though the lock was another's");
  t.is(await redis.get(key), "another worker's token");

  // With Redis gone, a release that must set throws; one alone never does.
  const gone = new Redis('redis://127.0.0.1:1', { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy: () => null });
  gone.on('error', () => undefined);
  const orphan = new RecordLock(gone, key, INTENT_LOCK);
  await orphan.release();
  await t.throwsAsync(orphan.release(also('never')));
  gone.disconnect();
  t.is(await redis.get(token), 'after');
});

test.serial("the idempotency sweep frees each expired key under its object's lock: a transition made meanwhile is kept", async (t) => {
  const prefix = uniqueName('sweep');
  const db = client.db(dbName);
  const collections = collectionsOf(db);
  const now = Date.now();
  const base = { project: prefix, livemode: false, status: 'requires_payment_method' };
  await collections.paymentIntents.insertMany([
    { ...base, _id: `${prefix}_expired`, idem: `${prefix}-k1`, idem_expires_at: now - 1000 },
    { ...base, _id: `${prefix}_busy`, idem: `${prefix}-k2`, idem_expires_at: now - 1000 },
    { ...base, _id: `${prefix}_fresh`, idem: `${prefix}-k3`, idem_expires_at: now + 60_000 },
  ] as unknown as PaymentIntentDoc[]);
  await collections.idempotencyKeys.insertMany([
    { _id: `${prefix}-k1`, object: `${prefix}_expired`, expires_at: now - 1000 },
    { _id: `${prefix}-k3`, object: `${prefix}_fresh`, expires_at: now + 60_000 },
  ]);
  // A transition of the busy intent holds its lock.
  const lockKey = intentLockKey(prefix, `${prefix}_busy`);
  await redis.set(lockKey, 'a transition', 'PX', 30_000);
  let swept = false;
  const sweep = sweepIdempotency({ collections, redis, prefix }, now).then((result) => {
    swept = true;
    return result;
  });
  await sleep(STILL_WAITING_MS);
  t.false(swept, 'the sweep waits for the busy intent');
  await collections.paymentIntents.updateOne({ _id: `${prefix}_busy` }, { $set: { status: 'succeeded' } });
  await redis.del(lockKey);
  const { freed } = await sweep;
  t.true(freed >= 2);
  const docs = new Map((await collections.paymentIntents.find({ project: prefix }).toArray()).map((d) => [d._id, d]));
  t.is(docs.get(`${prefix}_expired`)?.idem, undefined, 'an expired key is freed');
  t.is(docs.get(`${prefix}_busy`)?.idem, undefined);
  t.is(docs.get(`${prefix}_busy`)?.status, 'succeeded', 'the transition made under the lock is kept');
  t.is(docs.get(`${prefix}_fresh`)?.idem, `${prefix}-k3`, 'a live key stays');
  const pointers = await collections.idempotencyKeys.find({ _id: { $in: [`${prefix}-k1`, `${prefix}-k3`] } }).toArray();
  t.deepEqual(pointers.map((p) => p._id), [`${prefix}-k3`], 'an expired key\'s pointer goes, a live one stays');
});
