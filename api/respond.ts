import type { Ctx } from './context.js';
import type { Config } from '../common/config.js';

/** Set as is: `ctx.type =` would look the type up in the MIME database on every answer. */
export const JSON_TYPE = 'application/json; charset=utf-8';

/** Answers with JSON already serialised (stored event JSON, recorded replays). */
export function sendJson(ctx: Ctx, body: string, status = 200): void {
  ctx.status = status;
  ctx.set('Content-Type', JSON_TYPE);
  ctx.body = body;
}

/** A Host header that names a host: a name or an IPv4 address, or an IPv6 one in brackets, and a port. */
const HOST_HEADER = /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,62})(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}))*\.?|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$/;

/**
 * The origin of `doc_url` links and of the error bodies workers write:
 * `PUBLIC_BASE_URL`, else the request's own, taken from its Host header (which the
 * client chooses: set `PUBLIC_BASE_URL` in production). A Host header that is
 * missing or names no host gives the address the api listens on, so the link is
 * always an absolute URL and never carries what such a header held.
 */
export function baseUrlOf(config: Pick<Config, 'publicBaseUrl'> & Partial<Pick<Config, 'host' | 'port'>>, ctx: { protocol: string; host: string }): string {
  if (config.publicBaseUrl) return config.publicBaseUrl;
  if (HOST_HEADER.test(ctx.host)) return `${ctx.protocol}://${ctx.host}`;
  const host = config.host === undefined || config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
  return `${ctx.protocol}://${host.includes(':') ? `[${host}]` : host}:${config.port ?? 3000}`;
}

/** The service's own origin (scheme, host and port), as browsers write it in `Origin`. */
export function ownOrigin(config: Pick<Config, 'publicBaseUrl'>, ctx: { protocol: string; host: string }): string | null {
  // A Host header that is no host: no origin is ours.
  if (!config.publicBaseUrl && !HOST_HEADER.test(ctx.host)) return null;
  try {
    return new URL(baseUrlOf(config, ctx)).origin;
  } catch {
    return null; // a Host header that is no host: no origin is ours
  }
}
