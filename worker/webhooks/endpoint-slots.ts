/**
 * Deliveries in flight per endpoint, across every worker process, so that one slow
 * or hanging receiver (a tarpit) holds at most `limit` delivery slots and the
 * others keep flowing. BullMQ groups would do this but are not in the open-source
 * edition; this is a counting semaphore in Redis instead: a sorted set per
 * endpoint of the attempts holding a slot, scored by when their lease runs out.
 *
 * A slot is a lease, renewed while its attempt runs: a worker that dies mid-attempt
 * frees its slots within one lease (a few seconds), not after the longest POST it
 * could have made. (A fixed hold of the POST's timeout let a worker killed every
 * few seconds strand every slot of an endpoint, and each delivery then bounced.)
 * The set itself expires with its last lease.
 *
 * The deliveries that found no slot wait in BullMQ's delayed set, and come back to
 * try again. How long they wait is the endpoint's queue length over the rate at which
 * they may come back: each endpoint keeps a second sorted set of its waiting
 * deliveries (job ids, scored by when each last found the slots taken), so that a
 * backlog of a thousand deliveries to a slow receiver comes back a few dozen a
 * second, not all of them every 1–2 s. (A fixed wait made the workers spend their
 * time moving waiting deliveries in and out of the queue: 340 bounces a second in a
 * chaos run, for 20–40 deliveries.) A waiter leaves the set when it takes a slot, and
 * one that never comes back (its job deleted) is forgotten after `forgetMs`.
 */
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';

/**
 * KEYS[1] the slots, KEYS[2] the waiters; ARGV: lease ms, holder, limit, waiter ('' for
 * none), forget ms ('' unless the slot goes to no one while deliveries wait).
 * Redis's clock, so workers' clocks need not agree. A taken slot ends the wait.
 */
const ACQUIRE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if ARGV[5] ~= '' then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - tonumber(ARGV[5]))
  if redis.call('ZCARD', KEYS[2]) > 0 then return 0 end
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[1]), ARGV[2])
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[1]) then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
if ARGV[4] ~= '' then redis.call('ZREM', KEYS[2], ARGV[4]) end
return 1`;

// Counts `waiter` among the endpoint's waiting deliveries; the number waiting.
const PARK = `
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - tonumber(ARGV[3]))
redis.call('ZADD', KEYS[2], now, ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return redis.call('ZCARD', KEYS[2])`;

/**
 * KEYS[1] the slots, KEYS[2] the waiters; ARGV: limit, waiter, forget ms. 0 when a slot
 * is free now (taking it is another step); else counts the waiter, and answers how many
 * deliveries wait for the endpoint, this one included.
 */
const WAITING = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[1]) then return 0 end
${PARK}`;

/** KEYS[2] the waiters; ARGV: (unused), waiter, forget ms. Counts the waiter; how many wait. */
const PARK_ONLY = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
${PARK}`;

/** KEYS[1] the set; ARGV: lease ms, holder. Extends a lease still held; 0 when it was lost. */
const RENEW = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if not redis.call('ZSCORE', KEYS[1], ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[1]), ARGV[2])
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[1]) then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return 1`;

export interface Slot {
  release(): Promise<void>;
}

export interface EndpointSlots {
  /**
   * A slot for one attempt, or null when the endpoint already has `limit` in flight.
   * `waiter` (the delivery's job id) stops being counted as waiting once it has one.
   */
  acquire(endpointId: string, waiter?: string): Promise<Slot | null>;
  /**
   * A slot for a first attempt made in place (first-attempt.ts): null also while
   * deliveries of the endpoint wait for one, so that it never passes them.
   */
  acquireFirst(endpointId: string): Promise<Slot | null>;
  /**
   * 0 when a slot is free now: a delivery that would bounce learns it before reading
   * anything. Else `waiter` is counted as waiting, and the answer is how many wait.
   */
  waiting(endpointId: string, waiter: string): Promise<number>;
  /** Counts `waiter` as waiting (it found no slot after all); how many wait. */
  park(endpointId: string, waiter: string): Promise<number>;
}

export interface EndpointSlotsOptions {
  prefix: string;
  limit: number;
  leaseMs: number;
  /** A waiter not seen again for this long is no longer counted (default 90 s). */
  forgetMs?: number;
}

export function endpointSlots(redis: Redis, options: EndpointSlotsOptions): EndpointSlots {
  // Hash-tagged by the endpoint: the scripts take both keys (one slot on a cluster).
  const keyOf = (endpointId: string) => `${options.prefix}:webhook-slots:{${endpointId}}`;
  const waitersOf = (endpointId: string) => `${options.prefix}:webhook-waiters:{${endpointId}}`;
  const forgetMs = options.forgetMs ?? 90_000;
  return {
    async waiting(endpointId, waiter) {
      return Number(await redis.eval(WAITING, 2, keyOf(endpointId), waitersOf(endpointId), options.limit, waiter, forgetMs));
    },
    async park(endpointId, waiter) {
      return Number(await redis.eval(PARK_ONLY, 2, keyOf(endpointId), waitersOf(endpointId), 0, waiter, forgetMs));
    },
    acquire: (endpointId, waiter = '') => take(endpointId, waiter, ''),
    acquireFirst: (endpointId) => take(endpointId, '', forgetMs),
  };

  async function take(endpointId: string, waiter: string, behindWaiters: number | ''): Promise<Slot | null> {
    const key = keyOf(endpointId);
    const holder = randomBytes(9).toString('base64url');
    const taken = await redis.eval(ACQUIRE, 2, key, waitersOf(endpointId), options.leaseMs, holder, options.limit, waiter, behindWaiters);
    if (taken !== 1) return null;
    // Renewed three times a lease: a late renewal or two (a busy event loop, Redis
    // away for a moment) does not lose it.
    const renewal = setInterval(() => {
      redis.eval(RENEW, 1, key, options.leaseMs, holder).catch(() => undefined);
    }, Math.max(100, Math.floor(options.leaseMs / 3)));
    renewal.unref();
    return {
      async release() {
        clearInterval(renewal);
        await redis.zrem(key, holder);
      },
    };
  }
}
