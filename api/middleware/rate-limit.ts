import type { Middleware } from 'koa';
import { errors } from '../../common/errors.js';
import type { AppDeps, Ctx, State } from '../context.js';

/**
 * Counts the request against its key's limit: a fixed one-second window per API key,
 * counted in Redis so that every api process shares it. Throws 429 past the limit.
 * Counted once, whichever step asks first (../handlers/replay-from-memory.ts, or the guard).
 */
export async function countRequest(deps: Pick<AppDeps, 'config' | 'redis' | 'now'>, ctx: Ctx): Promise<void> {
  const limit = deps.config.rateLimitPerSecond;
  const key = ctx.state.key;
  if (limit === 0 || !key || ctx.state.rateCounted) return;
  ctx.state.rateCounted = true;
  const second = Math.floor(deps.now() / 1000);
  const redisKey = `${deps.config.queuePrefix}:rl:${key._id}:${second}`;
  const replies = await deps.redis.multi().incr(redisKey).pexpire(redisKey, 2000).exec();
  const count = Number(replies?.[0]?.[1] ?? 0);
  if (count > limit) throw errors.rateLimit(1);
}

/** The rate limit guard. `RATE_LIMIT_PER_SECOND=0` turns it off. */
export function rateLimit(deps: AppDeps): Middleware<State> {
  return async (ctx, next) => {
    await countRequest(deps, ctx);
    await next();
  };
}
