/**
 * One writer of a stored record at a time, across every worker process: a Redis
 * lock per record, held from its read to its update. Payment intents take it for
 * each transition (lifecycle/transition.ts); webhook endpoints for each change, the
 * merchant's (update, delete, rotation) and the deliveries' (a failure run starting
 * or ending, a disable).
 *
 * Why a lock when the update is conditional: on MongoDB the filter and the write of
 * an update are one atomic step, and the condition alone decides a race. FerretDB
 * 1.x (the local stack's server) reads the matching document, then replaces the
 * whole of it by `_id`; two updates sent at once both match, both are answered
 * `matchedCount: 1`, and the last write wins, even when they set different fields.
 * A cancel racing an operator's answer would both apply (two events, one of them
 * describing a state the intent never kept); a delivery noting a failure while the
 * merchant changes the endpoint's url would put the old url back. The lock makes
 * racing writes take turns; the conditional update stays the guarantee wherever the
 * lock does not hold (it expired while its holder stalled, Redis lost it).
 *
 * The lock expires by itself (`ttlMs`) unless its holder renews it: a live holder
 * renews it every third of that while it waits (the write gate, a slow database), so
 * only a worker that died lets it expire, delaying that record's next write by at
 * most `ttlMs`. A transition checks it once more right before its update, so a
 * holder that lost it anyway (Redis failed over, the process stalled) never writes
 * under a lock that another has taken since.
 */
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Collection } from 'mongodb';

export interface RecordLockOptions {
  /** How long the lock lives unless renewed. */
  ttlMs: number;
  /** How long to wait for it before giving up (the job is retried then). */
  waitMs: number;
}

export const RECORD_LOCK: RecordLockOptions = { ttlMs: 10_000, waitMs: 30_000 };

const RENEW = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end`;
const RELEASE = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`;

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
 * under the object's lock: on FerretDB the update writes the whole document back,
 * and would undo a transition or an endpoint change made meanwhile. The filter names
 * `_id` alone (anything more is a scan on FerretDB): a key that has expired stays
 * expired, and only this frees it. True when this call freed it.
 */
export async function freeExpiredKey(
  redis: Redis,
  prefix: string,
  collection: Collection<{ _id: string }>,
  id: string,
): Promise<boolean> {
  const updated = await withRecordLock(redis, objectLockKey(prefix, collection.collectionName, id), () =>
    collection.updateOne({ _id: id }, { $unset: { idem: '' } }),
  );
  return updated.modifiedCount > 0;
}

/** Runs `work` holding the lock at `key`; throws (a retryable fault) if it stays taken past `waitMs`. */
export async function withRecordLock<T>(redis: Redis, key: string, work: () => Promise<T>, options: RecordLockOptions = RECORD_LOCK): Promise<T> {
  const lock = new RecordLock(redis, key, options);
  await lock.acquire();
  try {
    return await work();
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

  /** Waits until this holder has the lock; throws after `waitMs` (an infrastructure fault: the job is retried). */
  async acquire(): Promise<void> {
    const token = randomBytes(16).toString('hex');
    const deadline = Date.now() + this.options.waitMs;
    for (;;) {
      if ((await this.redis.set(this.key, token, 'PX', this.options.ttlMs, 'NX')) === 'OK') {
        this.token = token;
        this.stopHeartbeat();
        this.heartbeat = setInterval(() => void this.renew().catch(() => false), Math.floor(this.options.ttlMs / 3));
        this.heartbeat.unref();
        return;
      }
      if (Date.now() > deadline) throw new Error(`${this.key} stayed locked for ${this.options.waitMs} ms`);
      await sleep(10 + Math.floor(Math.random() * 30));
    }
  }

  /** Extends the lock for another `ttlMs`; false when it is no longer this holder's. */
  async renew(): Promise<boolean> {
    return (await this.redis.eval(RENEW, 1, this.key, this.token, String(this.options.ttlMs))) === 1;
  }

  /** Frees the lock if it is still this holder's. Never throws: an unreleased lock expires. */
  async release(): Promise<void> {
    this.stopHeartbeat();
    await this.redis.eval(RELEASE, 1, this.key, this.token).catch(() => undefined);
  }

  private stopHeartbeat(): void {
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = null;
  }
}
