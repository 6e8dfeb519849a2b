import { randomBytes } from 'node:crypto';
import type { Middleware } from 'koa';
import { errors } from '../../common/errors.js';
import { handedOnOf, type AppDeps, type State } from '../context.js';

/**
 * Lua: the key's requests of the last second, a sorted set of their times. A request
 * is counted only when fewer than the limit came in the second before it, so no span
 * of one second ever holds more than the limit, wherever it starts (a fixed window
 * per clock second let twice the limit through across a boundary), and a client that
 * keeps sending past the limit still gets the limit through each second. Returns 1
 * when over the limit.
 */
const COUNT = `
local now = tonumber(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - 1000)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 1 end
redis.call('ZADD', KEYS[1], now, ARGV[3])
redis.call('PEXPIRE', KEYS[1], 1000)
return 0`;

let sequence = 0;
/** Tells apart the requests this process counts within one millisecond. */
const processTag = randomBytes(6).toString('base64url');

/** Counts one request at `redisKey` against `limit` a second; true past it. */
async function overLimit(deps: Pick<AppDeps, 'redis' | 'now'>, redisKey: string, limit: number): Promise<boolean> {
  sequence = (sequence + 1) % Number.MAX_SAFE_INTEGER;
  const over = await deps.redis.eval(COUNT, 1, redisKey, deps.now(), limit, `${processTag}:${sequence}`);
  return Number(over) === 1;
}

/**
 * Counts a request against its project and mode's limit (DESIGN section 20: shared
 * by all the scope's keys, so more keys buy no more): at most
 * `RATE_LIMIT_PER_SECOND` in any second, counted in Redis so that every api process
 * shares it. True past the limit.
 */
export async function overRateLimit(deps: Pick<AppDeps, 'config' | 'redis' | 'now'>, scope: { project: string; livemode: boolean }): Promise<boolean> {
  return overLimit(deps, `${deps.config.queuePrefix}:rl:${scope.project}:${scope.livemode ? 'live' : 'test'}`, deps.config.rateLimitPerSecond);
}

/**
 * Counts a request of no tenant (an operator callback, the test checkout page, a
 * failed authentication) against its client address's limit,
 * `ANONYMOUS_RATE_LIMIT_PER_SECOND` (DESIGN section 20). True past it; never with 0.
 */
export async function overAddressLimit(deps: Pick<AppDeps, 'config' | 'redis' | 'now'>, bucket: string, address: string): Promise<boolean> {
  const limit = deps.config.anonymousRateLimitPerSecond;
  if (limit <= 0) return false;
  return overLimit(deps, `${deps.config.queuePrefix}:rl-addr:${bucket}:${address}`, limit);
}

/**
 * The limit of the routes no key opens (`/operators/*`, `/test/checkout/*`): 429 past
 * `ANONYMOUS_RATE_LIMIT_PER_SECOND` requests a second from one address.
 */
export function anonymousLimit(deps: AppDeps): Middleware<State> {
  return async (ctx, next) => {
    if ((ctx.path.startsWith('/operators/') || ctx.path.startsWith('/test/checkout/')) && (await overAddressLimit(deps, 'anonymous', ctx.ip))) {
      throw errors.rateLimit(1);
    }
    await next();
  };
}

/**
 * The rate limit guard: 429 past the key's limit. `RATE_LIMIT_PER_SECOND=0` turns it
 * off. A request the replay at the door counted already
 * (../handlers/replay-from-memory.ts) is not counted again: that count decides.
 */
export function rateLimit(deps: AppDeps): Middleware<State> {
  return async (ctx, next) => {
    const key = ctx.state.key;
    if (deps.config.rateLimitPerSecond > 0 && key) {
      const earlier = handedOnOf(ctx.req)?.rate;
      const over = earlier === undefined ? await overRateLimit(deps, key) : earlier === 'over';
      if (over) throw errors.rateLimit(1);
    }
    await next();
  };
}
