/**
 * What keeps an operator's browser from being used against the queue dashboard:
 * no framing or caching of any of its answers, and no change (a non-GET request)
 * that comes from another origin or that is anything but a retry or a clean.
 */
import type { Middleware } from 'koa';
import { ApiError } from '../../common/errors.js';
import { ownOrigin } from '../respond.js';

/** The changes the dashboard allows, as paths under it: retry and clean, of one job or of a state. */
const ALLOWED_ACTIONS = [/^\/api\/queues\/[^/]+\/(retry|clean)\/[^/]+$/, /^\/api\/queues\/[^/]+\/[^/]+\/(retry|clean)$/];

const SAFE_METHODS = new Set(['GET', 'HEAD']);

function forbidden(message: string): ApiError {
  return new ApiError('dashboard_action_forbidden', message);
}

/** No framing, no caching: set before anything else answers, and again after Bull Board has. */
export function protectDashboard(ctx: { set(name: string, value: string): void }): void {
  ctx.set('X-Frame-Options', 'DENY');
  ctx.set('Content-Security-Policy', "frame-ancestors 'none'");
  ctx.set('Cache-Control', 'no-store');
}

/** The origin a request that changes something came from, or null when it names none. */
function requestOrigin(ctx: { get(name: string): string }): string | null {
  const origin = ctx.get('Origin');
  if (origin !== '') return origin;
  const referer = ctx.get('Referer');
  if (referer === '') return null;
  try {
    return new URL(referer).origin;
  } catch {
    return 'invalid';
  }
}

/** Cross-origin changes are refused (CSRF); so is any change but retry and clean. */
export function guardDashboardChanges(basePath: string, publicBaseUrl: string | null): Middleware {
  return async (ctx, next) => {
    if (!SAFE_METHODS.has(ctx.method)) {
      const origin = requestOrigin(ctx);
      if (origin !== null && (origin === 'null' || origin !== ownOrigin({ publicBaseUrl }, ctx))) {
        throw forbidden('The dashboard accepts changes from its own pages only (the Origin or Referer is another site).');
      }
      const action = ctx.path.slice(basePath.length);
      if (ctx.method !== 'PUT' || !ALLOWED_ACTIONS.some((pattern) => pattern.test(action))) {
        throw forbidden('The dashboard can retry and clean jobs; it cannot add, edit or otherwise change them.');
      }
    }
    await next();
  };
}

