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
 *
 * Its page loads nothing from another host: the link to a public font service is
 * taken out of its HTML.
 */
import { createBullBoard } from '@bull-board/api';
import type { AdminFailures } from '../admin-failures.js';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { KoaAdapter } from '@bull-board/koa';
import Router from '@koa/router';
import type { Queue } from 'bullmq';
import type { Middleware } from 'koa';
import { ApiError, errors, type ErrorCode } from '../../common/errors.js';
import { isInfrastructureError } from '../../common/infra-errors.js';
import { tokenMatches } from '../middleware/admin-auth.js';
import { guardDashboardChanges, protectDashboard } from '../middleware/dashboard-guard.js';

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
function basicAuth(adminToken: string | null, failures?: AdminFailures): Middleware {
  return async (ctx, next) => {
    if (!adminToken) throw errors.routeNotFound(ctx.method, ctx.path);
    await failures?.refuseIfSlowed(ctx.ip);
    const match = /^Basic +([A-Za-z0-9+/]+={0,2}) *$/i.exec(ctx.get('Authorization'));
    if (!match) throw unauthorized('api_key_missing', `Sign in with user "${USER}" and the admin token (HTTP Basic auth).`);
    const decoded = Buffer.from(match[1] as string, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    const user = colon < 0 ? decoded : decoded.slice(0, colon);
    const password = colon < 0 ? '' : decoded.slice(colon + 1);
    const userOk = tokenMatches(user, USER);
    const passwordOk = tokenMatches(password, adminToken);
    if (!(userOk && passwordOk)) {
      await failures?.failed(ctx.ip, 'dashboard');
      throw unauthorized('api_key_invalid', 'Invalid user name or password.');
    }
    await next();
  };
}

/** Marks an error Bull Board caught, so that our error middleware renders it. */
const THROWN = Symbol('thrown by a dashboard handler');

/** What Bull Board (or its body parser) threw, as an error of ours. */
function thrownByBoard(thrown: unknown): unknown {
  if (isInfrastructureError(thrown)) return thrown;
  const status = (thrown as { status?: number; statusCode?: number }).status ?? (thrown as { statusCode?: number }).statusCode;
  if (status === 413) return errors.bodyTooLarge(1024 * 1024);
  if (status === 415) return errors.contentTypeInvalid();
  // A body that is not JSON, or JSON that is not an object or array.
  if (thrown instanceof SyntaxError || (status !== undefined && status >= 400 && status < 500)) {
    return errors.invalidJson('the dashboard could not read it');
  }
  return thrown;
}

/**
 * Bull Board's own error answers in the contract's envelope: what its handlers
 * threw (a lost Redis is a 503, anything else a 500 whose details stay in the log),
 * its 404 for an unknown queue or job, its 405 with `Allow`, its 400s.
 */
function boardError(ctx: { method: string; path: string; status: number; body: unknown; response: { get(name: string): string } }): unknown {
  const body = ctx.body as Record<PropertyKey, unknown> | null;
  const thrown = body && typeof body === 'object' ? body[THROWN] : undefined;
  if (thrown !== undefined) return thrownByBoard(thrown);
  const key = typeof body?.error === 'object' ? String((body.error as { key?: unknown }).key ?? '') : '';
  if (ctx.status === 404) return errors.routeNotFound(ctx.method, ctx.path);
  if (ctx.status === 405) return errors.methodNotAllowed(ctx.method, ctx.response.get('Allow').split(/\s*,\s*/).filter(Boolean));
  if (ctx.status < 500) return new ApiError('parameter_invalid', `The dashboard refused the request${key ? ` (${key})` : ''}.`);
  return new Error(`dashboard answered ${ctx.status}${key ? ` ${key}` : ''}`);
}

/** Fields of job data never shown, whatever job carries them (an older version's, one added by hand). */
const SECRET_FIELDS = new Set(['phone_number', 'otp', 'secret', 'client_secret', 'previous_secret']);
/** A string that looks like a full phone number (E.164). */
const PHONE = /^\+\d{8,15}$/;

/**
 * Job data as the dashboard shows it: no phone number, one-time code or secret.
 * Jobs carry none (common/jobs.ts), but a job left by an older version, or a
 * forged one, might; the dashboard's credential must not read payers' data.
 */
export function maskJobData(data: unknown): unknown {
  if (Array.isArray(data)) return data.map(maskJobData);
  if (typeof data === 'string') return PHONE.test(data) ? `${data.slice(0, 4)}…${data.slice(-3)}` : data;
  if (data === null || typeof data !== 'object') return data;
  return Object.fromEntries(
    Object.entries(data as Record<string, unknown>).map(([field, value]) => [
      field,
      SECRET_FIELDS.has(field) && value !== null && value !== undefined ? '[masked]' : maskJobData(value),
    ]),
  );
}

/**
 * Bull Board's page links its fonts from a public font service: on a closed network
 * that request fails, and on an open one it tells the service of every operator's
 * page view. The link is dropped; the page falls back to the system's sans-serif
 * and monospace fonts, and loads nothing from another host.
 */
const PUBLIC_FONT_LINK = /<link\b[^>]*\bhref="https:\/\/fonts\.(?:googleapis|gstatic)\.com\/[^"]*"[^>]*>\s*/gi;

