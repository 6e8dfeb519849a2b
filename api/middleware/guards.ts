import type { Middleware } from 'koa';
import type { State } from '../context.js';

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
