/**
 * One writer of a stored record at a time, across every worker process: a Redis
 * lock per record, held from its read to its update. Payment intents take it for
 * each transition (lifecycle/transition.ts); webhook endpoints for each change, the
 * merchant's (update, delete, rotation) and the deliveries' (a failure run starting
 * or ending, a disable).
 *
 * Why a lock, and what guards a record when the lock does not hold (it expired
 * while its holder stalled, Redis lost it), depends on the write and on the store
 * (common/store-profile.ts, docs/storage.md):
 *
 * - Transitions of a payment intent, on a store with `atomicConditionalUpdates`
 *   (MongoDB): the update is conditional on the intent's `rev`, and the filter and
 *   the write are one atomic step, so the condition alone decides a race. The lock
 *   only makes racing transitions take turns instead of losing and deciding again;
 *   the conditional update stays the guarantee wherever the lock does not hold.
 * - Transitions, on a store without them (the local stack's): such a store reads
 *   the matching document, then replaces the whole of it by `_id`; two updates sent
 *   at once both match, both are answered `matchedCount: 1`, and the last write
 *   wins. The update names `_id` alone there, and the lock is the only guard: a
 *   cancel racing an operator's answer could both apply (two events, one of them
 *   describing a state the intent never kept) if the lock did not hold.
 * - Webhook endpoints, on every store: the merchant's update merges metadata read
 *   from the document and writes it with an update by `_id` alone, so the lock is the
 *   only guard there too; on the local stack's store it also keeps a delivery noting
 *   a failure from putting back the url a merchant just changed.
 *
 * The lock expires by itself (`ttlMs`) unless its holder renews it: a live holder
 * renews it every third of that while it waits (the write gate, a slow database), so
 * only a worker that died (or lost Redis) lets it expire. How short it may be is
 * bounded by the store, not by Redis: a write a killed worker had sent is still
 * carried out by the store after the worker is gone, and must land before another
 * worker takes the lock over. So a write under the lock is `fenced`: the lock is
 * renewed for a whole `ttlMs` right before each send, and a holder that lost it
 * does not send. A write so sent lands under its lock whenever the store answers it
 * within `ttlMs`.
 *
 * - Payment intents (`INTENT_LOCK`, 3 s): every write under them is fenced, and the
 *   local stack's store waits at most a second for SQLite's lock before it fails a
 *   write (its busy timeout, set in scripts/lib/servers.mjs; FerretDB's own default,
 *   10 s, would outlast the lock). A store starved of CPU for seconds is the case
 *   left open (docs/storage.md). A killed worker's payments are taken
 *   over within 3 s (docs/decisions/0015-fenced-intent-writes.md).
 * - Everything else (`RECORD_LOCK`, 10 s): endpoints and refunds, whose writes are
 *   not fenced and are not on a payment's path.
 */
import type { Redis } from 'ioredis';
import type { Collection } from 'mongodb';
import { randomBase62 } from '../common/ids.js';
import { intentTokenReplacement } from '../common/intent-tokens.js';

export interface RecordLockOptions {
  /** How long the lock lives unless renewed. */
  ttlMs: number;
  /** How long to wait for it before giving up (the job is retried then). */
  waitMs: number;
}

/**
 * How long a job waits for a record's lock (`RECORD_LOCK_WAIT_MS`, DESIGN section
 * 20): never long, so no worker slot is held waiting. A request's job then answers
 * 409 `lock_timeout` (worker/routes.ts); a job of the lifecycle's own is retried
 * with backoff, its slot free meanwhile.
 */
export const DEFAULT_RECORD_LOCK_WAIT_MS = 2_000;

export const RECORD_LOCK: RecordLockOptions = { ttlMs: 10_000, waitMs: DEFAULT_RECORD_LOCK_WAIT_MS };

