/**
 * Headers that tell browsers and caches what to do with every answer (security
 * review L1):
 *
 * - Every answer: `X-Content-Type-Options: nosniff` (a JSON body is never run as a
 *   script or shown as a page) and `Referrer-Policy: no-referrer` (the checkout
 *   page's URL is a capability, and must not leak to where its links go).
 * - HTML pages (the test checkout page, `/docs`, `/docs/errors`): they cannot be
 *   framed, by old browsers (`X-Frame-Options`) or new (`frame-ancestors`).
 * - The API's answers (`/v1`, `/admin/v1`): `Cache-Control: no-store`. Some carry a
 *   secret (`whsec_…` on an endpoint's create and rotation, `client_secret` on a
 *   payment intent, `sk_…` on a key's issue); no proxy or browser cache keeps any.
 *
 * Set after the routes ran, errors included, and without replacing a header a route
 * chose itself (the dashboard sets its own framing rules).
 */
import type { Middleware } from 'koa';
import type { State } from '../context.js';

const NO_STORE_PREFIXES = ['/v1/', '/admin/v1/'];

export function securityHeaders(): Middleware<State> {
  return async (ctx, next) => {
    try {
      await next();
    } finally {
      const setDefault = (name: string, value: string) => {
        if (!ctx.response.get(name)) ctx.set(name, value);
      };
      setDefault('X-Content-Type-Options', 'nosniff');
      setDefault('Referrer-Policy', 'no-referrer');
      if (/^text\/html\b/i.test(ctx.response.get('Content-Type'))) {
        setDefault('X-Frame-Options', 'DENY');
        setDefault('Content-Security-Policy', "frame-ancestors 'none'");
      }
      const path = ctx.path;
      if (path === '/v1' || path === '/admin/v1' || NO_STORE_PREFIXES.some((prefix) => path.startsWith(prefix))) {
        ctx.set('Cache-Control', 'no-store');
      }
    }
  };
}
