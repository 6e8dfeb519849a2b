import type { Middleware } from 'koa';
import { errors } from '../../common/errors.js';
import type { Ctx, State } from '../context.js';

/** Middleware chains in the contract's order: auth, rate limit, body, then the handler. */
export interface Guards {
  read: Array<Middleware<State>>;
  write: Array<Middleware<State>>;
}

export function makeGuards(chain: { auth: Middleware<State>; rateLimit: Middleware<State>; body: Middleware<State> }): Guards {
  return {
    read: [chain.auth, chain.rateLimit],
    write: [chain.auth, chain.rateLimit, chain.body],
  };
}

/** Set as is: `ctx.type =` would look the type up in the MIME database on every answer. */
export const JSON_TYPE = 'application/json; charset=utf-8';

export function sendJson(ctx: Ctx, body: string, status = 200): void {
  ctx.status = status;
  ctx.set('Content-Type', JSON_TYPE);
  ctx.body = body;
}

/** Retrieve routes take no query parameters. */
export function rejectQuery(ctx: Ctx): void {
  const params = new URLSearchParams(ctx.querystring);
  for (const name of params.keys()) throw errors.parameterUnknown(name);
}
