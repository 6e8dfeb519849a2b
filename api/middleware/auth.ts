import type { Middleware } from 'koa';
import { errors } from '../../common/errors.js';
import type { AppDeps, State } from '../context.js';
import { overAddressLimit } from './rate-limit.js';

/**
 * The secret key of a request: `Authorization: Bearer sk_…`, or HTTP Basic with the
 * key as the user name and an empty password (`curl -u sk_test_…:`, as Stripe's own
 * docs call the API). With Basic, a key given as the password behind an empty user
 * name counts too. Null when no key was given at all; a header of either scheme that
 * carries something is that something, so a wrong key is `api_key_invalid`.
 */
export function keyOf(header: string): string | null {
  const bearer = /^Bearer +(\S+) *$/i.exec(header);
  if (bearer) return bearer[1] as string;
  const basic = /^Basic +(\S*) *$/i.exec(header);
  if (!basic) return null;
  const decoded = Buffer.from(basic[1] as string, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  const user = colon < 0 ? decoded : decoded.slice(0, colon);
  const password = colon < 0 ? '' : decoded.slice(colon + 1);
  const key = user !== '' ? user : password;
  return key === '' ? null : key;
}

/**
 * The key's project and mode scope everything after. The admin token is no key, by
 * either scheme. Failed authentications count against the client address's limit
 * (DESIGN section 20): past it they are 429, so guessing keys is slow.
 */
export function authenticate(deps: AppDeps): Middleware<State> {
  const refused = async (ctx: { ip: string }, err: Error) => {
    if (await overAddressLimit(deps, 'auth', ctx.ip)) return errors.rateLimit(1);
    return err;
  };
  return async (ctx, next) => {
    const given = keyOf(ctx.get('Authorization'));
    if (given === null) throw await refused(ctx, errors.apiKeyMissing());
    const key = await deps.keys.lookup(given);
    if (!key) throw await refused(ctx, errors.apiKeyInvalid());
    ctx.state.key = key;
    await next();
  };
}