/** A payment intent's lock: every write under it is `fenced` (see above). */
export const INTENT_LOCK: RecordLockOptions = { ttlMs: 3_000, waitMs: DEFAULT_RECORD_LOCK_WAIT_MS };

/** Sets how long every record lock is waited for (the process's `RECORD_LOCK_WAIT_MS`), once at start-up. */
export function setRecordLockWait(waitMs: number): void {
  RECORD_LOCK.waitMs = waitMs;
  INTENT_LOCK.waitMs = waitMs;
}

/** The record stayed locked past the wait: another writer holds it. Not a fault of ours; a request answers 409. */
export class RecordLockTimeout extends Error {
  constructor(readonly key: string, waitMs: number) {
    super(`${key} stayed locked for ${waitMs} ms`);
    this.name = 'RecordLockTimeout';
  }
}

const ACQUIRE_AND_GET = `if redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2], 'NX') then return {1, redis.call('get', KEYS[2])} else return {0} end`;
// Renewals only ever extend: a fence that renewed for longer than the lock's ttl (a
// grouped update, ./fenced-updates.ts) is not cut short by the heartbeat after it.
const RENEW = `if redis.call('get', KEYS[1]) == ARGV[1] then
  if redis.call('pttl', KEYS[1]) < tonumber(ARGV[2]) then redis.call('pexpire', KEYS[1], ARGV[2]) end
  return 1
else return 0 end`;
const RELEASE = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`;
// The same, with a key set in the same round trip: by the renewal only while the lock
// is this holder's (nothing is sent otherwise), by the release whoever holds it.
const RENEW_AND_SET = `if redis.call('get', KEYS[1]) == ARGV[1] then
  redis.call('set', KEYS[2], ARGV[3], 'PX', ARGV[4])
  if redis.call('pttl', KEYS[1]) < tonumber(ARGV[2]) then redis.call('pexpire', KEYS[1], ARGV[2]) end
  return 1
