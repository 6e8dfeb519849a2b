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

/**
 * The headers for an answer to `path` of type `contentType`, in the order they are
 * set; `replace`: over a header of the route's own with the name, else only where the
 * route set none.
 */
export function securityHeadersFor(path: string, contentType: string): Array<{ name: string; value: string; replace: boolean }> {
  const headers = [
    { name: 'X-Content-Type-Options', value: 'nosniff', replace: false },
    { name: 'Referrer-Policy', value: 'no-referrer', replace: false },
  ];
  if (/^text\/html\b/i.test(contentType)) {
    headers.push({ name: 'X-Frame-Options', value: 'DENY', replace: false });
    headers.push({ name: 'Content-Security-Policy', value: "frame-ancestors 'none'", replace: false });
  }
  if (path === '/v1' || path === '/admin/v1' || NO_STORE_PREFIXES.some((prefix) => path.startsWith(prefix))) {
    headers.push({ name: 'Cache-Control', value: 'no-store', replace: true });
  }
  return headers;
}

export function securityHeaders(): Middleware<State> {
  return async (ctx, next) => {
    try {
      await next();
    } finally {
      for (const { name, value, replace } of securityHeadersFor(ctx.path, ctx.response.get('Content-Type'))) {
        if (replace || !ctx.response.get(name)) ctx.set(name, value);
      }
    }
  };
}
