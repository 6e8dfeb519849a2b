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

/**
 * The origin of `doc_url` links and of the error bodies workers write:
 * `PUBLIC_BASE_URL`, else the request's own, taken from its Host header (which the
 * client chooses: set `PUBLIC_BASE_URL` in production).
 */
export function baseUrlOf(config: Pick<Config, 'publicBaseUrl'>, ctx: { protocol: string; host: string }): string {
  return config.publicBaseUrl ?? `${ctx.protocol}://${ctx.host}`;
}

/** The service's own origin (scheme, host and port), as browsers write it in `Origin`. */
export function ownOrigin(config: Pick<Config, 'publicBaseUrl'>, ctx: { protocol: string; host: string }): string | null {
  try {
    return new URL(baseUrlOf(config, ctx)).origin;
  } catch {
    return null; // a Host header that is no host: no origin is ours
  }
}
