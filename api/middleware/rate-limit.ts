import type { Middleware } from 'koa';
import { errors } from '../../common/errors.js';
import { handedOnOf, type AppDeps, type State } from '../context.js';

/**
 * Counts a request against its key's limit: a fixed one-second window per API key,
 * counted in Redis so that every api process shares it. True past the limit.
 */
export async function overRateLimit(deps: Pick<AppDeps, 'config' | 'redis' | 'now'>, keyId: string): Promise<boolean> {
  const second = Math.floor(deps.now() / 1000);
  const redisKey = `${deps.config.queuePrefix}:rl:${keyId}:${second}`;
  const replies = await deps.redis.multi().incr(redisKey).pexpire(redisKey, 2000).exec();
  return Number(replies?.[0]?.[1] ?? 0) > deps.config.rateLimitPerSecond;
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
      const over = earlier === undefined ? await overRateLimit(deps, key._id) : earlier === 'over';
      if (over) throw errors.rateLimit(1);
    }
    await next();
  };
}
