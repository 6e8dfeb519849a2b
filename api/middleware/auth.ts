import type { Middleware } from 'koa';
import { errors } from '../../common/errors.js';
import type { AppDeps, State } from '../context.js';

/** `Authorization: Bearer sk_…`; the key's project and mode scope everything after. */
export function authenticate(deps: AppDeps): Middleware<State> {
  return async (ctx, next) => {
    const header = ctx.get('Authorization');
    const match = /^Bearer +(\S+) *$/i.exec(header);
    if (!match) throw errors.apiKeyMissing();
    const key = await deps.keys.lookup(match[1] as string);
    if (!key) throw errors.apiKeyInvalid();
    ctx.state.key = key;
    await next();
  };
}