export function withoutPublicFonts(html: string): string {
  return html.replace(PUBLIC_FONT_LINK, '');
}

/** The dashboard over the given queues (every queue of the service); no routes at all without a token. */
export function dashboardRouter(adminToken: string | null, queues: Queue[], publicBaseUrl: string | null = null, failures?: AdminFailures): Router {
  const router = new Router();
  if (!adminToken) return router;
  const serverAdapter = new KoaAdapter();
  serverAdapter.setBasePath(DASHBOARD_PATH);
  createBullBoard({
    queues: queues.map((queue) => {
      const adapter = new BullMQAdapter(queue);
      adapter.setFormatter('data', maskJobData);
      return adapter;
    }),
    // @bull-board/koa 9.10.1 pins its own copy of @bull-board/api 9.10.1, whose
    // adapter types differ from 9.10.2's only by private members; it uses none of
    // that copy at run time.
    serverAdapter: serverAdapter as unknown as BoardServerAdapter,
    options: { uiConfig: { boardTitle: 'Payments queues' } },
  });
  // Bull Board's app catches what its handlers throw and answers in its own format
  // (with the raw error message); hand it back to ours instead.
  serverAdapter.setErrorHandler((err) => ({ status: 500, body: { [THROWN]: err } }));
  // The adapter returns a koa-mount middleware over its own Koa app (views, static
  // files, JSON API). It is run inside one route of ours, after the auth check; a
  // path it does not know falls through to our 404 rather than to the next router.
  const board = serverAdapter.registerPlugin() as unknown as Middleware;

  const route = `${DASHBOARD_PATH}{/*rest}`;
  const headers: Middleware = async (ctx, next) => {
    // One label for the whole dashboard in logs and metrics (Bull Board's own router
    // would otherwise leave its inner paths as the matched route).
    ctx.state.route = route;
    protectDashboard(ctx);
    await next();
  };
  router.all(route, headers, basicAuth(adminToken, failures), guardDashboardChanges(DASHBOARD_PATH, publicBaseUrl), async (ctx) => {
    let unknownPath = false;
    try {
      await board(ctx, async () => {
        unknownPath = true;
      });
    } catch (err) {
      // Its body parser runs before its own error handler.
      throw thrownByBoard(err);
    } finally {
      protectDashboard(ctx);
    }
    if (unknownPath) throw errors.routeNotFound(ctx.method, ctx.path);
    if (ctx.status >= 400) throw boardError(ctx);
    if (typeof ctx.body === 'string' && ctx.response.is('html')) ctx.body = withoutPublicFonts(ctx.body);
  });
  return router;
}
