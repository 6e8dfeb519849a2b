import { createHash, timingSafeEqual } from 'node:crypto';
import type { Middleware } from 'koa';
import { errors } from '../../common/errors.js';
import type { State } from '../context.js';

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

/** Compares digests, so neither the length nor the content of the token leaks through timing. */
export function tokenMatches(given: string, expected: string): boolean {
  return timingSafeEqual(digest(given), digest(expected));
}

/** `Authorization: Bearer $ADMIN_TOKEN`; the admin API does not exist without a token configured. */
export function adminAuth(adminToken: string | null): Middleware<State> {
  return async (ctx, next) => {
    const expected = adminToken;
    if (!expected) throw errors.routeNotFound(ctx.method, ctx.path);
    const match = /^Bearer +(\S+) *$/i.exec(ctx.get('Authorization'));
    if (!match) throw errors.adminTokenMissing();
    if (!tokenMatches(match[1] as string, expected)) throw errors.apiKeyInvalid();
    await next();
  };
}
