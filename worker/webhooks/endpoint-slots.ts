/**
 * Deliveries in flight per endpoint, across every worker process, so that one slow
 * or hanging receiver (a tarpit) holds at most `limit` delivery slots and the
 * others keep flowing. BullMQ groups would do this but are not in the open-source
 * edition; this is a counting semaphore in Redis instead: a sorted set per
 * endpoint of the attempts holding a slot, scored by when their hold runs out. A
 * worker that dies mid-attempt therefore frees its slot at the latest when the
 * hold expires, and the set itself expires with its last hold.
 */
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';

/** KEYS[1] the set; ARGV: hold ms, holder, limit. Redis's clock, so workers' clocks need not agree. */
const ACQUIRE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[1]), ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1`;

export interface EndpointSlots {
  /** A slot for one attempt, or null when the endpoint already has `limit` in flight. */
  acquire(endpointId: string): Promise<{ release(): Promise<void> } | null>;
}

export function endpointSlots(redis: Redis, options: { prefix: string; limit: number; holdMs: number }): EndpointSlots {
  return {
    async acquire(endpointId) {
      const key = `${options.prefix}:webhook-slots:${endpointId}`;
      const holder = randomBytes(9).toString('base64url');
      const taken = await redis.eval(ACQUIRE, 1, key, options.holdMs, holder, options.limit);
      if (taken !== 1) return null;
      return {
        async release() {
          await redis.zrem(key, holder);
        },
      };
    },
  };
}
