/**
 * The first attempt of a delivery, made in place by the job that recorded the event,
 * right after its fan-out: no delivery job, unless the attempt fails. What it promises:
 *
 * - The same attempt as a delivery job's (deliver.ts): signed over the event JSON the
 *   recording job stored, to an endpoint the fan-out has just read (enabled, of the
 *   event's scope, subscribed), in one of the endpoint's slots, recorded in
 *   `webhook_attempts`, followed by the same handling of its outcome.
 * - A chain that goes on goes on in a delivery job, under the delivery's own job id:
 *   after a failed attempt, delayed by the schedule's first step (or the receiver's
 *   Retry-After), numbered from 2 (`prior`); after a fault of ours (Redis or MongoDB
 *   away), at once. If even that enqueue fails, the event's outbox entry is still
 *   there, and the sweeper enqueues its delivery (sweep-events.ts).
 * - Never ahead of the queue: at most `limit` first attempts in flight in this
 *   process, a tenth of it while this worker's deliveries yield to creates
 *   (yield-to-creates.ts); the others wait in the process, in order (up to a bound in
 *   bytes, past which they go to jobs). A first attempt never passes deliveries of
 *   its endpoint waiting for a slot: it goes to a job then.
 * - Never lost: the outbox entry stays until the attempt has succeeded (or the chain
 *   is over), so a worker killed mid-attempt leaves its delivery to the sweeper.
 *
 * Why: a delivery job cost a full BullMQ round (its add, the fetches, its completion)
 * plus two reads on MongoDB (the endpoint, the event), for one POST that nearly always
 * succeeds. The recording job has the event and the fan-out has the endpoint already.
 */
import { UnrecoverableError, type MinimalJob } from 'bullmq';
import type { Redis } from 'ioredis';
import type { WebhookEndpointDoc } from '../../common/documents.js';
import { JOBS, type DeliverWebhookData, type TypedQueue } from '../../common/jobs.js';
import { deliveryJobOptions } from './delivery-jobs.js';
import { afterAttempt, sendAttempt, type DeliverDeps } from './deliver.js';
import type { Slot } from './endpoint-slots.js';
import type { StoredEvent } from './load-event.js';
import type { PendingEvents } from './pending-events.js';
import { DeliveryFailedError, maxAttempts, retryDelay } from './retry-policy.js';

/** How often, and how far apart on average, a first attempt asks for a slot before it becomes a job: about 2 s. */
const SLOT_TRIES = 20;
const SLOT_RETRY_MS = 100;

export interface FirstAttemptDeps extends DeliverDeps {
  pending: PendingEvents;
  webhooksQueue: TypedQueue<'webhooks'>;
  /** At most this many first attempts in flight in this process. */
  limit: number;
  /** False while this worker's deliveries yield to creates: a tenth of `limit` then. */
  open: () => boolean;
  /** Bytes of event JSON held waiting for room (default 8 MiB). */
  heldMaxBytes?: number;
}

/**
 * What stands in for a delivery job's record when the first attempt is made in place:
 * `started` once a first attempt is begun (its chain goes on in a job if it fails),
 * `done` once it delivered. Kept as long as finished delivery jobs are (an hour), so
 * that an event recorded again (a retried or re-run job, a sweep) is not delivered
 * again to an endpoint that already has it, as a finished job's id used to prevent.
 *
 * `in_flight` is a `started` mark read with a clock (`firstAttemptMarks`'s `now`):
 * begun so recently that its attempt may still be running, in place, with no job yet.
 * The sweeper leaves such a delivery alone: sending it again would post the event a
 * second time beside the first attempt, and skip the retry schedule after a failure.
 */
export type FirstAttemptMark = 'started' | 'in_flight' | 'done';
const MARK_TTL_MS = 3600_000;
const STARTED = 'started:';

/**
 * How long a first attempt made in place can run, from its mark to its job: a slot's
 * wait (about 2 s), the POST (the webhook timeout), then the attempt's record and the
 * enqueue of the chain's job, with room for a store or a Redis that is slow.
 */
export function firstAttemptBoundMs(timeoutMs: number): number {
  return timeoutMs + 15_000;
}

export function firstAttemptKey(prefix: string, eventId: string, endpointId: string): string {
  // Hash-tagged by the event: one MGET reads an event's marks (one slot on a cluster).
  return `${prefix}:first-attempt:{${eventId}}:${endpointId}`;
}

/**
 * The mark of each (event, endpoint), in order; null where there is none. With
 * `inFlight` (now, and `firstAttemptBoundMs`), a mark begun within the bound reads
 * `in_flight`.
 */
