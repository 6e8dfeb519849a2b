/**
 * Replays before routing. A request with an `Idempotency-Key` whose key, scope,
 * method, path, `Content-Type` header and body text are those of a request this
 * process answered (or replayed) is given that answer here, without routing, parsing
 * or canonicalising its body (../idempotency/replay-cache.ts, `sent`). The same
 * bytes make the same canonical request, so the answer is the one the route would
 * give: the recorded status and body with `Idempotent-Replayed: true`, and every
 * header the outer middleware adds, its log line and its metrics under the route's
 * template.
 *
 * The guards keep their order: the key is looked up as the auth guard looks it up,
 * the request is counted against the key's rate limit once (a 429 stops it here as
 * there), and the body is read with the body guard's limit and errors, only when the
 * `Content-Type` header is the kept one (another would be refused by the guard
 * before its body is read). Anything else goes on to the routes: a key not cached, an
 * answer not kept, other bytes (the same JSON value in another order is still a
 * replay, matched there by its canonical form), with the body read so far handed on.
 */
import type { Middleware } from 'koa';
import type { AppDeps, State } from '../context.js';
import { memoryKeyOf } from '../idempotency/keyed-request.js';
import type { ReplayCache } from '../idempotency/replay-cache.js';
import { keyOf } from '../middleware/auth.js';
import { readBodyText } from '../middleware/body.js';
import { countRequest } from '../middleware/rate-limit.js';
import { sendAnswer } from './create.js';

/** Methods no answer is recorded for. */
const READS = new Set(['GET', 'HEAD', 'OPTIONS']);

export function replayFromMemory(deps: AppDeps, replays: ReplayCache): Middleware<State> {
  return async (ctx, next) => {
    const idempotencyKey = ctx.headers['idempotency-key'];
    if (typeof idempotencyKey !== 'string' || READS.has(ctx.method) || replays.size === 0) return next();
    const given = keyOf(ctx.get('Authorization'));
    const key = given === null ? null : await deps.keys.lookup(given);
    if (!key) return next();
    const sent = replays.get(memoryKeyOf(key, idempotencyKey))?.sent;
    if (!sent || sent.method !== ctx.method || sent.path !== ctx.path || sent.contentType !== ctx.get('Content-Type')) return next();
    ctx.state.key = key;
    await countRequest(deps, ctx);
    const text = await readBodyText(ctx);
    ctx.state.bodyText = text;
    // Read again: the entry may have expired, or been replaced, while the body came in.
    const kept = replays.get(memoryKeyOf(key, idempotencyKey));
    if (kept?.sent !== sent || text !== sent.text) return next();
    ctx.state.route = sent.route;
    replays.answeredAsSent += 1;
    sendAnswer(ctx, { status: kept.status, body: kept.body, replayed: true });
  };
}
