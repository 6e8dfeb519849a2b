/**
 * Bull Board at `/admin/queues`, behind HTTP Basic auth (user `admin`, password
 * `ADMIN_TOKEN`). The page, its static assets and its JSON API all sit under that
 * one prefix and all go through the same checks; without `ADMIN_TOKEN` the dashboard
 * does not exist (404). It shows job data and return values as stored: create jobs
 * carry the validated input and ids, never an API key or a generated secret.
 *
 * An operator's browser holds the Basic credentials, so any page it visits could
 * act through it. Hence:
 * - a request that changes anything must come from the service's own origin
 *   (`Origin`, else `Referer`; a client sending neither is not a browser page);
 * - the only changes are retrying and cleaning jobs. Bull Board's read-only mode
 *   would forbid retries too, and it has no option to forbid adding or editing
 *   jobs alone, so its API is allowed through a list of actions: a job added to
 *   `creates` would create an object in any project;
 * - the dashboard cannot be framed or cached.
 */
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { KoaAdapter } from '@bull-board/koa';
import Router from '@koa/router';
import type { Queue } from 'bullmq';
import type { Middleware } from 'koa';
import { ApiError, errors, type ErrorCode } from '../../common/errors.js';
import { tokenMatches } from '../middleware/admin-auth.js';
import { ownOrigin } from '../respond.js';

type BoardServerAdapter = Parameters<typeof createBullBoard>[0]['serverAdapter'];

export const DASHBOARD_PATH = '/admin/queues';
const USER = 'admin';
const CHALLENGE = { 'WWW-Authenticate': 'Basic realm="queues"' };

function unauthorized(code: ErrorCode, message: string): ApiError {
  return new ApiError(code, message, undefined, CHALLENGE);
}

/**
 * Both the user and the password are compared, in constant time, before deciding,
 * and every wrong pair gets the same answer: nothing tells whether the user exists.
 */
function basicAuth(adminToken: string | null): Middleware {
  return async (ctx, next) => {
    if (!adminToken) throw errors.routeNotFound(ctx.method, ctx.path);
    const match = /^Basic +([A-Za-z0-9+/]+={0,2}) *$/i.exec(ctx.get('Authorization'));
    if (!match) throw unauthorized('api_key_missing', `Sign in with user "${USER}" and the admin token (HTTP Basic auth).`);
    const decoded = Buffer.from(match[1] as string, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    const user = colon < 0 ? decoded : decoded.slice(0, colon);
    const password = colon < 0 ? '' : decoded.slice(colon + 1);
    const userOk = tokenMatches(user, USER);
    const passwordOk = tokenMatches(password, adminToken);
    if (!(userOk && passwordOk)) throw unauthorized('api_key_invalid', 'Invalid user name or password.');
    await next();
  };
}

/** The changes the dashboard allows, as paths under it: retry and clean, of one job or of a state. */
const ALLOWED_ACTIONS = [/^\/api\/queues\/[^/]+\/(retry|clean)\/[^/]+$/, /^\/api\/queues\/[^/]+\/[^/]+\/(retry|clean)$/];

const SAFE_METHODS = new Set(['GET', 'HEAD']);

function forbidden(message: string): ApiError {
  return new ApiError('dashboard_action_forbidden', message);
}

/** No framing, no caching: set before anything else answers, and again after Bull Board has. */
function protect(ctx: { set(name: string, value: string): void }): void {
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
function guardChanges(publicBaseUrl: string | null): Middleware {
  return async (ctx, next) => {
    if (!SAFE_METHODS.has(ctx.method)) {
      const origin = requestOrigin(ctx);
      if (origin !== null && (origin === 'null' || origin !== ownOrigin({ publicBaseUrl }, ctx))) {
        throw forbidden('The dashboard accepts changes from its own pages only (the Origin or Referer is another site).');
      }
      const action = ctx.path.slice(DASHBOARD_PATH.length);
      if (ctx.method !== 'PUT' || !ALLOWED_ACTIONS.some((pattern) => pattern.test(action))) {
        throw forbidden('The dashboard can retry and clean jobs; it cannot add, edit or otherwise change them.');
      }
    }
    await next();
  };
}

/** The dashboard over the given queues (every queue of the service); no routes at all without a token. */
export function dashboardRouter(adminToken: string | null, queues: Queue[], publicBaseUrl: string | null = null): Router {
  const router = new Router();
  if (!adminToken) return router;
  const serverAdapter = new KoaAdapter();
  serverAdapter.setBasePath(DASHBOARD_PATH);
  createBullBoard({
    queues: queues.map((queue) => new BullMQAdapter(queue)),
    // @bull-board/koa 9.10.1 pins its own copy of @bull-board/api 9.10.1, whose
    // adapter types differ from 9.10.2's only by private members; it uses none of
    // that copy at run time.
    serverAdapter: serverAdapter as unknown as BoardServerAdapter,
    options: { uiConfig: { boardTitle: 'Payments queues' } },
  });
  // The adapter returns a koa-mount middleware over its own Koa app (views, static
  // files, JSON API). It is run inside one route of ours, after the auth check; a
  // path it does not know falls through to our 404 rather than to the next router.
  const board = serverAdapter.registerPlugin() as unknown as Middleware;

  const route = `${DASHBOARD_PATH}{/*rest}`;
  const headers: Middleware = async (ctx, next) => {
    // One label for the whole dashboard in logs and metrics (Bull Board's own router
    // would otherwise leave its inner paths as the matched route).
    ctx.state.route = route;
    protect(ctx);
    await next();
  };
  router.all(route, headers, basicAuth(adminToken), guardChanges(publicBaseUrl), async (ctx) => {
    let unknownPath = false;
    try {
      await board(ctx, async () => {
        unknownPath = true;
      });
    } finally {
      protect(ctx);
    }
    if (unknownPath) throw errors.routeNotFound(ctx.method, ctx.path);
  });
  return router;
}
