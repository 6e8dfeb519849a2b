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

/** The origin of `doc_url` links and webhook job data: `PUBLIC_BASE_URL`, else the request's. */
export function baseUrlOf(config: Pick<Config, 'publicBaseUrl'>, ctx: { protocol: string; host: string }): string {
  return config.publicBaseUrl ?? `${ctx.protocol}://${ctx.host}`;
}
