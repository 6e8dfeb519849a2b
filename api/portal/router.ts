/**
 * The merchant portal at `/portal` (DESIGN section 18; docs/portal.md): server-made
 * HTML pages, a small script and a style sheet, all from this origin. A page reads
 * and writes through `/v1` with the session's key (v1-client.ts): the portal is a
 * client of the API, not a back door, so what a key cannot do there it cannot do here.
 *
 * Sign-in takes a secret key (test or live), checks it as `/v1` does, and opens a
 * session (sessions.ts). Every POST but the sign-in's must carry the session's CSRF
 * token (a synchronizer token in each form), and an `Origin`, when the browser sends
 * one, must be this origin; the sign-in form carries a token of its own, doubled in a
 * short-lived cookie. A POST refused for either changes nothing and answers 403.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes, createHash } from 'node:crypto';
import Router from '@koa/router';
import getRawBody from 'raw-body';
import { looksLikeKey } from '../../common/api-keys.js';
import { Seal } from '../../common/seal.js';
import type { AppDeps, Ctx, State } from '../context.js';
import { overAddressLimit } from '../middleware/rate-limit.js';
import { CSS, esc, page, type Frame, type Notice } from './html.js';
import { PortalSessions, sameSecret, SESSION_COOKIE, SESSION_TTL_S, type Session } from './sessions.js';
import { V1Client } from './v1-client.js';
import { paymentPages } from './payments.js';
import { webhookPages } from './webhooks.js';
import { keyPages } from './keys.js';
import { moneyPages } from './money.js';

/** What a page handler gets. */
export interface PortalRequest {
  frame: Frame;
  v1: V1Client;
  params: Record<string, string>;
  query: URLSearchParams;
  /** The POSTed form (writes only). */
  form: Record<string, string>;
  /** The write's idempotency key: the session's and the form's nonce. */
  idempotencyKey: string;
  session: Session;
  /** After a roll of the session's own key: its calls use the new one. */
  replaceKey(key: { keyId: string; secret: string }): Promise<void>;
}

export type PortalAnswer = { html: string; status?: number } | { redirect: string } | { file: { name: string; type: string; body: string } };
export type PortalHandler = (req: PortalRequest) => Promise<PortalAnswer>;

export interface PortalRoutes {
  get(path: string, handler: PortalHandler): void;
  post(path: string, handler: PortalHandler): void;
}

/** A page, or the error a read from `/v1` gave. */
export function errorPage(req: PortalRequest, title: string, active: string, notice: Notice, status = 200): PortalAnswer {
  return { html: page(title, '', { frame: req.frame, active, notice }), status };
}

const FORM_LIMIT = 1024 * 1024;
const SIGNIN_COOKIE = 'portal_signin';

/** The browser script, as `npm run build` bundled it (scripts/lib/bundle.mjs). */
function loadScript(): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const candidates = [path.join(here, 'portal.js'), path.join(here, '..', '..', 'bundle', 'portal.js'), path.join(here, '..', 'bundle', 'portal.js')];
  const found = candidates.find((file) => existsSync(file));
  return found ? readFileSync(found, 'utf8') : '';
}

const POLICY = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

