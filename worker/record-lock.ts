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
 * The lock (common/redis-lock.ts, the service's one) expires by itself (`ttlMs`) unless its holder renews it: a live holder
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
import { intentTokenReplacement } from '../common/intent-tokens.js';
import { LockTimeout, TokenLock } from '../common/redis-lock.js';

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
export { LockTimeout as RecordLockTimeout };

/**
 * A record's lock: the service's one Redis lock (common/redis-lock.ts), with a
 * heartbeat while held, and the record's ttl and wait.
 */
export class RecordLock extends TokenLock {
  constructor(redis: Redis, key: string, options: RecordLockOptions = RECORD_LOCK) {
    super(redis, key, { ttlMs: options.ttlMs, waitMs: options.waitMs });
  }
}

export function intentLockKey(prefix: string, paymentIntent: string): string {
  // Hash-tagged by the intent, as its token (common/intent-tokens.ts): a script that takes the
  // lock also reads or sets the token, and on a cluster both must be in one slot.
  return `${prefix}:intent-lock:{${paymentIntent}}`;
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
