/**
 * Replays at the door, before Koa. A request with an `Idempotency-Key` whose key,
 * scope, method, path, `Content-Type` header and body text are those of a request
 * this process answered (or replayed) is given that answer from memory
 * (../idempotency/replay-cache.ts, `sent`), without a Koa context, routing, parsing
 * or canonicalising its body. The same bytes make the same canonical request, so the
 * answer is the one the routes would give: the recorded status and body with
 * `Idempotent-Replayed: true`, the headers the outer middleware gives every answer
 * (the same functions make them: `securityHeadersFor`, `shouldRetry`), and the
 * request's log line and metrics under the route's template (`recordRequest`).
 *
 * The guards keep their order: the key is looked up as the auth guard looks it up,
 * the request is counted against the key's rate limit before its body is read, and
 * the body is read with the body guard's limit and errors, only when the
 * `Content-Type` header is the kept one. Anything else goes on to Koa, with what was
 * done so far handed on (../context.ts, `handOn`): a 429 past the limit, or the
 * error reading the body, is then the guard's, with no second count or read. That
 * covers a key not cached, an answer not kept, other bytes (the same JSON value in
 * another order is still a replay, matched there by its canonical form), and a
 * failure of Redis or MongoDB while looking, which the routes answer.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ApiKeyDoc } from '../../common/documents.js';
import { handOn, type AppDeps, type HandedOn } from '../context.js';
import { memoryKeyOf } from '../idempotency/keyed-request.js';
import type { KeptReplay, ReplayCache } from '../idempotency/replay-cache.js';
import { keyOf } from '../middleware/auth.js';
import { readRequestText } from '../middleware/body.js';
import { recordRequest, shouldRetry } from '../middleware/errors.js';
import { overRateLimit } from '../middleware/rate-limit.js';
import { securityHeadersFor } from '../middleware/security-headers.js';
import { JSON_TYPE } from '../respond.js';

/** Node's request listener. */
export type Listener = (req: IncomingMessage, res: ServerResponse) => void;

/** Methods no answer is recorded for. */
const READS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The path as Koa reads it (`ctx.path`): the request target up to its query. */
function pathOf(url: string): string {
  const query = url.indexOf('?');
  return query === -1 ? url : url.slice(0, query);
}

/** Answers what it can from memory, and hands everything else to `koa` (Koa's `app.callback()`). */
export function replayAtTheDoor(deps: AppDeps, replays: ReplayCache, koa: (req: IncomingMessage, res: ServerResponse) => Promise<void>): Listener {
  return (req, res) => {
    const idempotencyKey = req.headers['idempotency-key'];
    if (typeof idempotencyKey !== 'string' || READS.has(req.method ?? 'GET') || replays.size === 0) {
      void koa(req, res);
      return;
    }
    const started = performance.now();
    void replay(deps, replays, req, idempotencyKey).then(
      (matched) => (matched ? answer(deps, req, res, matched, started) : koa(req, res)),
      () => koa(req, res),
    );
  };
}

/** The kept answer to give `req`, or null to hand it on. Throws only what Koa would meet again and answer. */
async function replay(deps: AppDeps, replays: ReplayCache, req: IncomingMessage, idempotencyKey: string): Promise<Matched | null> {
  const given = keyOf(req.headers.authorization ?? '');
  const key = given === null ? null : await deps.keys.lookup(given);
  if (!key) return null;
  const memoryKey = memoryKeyOf(key, idempotencyKey);
  const sent = replays.get(memoryKey)?.sent;
  if (!sent || sent.method !== req.method || sent.path !== pathOf(req.url ?? '') || sent.contentType !== (req.headers['content-type'] ?? '')) {
    return null;
  }
  // What was done so far is recorded for Koa only when the request goes on there.
  let rate: HandedOn['rate'];
  if (deps.config.rateLimitPerSecond > 0) {
    rate = (await overRateLimit(deps, key)) ? 'over' : 'counted';
    if (rate === 'over') return handOn(req, { rate });
  }
  let text: string;
  try {
    text = await readRequestText(req);
  } catch (error) {
    return handOn(req, { rate, body: { error } });
  }
  // Read again: the entry may have expired, or been replaced, while the body came in.
  const kept = replays.get(memoryKey);
  if (kept?.sent !== sent || text !== sent.text) return handOn(req, { rate, body: { text } });
  replays.answeredAsSent += 1;
  return { kept, route: sent.route, key };
}

interface Matched {
  kept: KeptReplay;
  route: string;
  key: ApiKeyDoc;
}

/** The answer, with the headers in the order the routes and the outer middleware set them. */
function answer(deps: AppDeps, req: IncomingMessage, res: ServerResponse, { kept, route, key }: Matched, started: number): void {
  const requestId = deps.ids.next('request');
  const headers = ['Request-Id', requestId, 'Idempotent-Replayed', 'true', 'Content-Type', JSON_TYPE, 'Content-Length', String(Buffer.byteLength(kept.body))];
  const retry = shouldRetry(kept.status, undefined);
  if (retry !== null) headers.push('Stripe-Should-Retry', retry);
  for (const { name, value } of securityHeadersFor(pathOf(req.url ?? ''), JSON_TYPE)) headers.push(name, value);
  res.writeHead(kept.status, headers);
  res.end(kept.body);
  recordRequest(deps, { requestId, method: req.method ?? 'POST', route, status: kept.status, started, key });
}
