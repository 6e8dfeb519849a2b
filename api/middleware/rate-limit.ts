import type { Middleware } from 'koa';
import { errors } from '../../common/errors.js';
import type { AppDeps, State } from '../context.js';

/**
 * A fixed one-second window per API key, counted in Redis so that every api process
 * shares it. `RATE_LIMIT_PER_SECOND=0` turns it off.
 */
export function rateLimit(deps: AppDeps): Middleware<State> {
  const limit = deps.config.rateLimitPerSecond;
  return async (ctx, next) => {
    if (limit > 0 && ctx.state.key) {
      const second = Math.floor(deps.now() / 1000);
      const redisKey = `${deps.config.queuePrefix}:rl:${ctx.state.key._id}:${second}`;
      const replies = await deps.redis.multi().incr(redisKey).pexpire(redisKey, 2000).exec();
      const count = Number(replies?.[0]?.[1] ?? 0);
      if (count > limit) throw errors.rateLimit(1);
    }
    await next();
  };
}