export function portalRouter(deps: AppDeps): Router<State> {
  const router = new Router<State>({ prefix: '/portal' });
  const sessions = new PortalSessions(deps.redis, deps.config.queuePrefix, new Seal(deps.mongo.collections.serviceKeys, 'portal_session', { reloadMs: deps.config.serviceKeysReloadMs }));
  const script = loadScript();
  const selfUrl = () => deps.selfUrl?.() ?? null;

  const secure = (ctx: Ctx) => ctx.protocol === 'https' || (deps.config.publicBaseUrl ?? '').startsWith('https:');
  const cookie = (ctx: Ctx, name: string, value: string, maxAgeS: number) =>
    ctx.append('Set-Cookie', `${name}=${value}; Path=/portal; HttpOnly; SameSite=Strict; Max-Age=${maxAgeS}${secure(ctx) ? '; Secure' : ''}`);
  const cookieOf = (ctx: Ctx, name: string) => {
    for (const part of (ctx.get('Cookie') || '').split(';')) {
      const eq = part.indexOf('=');
      if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
    }
    return undefined;
  };
  const html = (ctx: Ctx, body: string, status = 200) => {
    ctx.status = status;
    ctx.type = 'html';
    ctx.set('Cache-Control', 'no-store');
    ctx.set('Content-Security-Policy', POLICY);
    // Under the service's `no-referrer`, browsers send `Origin: null` with a form's
    // POST: the origin check needs the real one, which same-origin requests then carry.
    ctx.set('Referrer-Policy', 'same-origin');
    ctx.body = body;
  };
  const forbidden = (ctx: Ctx, why: string) => html(ctx, page('Refused', `<p>${esc(why)}</p><p><a href="/portal/payments">Back to the portal</a></p>`), 403);
  const sameOrigin = (ctx: Ctx) => {
    const origin = ctx.get('Origin');
    if (!origin || origin === 'null') return origin !== 'null';
    try {
      return new URL(origin).host === ctx.host;
    } catch {
      return false;
    }
  };
  const readForm = async (ctx: Ctx): Promise<Record<string, string>> => {
    const type = (ctx.get('Content-Type') || '').split(';')[0]!.trim().toLowerCase();
    if (type !== 'application/x-www-form-urlencoded') return {};
    const text = (await getRawBody(ctx.req, { limit: FORM_LIMIT, encoding: 'utf8' })) as string;
    const out: Record<string, string> = Object.create(null) as Record<string, string>;
    for (const [name, value] of new URLSearchParams(text)) out[name] = value;
    return out;
  };

  router.get('/assets/portal.css', (ctx) => {
    ctx.type = 'text/css';
    ctx.set('Cache-Control', 'public, max-age=300');
    ctx.body = CSS;
  });
  router.get('/assets/portal.js', (ctx) => {
    ctx.type = 'application/javascript';
    ctx.set('Cache-Control', 'public, max-age=300');
    ctx.body = script;
  });

  const signInPage = (ctx: Ctx, error: string | null, status = 200) => {
    const token = randomBytes(24).toString('base64url');
    cookie(ctx, SIGNIN_COOKIE, token, 3600);
    html(
      ctx,
      page(
        'Sign in',
        `<div class="signin"><form method="post" action="/portal/sign-in" class="card"><input type="hidden" name="csrf" value="${token}">
<label>Secret key (sk_test_… or sk_live_…)<input type="password" name="key" id="key" autocomplete="off" required></label>
<button type="submit" id="sign-in">Sign in</button></form>
<p class="empty">The key is kept on the server for this session only, never in your browser. A live key sees live data only.</p></div>`,
        { notice: { error } },
      ),
      status,
    );
  };

  router.get('/', (ctx) => ctx.redirect('/portal/payments'));
  router.get('/sign-in', (ctx) => signInPage(ctx, null));
  router.post('/sign-in', async (ctx) => {
    const form = await readForm(ctx);
    const expected = cookieOf(ctx, SIGNIN_COOKIE);
    if (!sameOrigin(ctx) || !expected || !form.csrf || !sameSecret(expected, form.csrf)) return forbidden(ctx, 'This sign-in form has expired or did not come from this site. Open the sign-in page again.');
    const secret = (form.key ?? '').trim();
    const key = looksLikeKey(secret) ? await deps.keys.lookup(secret) : null;
    if (!key) {
      if (await overAddressLimit(deps, 'auth', ctx.ip)) return signInPage(ctx, 'Too many failed sign-ins from this address: wait a second and retry.', 429);
      return signInPage(ctx, 'Invalid API key: give a secret key of your project (sk_test_… or sk_live_…) that is not revoked.', 401);
    }
    const token = await sessions.create({ keyId: key._id, project: key.project, livemode: key.livemode, secret });
    cookie(ctx, SIGNIN_COOKIE, '', 0);
    cookie(ctx, SESSION_COOKIE, token, SESSION_TTL_S);
    ctx.status = 303;
    ctx.redirect('/portal/payments');
  });

  router.post('/sign-out', async (ctx) => {
    const token = cookieOf(ctx, SESSION_COOKIE);
    const session = await sessions.get(token);
    const form = await readForm(ctx);
    if (session && (!sameOrigin(ctx) || !form.csrf || !sameSecret(session.csrf, form.csrf))) return forbidden(ctx, 'This form did not come from this site.');
    await sessions.destroy(token);
    cookie(ctx, SESSION_COOKIE, '', 0);
    ctx.status = 303;
    ctx.redirect('/portal/sign-in');
  });

  const routes: PortalRoutes = {
    get: (p, handler) => router.get(p, (ctx) => serve(ctx, handler, false)),
    post: (p, handler) => router.post(p, (ctx) => serve(ctx, handler, true)),
  };

  async function serve(ctx: Ctx, handler: PortalHandler, write: boolean): Promise<void> {
    const token = cookieOf(ctx, SESSION_COOKIE);
    const session = await sessions.get(token);
    if (!session) {
      if (write) return forbidden(ctx, 'You are signed out: sign in again, then repeat what you did.');
      ctx.status = 303;
      return ctx.redirect('/portal/sign-in');
    }
    let form: Record<string, string> = {};
    if (write) {
      form = await readForm(ctx);
      if (!sameOrigin(ctx) || !form.csrf || !sameSecret(session.csrf, form.csrf)) return forbidden(ctx, 'This form did not come from this site (its CSRF token is missing or wrong): nothing was changed.');
    }
    const nonce = /^[A-Za-z0-9_-]{8,64}$/.test(form.nonce ?? '') ? (form.nonce as string) : randomBytes(12).toString('base64url');
    const req: PortalRequest = {
      frame: { project: session.project, livemode: session.livemode, csrf: session.csrf },
      v1: new V1Client(selfUrl, session.secret),
      params: ctx.params as Record<string, string>,
      query: new URLSearchParams(ctx.querystring),
      form,
      idempotencyKey: `portal-${createHash('sha256').update(session.csrf).digest('hex').slice(0, 12)}-${nonce}`,
      session,
      replaceKey: (key) => sessions.replaceKey(token as string, key),
    };
    const answer = await handler(req);
    // The key was revoked meanwhile (rolled or revoked elsewhere): `/v1` said 401, so the session ends.
    if (req.v1.unauthorized) {
      await sessions.destroy(token);
      cookie(ctx, SESSION_COOKIE, '', 0);
      return signInPage(ctx, 'The key of this session was revoked: sign in with a valid key.', 401);
    }
    if ('redirect' in answer) {
      ctx.status = 303;
      return ctx.redirect(answer.redirect);
    }
    if ('file' in answer) {
      ctx.type = answer.file.type;
      ctx.set('Cache-Control', 'no-store');
      ctx.set('Content-Disposition', `attachment; filename="${answer.file.name}"`);
      ctx.body = answer.file.body;
      return;
    }
    html(ctx, answer.html, answer.status ?? 200);
  }

  paymentPages(routes);
  webhookPages(routes);
  keyPages(routes);
  moneyPages(routes);
  return router;
}