else return 0 end`;
const RELEASE_AND_SET = `redis.call('set', KEYS[2], ARGV[2], 'PX', ARGV[3])
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`;

/**
 * A key set in the same round trip as a lock command, where a write's protocol sets
 * one right before the write or right after it (an intent's token,
 * common/intent-tokens.ts): one Redis command less per write, on the path every
 * payment takes three times.
 */
export interface AlsoSet {
  key: string;
  value: string;
  px: number;
}

export function intentLockKey(prefix: string, paymentIntent: string): string {
  return `${prefix}:intent-lock:${paymentIntent}`;
}

export function endpointLockKey(prefix: string, endpoint: string): string {
  return `${prefix}:endpoint-lock:${endpoint}`;
}

/**
 * The lock of a stored object by its collection's name: payment intents and webhook
 * endpoints, the objects that more than one kind of job writes.
 */
export function objectLockKey(prefix: string, collection: string, id: string): string {
  switch (collection) {
    case 'payment_intents':
      return intentLockKey(prefix, id);
    case 'webhook_endpoints':
      return endpointLockKey(prefix, id);
    default:
      return `${prefix}:${collection}-lock:${id}`;
  }
}

/**
 * Frees an expired idempotency key held by an object (removes its unique `idem`),
 * under the object's lock: on the local stack's store the update writes the whole
 * document back, and would undo a transition or an endpoint change made meanwhile
 * (docs/storage.md). The filter names `_id` alone (anything more may be a scan): a
 * key that has expired stays expired, and only this frees it. True when this call
 * freed it.
 */
export async function freeExpiredKey(
  redis: Redis,
  prefix: string,
  collection: Collection<{ _id: string }>,
  id: string,
): Promise<boolean> {
  const key = objectLockKey(prefix, collection.collectionName, id);
  const options = collection.collectionName === 'payment_intents' ? INTENT_LOCK : RECORD_LOCK;
  // An intent's token is replaced with the fence, as for every write of an intent (common/intent-tokens.ts).
  const also = collection.collectionName === 'payment_intents' ? intentTokenReplacement(prefix, id) : undefined;
  const updated = await withRecordLock(redis, key, (lock) => lock.fenced(() => collection.updateOne({ _id: id }, { $unset: { idem: '' } }), also), options);
  if (updated === null) throw new Error(`${key} was lost before its key could be freed`);
  return updated.modifiedCount > 0;
}

/** Runs `work` holding the lock at `key`; throws (a retryable fault) if it stays taken past `waitMs`. */
export async function withRecordLock<T>(
  redis: Redis,
  key: string,
  work: (lock: RecordLock) => Promise<T>,
  options: RecordLockOptions = RECORD_LOCK,
): Promise<T> {
  const lock = new RecordLock(redis, key, options);
  await lock.acquire();
  try {
    return await work(lock);
  } finally {
    await lock.release();
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export class RecordLock {
  private token = '';
  private heartbeat: NodeJS.Timeout | null = null;

  constructor(
    private readonly redis: Redis,
    private readonly key: string,
    private readonly options: RecordLockOptions = RECORD_LOCK,
  ) {}

  /**
   * Waits until this holder has the lock; throws after `waitMs` (an infrastructure
   * fault: the job is retried). With `read`, returns that key's value as it was the
   * moment the lock was taken (null when absent), read in the same round trip.
   */
  async acquire(read?: string): Promise<string | null> {
    // From the pooled random bytes of common/ids.ts, not a system call per lock.
    const token = randomBase62(22);
    const deadline = Date.now() + this.options.waitMs;
    for (;;) {
      const taken: [number, (string | null)?] = read
        ? ((await this.redis.eval(ACQUIRE_AND_GET, 2, this.key, read, token, String(this.options.ttlMs))) as [number, string | null])
        : [(await this.redis.set(this.key, token, 'PX', this.options.ttlMs, 'NX')) === 'OK' ? 1 : 0];
      if (taken[0] === 1) {
        this.token = token;
        this.stopHeartbeat();
        this.heartbeat = setInterval(() => void this.renew().catch(() => false), Math.floor(this.options.ttlMs / 3));
        this.heartbeat.unref();
        return taken[1] ?? null;
      }
      if (Date.now() > deadline) throw new RecordLockTimeout(this.key, this.options.waitMs);
      await sleep(10 + Math.floor(Math.random() * 30));
    }
  }

  /**
   * Makes the lock live at least another `ttlMs` (and `extraMs` more: a write that
   * may take that much longer to land, ./fenced-updates.ts); never shortens it.
   * False when it is no longer this holder's.
   */
  async renew(also?: AlsoSet, extraMs = 0): Promise<boolean> {
    const forMs = String(this.options.ttlMs + extraMs);
    const renewed = also
      ? await this.redis.eval(RENEW_AND_SET, 2, this.key, also.key, this.token, forMs, also.value, String(also.px))
      : await this.redis.eval(RENEW, 1, this.key, this.token, forMs);
    return renewed === 1;
  }

  /**
   * Sends one write while this holder has the lock, renewed for a whole `ttlMs`
   * right before it: null (nothing sent) when the lock is no longer this holder's.
   * Each try of a retried write goes through here.
   */
  async fenced<T>(send: () => Promise<T>, also?: AlsoSet): Promise<T | null> {
    if (!(await this.renew(also))) return null;
    return send();
  }

  /**
   * Frees the lock if it is still this holder's. Alone it never throws: an unreleased
   * lock expires. With `also`, which must be set, a failure is thrown.
   */
  async release(also?: AlsoSet): Promise<void> {
    this.stopHeartbeat();
    if (also) {
      await this.redis.eval(RELEASE_AND_SET, 2, this.key, also.key, this.token, also.value, String(also.px));
      return;
    }
    await this.redis.eval(RELEASE, 1, this.key, this.token).catch(() => undefined);
  }

  private stopHeartbeat(): void {
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = null;
  }
}