export async function firstAttemptMarks(
  redis: Redis,
  prefix: string,
  eventId: string,
  endpointIds: string[],
  inFlight?: { nowMs: number; boundMs: number },
): Promise<Array<FirstAttemptMark | null>> {
  if (endpointIds.length === 0) return [];
  const values = await redis.mget(...endpointIds.map((id) => firstAttemptKey(prefix, eventId, id)));
  return values.map((v): FirstAttemptMark | null => {
    // A `started` without its time: the chain went on in its job (or the mark was
    // written before marks had one).
    if (v === 'done' || v === 'started') return v;
    if (!v?.startsWith(STARTED)) return null;
    const since = Number(v.slice(STARTED.length));
    return inFlight && Number.isFinite(since) && inFlight.nowMs - since < inFlight.boundMs ? 'in_flight' : 'started';
  });
}

/** The attempts of a delivery chain made before its job: 0 but for a chain begun in place. */
export function priorAttempts(job: MinimalJob | undefined): number {
  const prior = (job?.data as DeliverWebhookData | undefined)?.prior;
  return typeof prior === 'number' && Number.isInteger(prior) && prior > 0 ? prior : 0;
}

/** How first attempts ended: delivered, failed (the chain goes on in a job, or is over), or left to a job unmade. */
export type FirstAttemptOutcome = 'delivered' | 'failed' | 'deferred';

/**
 * First attempts wait in the process, in order, while `limit` of them are in flight
 * (a tenth of it while deliveries yield to creates), up to this many bytes of event
 * JSON; past that they go to delivery jobs. A held attempt costs its memory only,
 * where a job costs a BullMQ round and two reads when it runs. One lost with its
 * process (killed) leaves its outbox entry to the sweeper.
 */
const HELD_MAX_BYTES = 8 * 1024 * 1024;
/** How often held attempts are looked at again while none finishes (the yield may have ended). */
const PUMP_MS = 200;

interface Held {
  event: StoredEvent;
  endpoint: WebhookEndpointDoc;
  bytes: number;
}

export class FirstAttempts {
  private readonly inFlight = new Set<Promise<void>>();
  private held: Held[] = [];
  private heldBytes = 0;
  private pumpTimer: NodeJS.Timeout | null = null;
  /** Counts by outcome, since the process started (the worker's metrics read them). */
  readonly outcomes: Record<FirstAttemptOutcome, number> = { delivered: 0, failed: 0, deferred: 0 };

  constructor(private readonly deps: FirstAttemptDeps) {}

  /**
   * Takes the first attempt of the event's delivery to each endpoint there is room
   * for (in flight, or held until there is), and returns the endpoints left over, for
   * delivery jobs. The attempts run on after this returns: the caller's job does not
   * wait for receivers.
   */
  take<E extends WebhookEndpointDoc>(event: StoredEvent, endpoints: E[]): E[] {
    const left: E[] = [];
    const bytes = event.json.length;
    for (const endpoint of endpoints) {
      if (this.heldBytes + bytes > (this.deps.heldMaxBytes ?? HELD_MAX_BYTES)) {
        left.push(endpoint);
        continue;
      }
      this.held.push({ event, endpoint, bytes });
      this.heldBytes += bytes;
    }
    this.pump();
    return left;
  }

  /** How many are in flight. */
  get size(): number {
    return this.inFlight.size;
  }

  /** How many wait for room. */
  get waiting(): number {
    return this.held.length;
  }

