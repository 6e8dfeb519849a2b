/**
 * When an event's outbox entry may go. The entry is the durable record of the
 * event's pending deliveries (common/documents.ts, OutboxDoc); it is deleted once
 * every delivery of the event has succeeded or finally failed. What it promises:
 *
 * - Never early: Redis keeps, per event, the set of endpoints whose delivery is not
 *   finished (written by the dispatch before it enqueues them); a delivery that
 *   finishes removes its endpoint, and whoever removes the last one releases the
 *   entry. A finish seen twice (a stalled job run again) removes nothing the second
 *   time.
 * - Cheap: released entries are deleted in batches, one command per flush, not one
 *   write per event; each entry by its `_id` alone, which every store serves from
 *   its `_id` index (with `_id: {$in: [...]}` the local stack's store decodes every
 *   entry of the outbox, pending ones included: under a delivery backlog that was
 *   most of its CPU; docs/storage.md).
 * - Never lost: when Redis loses the set (a restart from an old snapshot), or a
 *   process dies before its flush, the entry simply stays; the sweeper
 *   (processors/sweep-events.ts) finds its jobs finished, or vanished and re-enqueues
 *   them, and releases it then.
 */
import { DelayedError, UnrecoverableError, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { DeliverWebhookData } from '../../common/jobs.js';
import type { Logger } from '../../common/logger.js';
import type { Collections } from '../../common/mongo.js';

/** Longer than the longest delivery schedule (about three days): the set never outlives its event's chain by much. */
const SET_TTL_S = 8 * 24 * 3600;
const FLUSH_MS = 250;
/** Ids kept for the next flush while MongoDB refuses deletes; beyond that the sweeper releases them. */
const MAX_BUFFERED = 10_000;

export class PendingEvents {
  private buffer = new Set<string>();
  private readonly timer: NodeJS.Timeout;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly deps: { redis: Redis; prefix: string; collections: Collections; logger: Logger },
  ) {
    this.timer = setInterval(() => void this.flush(), FLUSH_MS);
    this.timer.unref();
  }

  private key(eventId: string): string {
    // Hash-tagged by the event: a transaction touches both of its sets (one slot on a cluster).
    return `${this.deps.prefix}:outbox:left:{${eventId}}`;
  }

  private targetsKey(eventId: string): string {
    return `${this.deps.prefix}:outbox:targets:{${eventId}}`;
  }

  /**
   * Before the deliveries are enqueued: these endpoints have a delivery of the event to
   * finish. They are also kept as the event's targets, which never shrink, so that the
   * sweeper drives again only the endpoints the dispatch chose (`dispatched`).
   */
  async expect(eventId: string, endpointIds: string[]): Promise<void> {
    const key = this.key(eventId);
    const targets = this.targetsKey(eventId);
    const replies = await this.deps.redis
      .multi()
      .sadd(key, ...endpointIds)
      .expire(key, SET_TTL_S)
      .sadd(targets, ...endpointIds)
      .expire(targets, SET_TTL_S)
      .exec();
    for (const [err] of replies ?? []) if (err) throw err;
  }

  /**
   * What the dispatch of the event chose and what is left of it: null when Redis has
   * no record of a dispatch (none ran, or Redis lost it).
   */
  async dispatched(eventId: string): Promise<{ targets: Set<string>; left: Set<string> } | null> {
    const replies = await this.deps.redis.multi().smembers(this.targetsKey(eventId)).smembers(this.key(eventId)).exec();
    const [targets, left] = (replies ?? []).map(([err, value]) => {
      if (err) throw err;
      return value as string[];
    });
    if (!targets || targets.length === 0) return null;
    return { targets: new Set(targets), left: new Set(left) };
  }

  /** The delivery of the event to this endpoint is finished (delivered, skipped, or given up). */
  async finished(eventId: string, endpointId: string): Promise<void> {
    const key = this.key(eventId);
    const replies = await this.deps.redis.multi().srem(key, endpointId).scard(key).exec();
    const [removed, left] = (replies ?? []).map(([err, value]) => {
      if (err) throw err;
      return value as number;
    });
    if (removed === 1 && left === 0) this.release(eventId);
  }

  /** Nothing more to do for this event: its entry goes with the next flush. */
  release(eventId: string): void {
    if (this.buffer.size < MAX_BUFFERED) this.buffer.add(eventId);
  }

  /** Deletes the released entries; on failure they wait for the next flush. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(async () => {
      if (this.buffer.size === 0) return;
      const ids = [...this.buffer];
      this.buffer = new Set();
      try {
        await this.deps.collections.outbox.bulkWrite(
          ids.map((id) => ({ deleteOne: { filter: { _id: id } } })),
          { ordered: false },
        );
      } catch (err) {
        for (const id of ids) this.release(id);
        this.deps.logger.warn({ err: (err as Error).message, events: ids.length }, 'outbox release failed; retried at the next flush');
      }
    });
    return this.flushing;
  }

  /** Stops the timer after a last flush. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}

/**
 * Runs one delivery attempt and, when the delivery is finished (delivered, skipped,
 * or failed for the last time), tells `pending`. An attempt that will be retried
 * leaves the event pending.
 */
export async function settleDelivery<T>(pending: PendingEvents, job: Job<DeliverWebhookData>, attempt: () => Promise<T>): Promise<T> {
  const { eventId, endpointId } = job.data;
  // A release that fails (Redis away) must not fail a delivery that was made: the
  // entry then stays, and the sweeper releases it.
  const finished = () => pending.finished(eventId, endpointId).catch(() => undefined);
  let result: T;
  try {
    result = await attempt();
  } catch (err) {
    // Waiting for a free slot of its endpoint is not an attempt: the event stays pending.
    if (err instanceof DelayedError) throw err;
    const last = err instanceof UnrecoverableError || job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
    if (last) await finished();
    throw err;
  }
  await finished();
  return result;
}
