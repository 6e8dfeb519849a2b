/**
 * Test calls in flight per scope (`POST /v1/webhook_endpoints/{id}/test`), across
 * every api process: a sorted set per (project, livemode) of the requests holding a
 * slot, scored by when their lease runs out. A call past the cap is refused at once
 * with 429 and `Retry-After`, before anything is enqueued, so one tenant's test
 * calls can neither fill the delivery workers nor hammer a receiver (security
 * review H1). A slot is released when its call is answered; one whose api process
 * died is forgotten when its lease (the api's whole wait) runs out.
 */
import type { Redis } from 'ioredis';
import type { Scope } from '../common/jobs.js';

/** KEYS[1] the set; ARGV: lease ms, holder, limit. 1 when taken, else 0. Redis's clock. */
const TAKE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[1]), ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1`;

export interface WebhookTestSlotsOptions {
  prefix: string;
  /** Test calls in flight per scope. */
  limit: number;
  /** How long a slot is held at most: the api's wait for the call's answer, and some. */
  leaseMs: number;
}

export class WebhookTestSlots {
  constructor(
    private readonly redis: Redis,
    private readonly options: WebhookTestSlotsOptions,
  ) {}

  private keyOf(scope: Scope): string {
    return `${this.options.prefix}:webhook-tests:${scope.livemode ? 'live' : 'test'}:${scope.project}`;
  }

  /** Takes a slot for `holder` (the request's id); false when the scope has `limit` in flight. */
  async take(scope: Scope, holder: string): Promise<boolean> {
    const taken = await this.redis.eval(TAKE, 1, this.keyOf(scope), this.options.leaseMs, holder, this.options.limit);
    return taken === 1;
  }

  async release(scope: Scope, holder: string): Promise<void> {
    await this.redis.zrem(this.keyOf(scope), holder);
  }

  /** Seconds for `Retry-After`: about one test call's time. */
  retryAfterSeconds(testTimeoutMs: number): number {
    return Math.max(1, Math.ceil(testTimeoutMs / 1000));
  }
}