  /** Shutdown: the attempts still held go to delivery jobs; resolves once those in flight are over. */
  async drain(): Promise<void> {
    if (this.pumpTimer) clearTimeout(this.pumpTimer);
    this.pumpTimer = null;
    const held = this.held;
    this.held = [];
    this.heldBytes = 0;
    this.outcomes.deferred += held.length;
    await Promise.all(held.map(({ event, endpoint }) => this.continueInJob(event.id, endpoint._id, 0, 0)));
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  /** Starts held attempts while there is room: all of `limit` when deliveries flow, a tenth while they yield. */
  private pump(): void {
    const room = this.deps.open() ? this.deps.limit : Math.max(1, Math.ceil(this.deps.limit / 10));
    while (this.held.length > 0 && this.inFlight.size < room) {
      const { event, endpoint, bytes } = this.held.shift() as Held;
      this.heldBytes -= bytes;
      const run: Promise<void> = this.run(event, endpoint).finally(() => {
        this.inFlight.delete(run);
        this.pump();
      });
      this.inFlight.add(run);
    }
    if (this.held.length > 0 && !this.pumpTimer) {
      this.pumpTimer = setTimeout(() => {
        this.pumpTimer = null;
        this.pump();
      }, PUMP_MS);
      this.pumpTimer.unref();
    }
  }

  private async run(event: StoredEvent, endpoint: WebhookEndpointDoc): Promise<void> {
    const deps = this.deps;
    const mark = firstAttemptKey(deps.prefix, event.id, endpoint._id);
    let posted = false;
    try {
      // One first attempt per (event, endpoint), however often the event is recorded.
      if ((await deps.redis.set(mark, `${STARTED}${Date.now()}`, 'PX', MARK_TTL_MS, 'NX')) !== 'OK') return;
      const slot = await this.slot(endpoint._id);
      if (!slot) {
        this.outcomes.deferred++;
        return await this.continueInJob(event.id, endpoint._id, 0, 0, mark);
      }
      const sent = await sendAttempt(deps, endpoint, event.id, event.json, 1, async (post) => {
        posted = true;
        try {
          return await post();
        } finally {
          await slot.release().catch(() => undefined);
        }
      });
      await afterAttempt(deps, endpoint, event.id, 1, sent, { in_place: true });
      this.outcomes.delivered++;
      await deps.redis.set(mark, 'done', 'PX', MARK_TTL_MS).catch(() => undefined);
      await this.finished(event.id, endpoint._id);
    } catch (err) {
      this.outcomes[err instanceof UnrecoverableError || err instanceof DeliveryFailedError ? 'failed' : 'deferred']++;
      // The endpoint is disabled now: the chain is over.
      if (err instanceof UnrecoverableError) return this.finished(event.id, endpoint._id);
      if (err instanceof DeliveryFailedError) {
        if (maxAttempts(deps.config) <= 1) return this.finished(event.id, endpoint._id);
        return this.continueInJob(event.id, endpoint._id, 1, retryDelay(deps.config, 1, { retryAfterMs: err.retryAfterMs }), mark);
      }
      // A fault of ours (before or after the POST): the job tries again at once. A
      // receiver that got the POST gets it again, as from a stalled job.
      deps.logger.warn({ event_id: event.id, endpoint_id: endpoint._id, err: (err as Error).message }, 'first webhook attempt interrupted: left to a delivery job');
      return this.continueInJob(event.id, endpoint._id, posted ? 1 : 0, 0, mark);
    }
  }

  /**
   * A slot of the endpoint, asked for again while its deliveries are all taken for
   * a moment: at a steady rate a receiver's slots are often full when one more
   * delivery comes, and free again within a POST. Waiting here costs nothing but a
   * few small Redis calls, where a job that finds them taken waits in BullMQ's
   * delayed set, and then every first attempt after it yields to it.
   */
  private async slot(endpointId: string): Promise<Slot | null> {
    for (let tries = 1; ; tries++) {
      const slot = await this.deps.slots.acquireFirst(endpointId);
      if (slot || tries >= SLOT_TRIES) return slot;
      await new Promise((resolve) => setTimeout(resolve, SLOT_RETRY_MS / 2 + Math.random() * SLOT_RETRY_MS));
    }
  }

  /**
   * The rest of the chain, in its delivery job; on failure, left to the sweeper. The
   * first attempt's `mark`, once the job is there, loses its time: the chain is the
   * job's now, and a job Redis loses is the sweeper's at once.
   */
  private async continueInJob(eventId: string, endpointId: string, prior: number, delay: number, mark?: string): Promise<void> {
    const deps = this.deps;
    const options = deliveryJobOptions(deps.config, eventId, endpointId);
    try {
      await deps.webhooksQueue.add(JOBS.deliverWebhook, { eventId, endpointId, ...(prior > 0 ? { prior } : {}) }, {
        ...options,
        attempts: Math.max(1, (options.attempts ?? 1) - prior),
        ...(delay > 0 ? { delay } : {}),
      });
      if (mark) await deps.redis.set(mark, 'started', 'PX', MARK_TTL_MS).catch(() => undefined);
    } catch (err) {
      deps.logger.warn({ event_id: eventId, endpoint_id: endpointId, err: (err as Error).message }, 'delivery not enqueued: the outbox sweeper will');
    }
  }

  /** The delivery is finished; a release lost (Redis away) leaves the entry to the sweeper. */
  private async finished(eventId: string, endpointId: string): Promise<void> {
    await this.deps.pending.finished(eventId, endpointId).catch(() => undefined);
  }
}
