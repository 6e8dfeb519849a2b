/**
 * Bull Board at `/admin/queues`, behind HTTP Basic auth (user `admin`, password
 * `ADMIN_TOKEN`). The page, its static assets and its JSON API all sit under that
 * one prefix and all go through the same check; without `ADMIN_TOKEN` the dashboard
 * does not exist (404). It shows job data and return values as stored: create jobs
 * carry the validated input and ids, never an API key or a generated secret.
 */
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { KoaAdapter } from '@bull-board/koa';
import Router from '@koa/router';
import type { Queue } from 'bullmq';
import type { Middleware } from 'koa';
import { ApiError, errors, type ErrorCode } from '../../common/errors.js';
import { tokenMatches } from '../middleware/admin-auth.js';

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

/** The dashboard over the given queues (every queue of the service). */
export function dashboardRouter(adminToken: string | null, queues: Queue[]): Router {
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
  const router = new Router();
  router.all(route, basicAuth(adminToken), async (ctx) => {
    // One label for the whole dashboard in logs and metrics (Bull Board's own router
    // would otherwise leave its inner paths as the matched route).
    ctx.state.route = route;
    let unknownPath = false;
    await board(ctx, async () => {
      unknownPath = true;
    });
    if (unknownPath) throw errors.routeNotFound(ctx.method, ctx.path);
  });
  return router;
}
