/**
 * Writes in flight per object (DESIGN section 20, "No worker slot waits for a
 * lock"): the api admits at most `OBJECT_WRITES_IN_FLIGHT` writes of one object
 * (a payment intent and its refunds, a refund, a webhook endpoint) at once, across
 * every api process; one more is answered 409 `lock_timeout` at once, before
 * anything is claimed or enqueued. Without the cap, a hundred requests on one intent
 * each took a worker slot to wait for its lock, and every tenant's writes queued
 * behind them.
 *
 * One Redis counter per (project, mode, object), taken with INCR and given back with
 * DECR; it expires a while after its last write, so a process that died holding a
 * slot leaks it for that long at most.
 */
import type { Redis } from 'ioredis';

/** How long a counter outlives its last change: longer than any write waits for its answer. */
const SLOT_TTL_MS = 60_000;

export interface ObjectSlot {
  release(): Promise<void>;
}

export class ObjectWrites {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly limit: number,
  ) {}

  /** A slot for one more write of `object` in the key's scope; false when `limit` are in flight. */
  async take(scope: { project: string; livemode: boolean }, object: string): Promise<ObjectSlot | false> {
    const key = `${this.prefix}:object-writes:${scope.project}:${scope.livemode ? 'live' : 'test'}:${object}`;
    const [[, count]] = (await this.redis.multi().incr(key).pexpire(key, SLOT_TTL_MS).exec()) as [[Error | null, number]];
    const release = async () => {
      await this.redis.decr(key).catch(() => undefined);
    };
    if (count > this.limit) {
      await release();
      return false;
    }
    return { release };
  }
}
