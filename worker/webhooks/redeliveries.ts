/**
 * The redeliveries (resend, recover) pending per endpoint, so that no tenant can fill
 * the shared Redis with delivery chains, nor make the service an amplifier (security
 * review H2). What it promises:
 *
 * - An event pending for an endpoint is queued at most once, however often it is
 *   resent or recovered: a sorted set per endpoint holds the events whose
 *   redelivery chain is under way (scored by when each was queued), an event is
 *   added only if absent, and its chain's job id is `redeliver-<event>-<endpoint>`
 *   (no mutation in it), so even a set lost with Redis does not queue one twice.
 * - At most `limit` pending per endpoint: past it, resend and recover are refused.
 * - An event leaves the set when its chain is over (delivered, given up, or dropped);
 *   an entry older than `staleMs` (longer than any redelivery chain lasts) is no
 *   longer counted, in case its chain's end was never seen (a worker killed at the
 *   wrong moment, its job removed by hand).
 */
import { DelayedError, UnrecoverableError, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { DeliverWebhookData } from '../../common/jobs.js';

/**
 * KEYS[1] the set; ARGV: now ms, stale ms, limit, then event ids. Answers the ids
 * added (absent before), at most the room left under `limit`; -1 when there is no
 * room and one of them would have been added.
 */
const RESERVE = `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', tonumber(ARGV[1]) - tonumber(ARGV[2]))
local room = tonumber(ARGV[3]) - redis.call('ZCARD', KEYS[1])
local added = {}
for i = 4, #ARGV do
  if not redis.call('ZSCORE', KEYS[1], ARGV[i]) then
    if room <= 0 then
      if #added == 0 then return -1 end
      break
    end
    redis.call('ZADD', KEYS[1], ARGV[1], ARGV[i])
    room = room - 1
    added[#added + 1] = ARGV[i]
  end
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return added`;

export interface RedeliveriesOptions {
  prefix: string;
  /** Pending redeliveries per endpoint. */
  limit: number;
  /** An entry older than this is no longer counted (longer than a redelivery chain lasts). */
  staleMs: number;
}

/** What a reservation came to: the events to queue now, or a refusal (no room at all). */
export type Reservation = { added: string[] } | { full: true };

export class Redeliveries {
  constructor(
    private readonly redis: Redis,
    private readonly options: RedeliveriesOptions,
  ) {}

  private keyOf(endpointId: string): string {
    return `${this.options.prefix}:webhook-redeliveries:${endpointId}`;
  }

  /**
   * Counts `eventIds` (in order) as pending for the endpoint, those not already
   * pending, while there is room; answers those added, the ones to queue.
   */
  async reserve(endpointId: string, eventIds: string[], nowMs: number): Promise<Reservation> {
    if (eventIds.length === 0) return { added: [] };
    const answer = (await this.redis.eval(RESERVE, 1, this.keyOf(endpointId), nowMs, this.options.staleMs, this.options.limit, ...eventIds)) as string[] | number;
    return answer === -1 ? { full: true } : { added: answer as string[] };
  }

  /** The events pending for the endpoint (at most `limit`). */
  async pending(endpointId: string, nowMs: number): Promise<Set<string>> {
    return new Set(await this.redis.zrangebyscore(this.keyOf(endpointId), nowMs - this.options.staleMs, '+inf'));
  }

  /** Reserved but not queued after all (the enqueue failed): no longer pending. */
  async unreserve(endpointId: string, eventIds: string[]): Promise<void> {
    if (eventIds.length > 0) await this.redis.zrem(this.keyOf(endpointId), ...eventIds);
  }

  /** The chain of `eventId` to the endpoint is over. */
  async finished(endpointId: string, eventId: string): Promise<void> {
    await this.redis.zrem(this.keyOf(endpointId), eventId);
  }

  /** A redelivery of `eventId` reached the endpoint: the event's first chain, still retrying, sends it no more. */
  async delivered(endpointId: string, eventId: string): Promise<void> {
    await this.redis.set(redeliveredKey(this.options.prefix, eventId, endpointId), '1', 'PX', REDELIVERED_TTL_MS);
  }
}

/** Longer than the longest delivery schedule (about three days), as the pending sets are kept. */
const REDELIVERED_TTL_MS = 8 * 24 * 3600_000;

/** Set once a redelivery (resend, recover) of the event reached the endpoint (Redeliveries.delivered). */
export function redeliveredKey(prefix: string, eventId: string, endpointId: string): string {
  return `${prefix}:redelivered:${eventId}:${endpointId}`;
}

/** The job id of an event's redelivery chain to an endpoint: one per pair, whatever asked for it. */
export function redeliveryJobId(eventId: string, endpointId: string): string {
  return `redeliver-${eventId}-${endpointId}`;
}

/**
 * Runs a redelivery's attempt; once its chain is over, the event is no longer pending
 * for the endpoint. One that reached the endpoint also finishes the event's delivery
 * there (`outbox`, ./pending-events.ts): the sweeper drives that delivery no more.
 */
export async function settleRedelivery<T>(
  redeliveries: Redeliveries,
  job: Job<DeliverWebhookData>,
  attempt: () => Promise<T>,
  outbox?: { finished(eventId: string, endpointId: string): Promise<void> },
): Promise<T> {
  const { eventId, endpointId } = job.data;
  const finished = () => redeliveries.finished(endpointId, eventId).catch(() => undefined);
  let result: T;
  try {
    result = await attempt();
  } catch (err) {
    if (err instanceof DelayedError) throw err;
    const last = err instanceof UnrecoverableError || job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
    if (last) await finished();
    throw err;
  }
  if ((result as { delivered?: boolean }).delivered === true) {
    await redeliveries.delivered(endpointId, eventId).catch(() => undefined);
    await outbox?.finished(eventId, endpointId).catch(() => undefined);
  }
  await finished();
  return result;
}
