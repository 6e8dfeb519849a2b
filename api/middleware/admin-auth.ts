import { createHash, timingSafeEqual } from 'node:crypto';
import type { Middleware } from 'koa';
import { errors } from '../../common/errors.js';
import type { State } from '../context.js';
import type { AdminFailures } from '../admin-failures.js';

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

/** Compares digests, so neither the length nor the content of the token leaks through timing. */
export function tokenMatches(given: string, expected: string): boolean {
  return timingSafeEqual(digest(given), digest(expected));
}

/**
 * `Authorization: Bearer $ADMIN_TOKEN`; the admin API does not exist without a token
 * configured. Failures are logged, counted and slowed per address (../admin-failures.ts).
 */
export function adminAuth(adminToken: string | null, failures?: AdminFailures): Middleware<State> {
  return async (ctx, next) => {
    const expected = adminToken;
    if (!expected) throw errors.routeNotFound(ctx.method, ctx.path);
    await failures?.refuseIfSlowed(ctx.ip);
    const match = /^Bearer +(\S+) *$/i.exec(ctx.get('Authorization'));
    if (!match) throw errors.adminTokenMissing();
    if (!tokenMatches(match[1] as string, expected)) {
      await failures?.failed(ctx.ip, 'admin_api');
      throw errors.apiKeyInvalid();
    }
    await next();
  };
}
