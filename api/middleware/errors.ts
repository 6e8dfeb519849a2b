import type { Middleware } from 'koa';
import { ApiError, errorBody, errors } from '../../common/errors.js';
import { isInfrastructureError } from '../../common/infra-errors.js';
import type { ApiKeyDoc } from '../../common/documents.js';
import type { AppDeps, State } from '../context.js';
import { baseUrlOf, JSON_TYPE } from '../respond.js';
import { ClientAbortedError } from './body.js';

/** Logged (and counted) for a request whose client left before it could be answered: nginx's "client closed request". */
const CLIENT_CLOSED = 499;

/**
 * `Stripe-Should-Retry`, which Stripe SDKs obey before their own rules: retry a 409
 * `idempotency_in_flight` and any 503 (docs/api.md's advice), never another 4xx. A
 * recorded 4xx replayed, or answered straight from a create job, is no exception.
 */
export function shouldRetry(status: number, code: string | undefined): string | null {
  if (status === 503 || (status === 409 && code === 'idempotency_in_flight')) return 'true';
  if (status >= 400 && status < 500) return 'false';
  return null;
}

/**
 * First in the chain: gives every request its id, renders every error in the
 * contract's envelope, and writes the one log line of the request. Only ApiErrors
 * reach the client as they are; a lost dependency is a 503, anything else a 500
 * whose details stay in the log.
 */
export function handleErrors(deps: AppDeps): Middleware<State> {
  return async (ctx, next) => {
    const started = performance.now();
    const requestId = deps.ids.next('request');
    ctx.state.requestId = requestId;
    ctx.set('Request-Id', requestId);
    let code: string | undefined;
    try {
      await next();
    } catch (err) {
      if (err instanceof ClientAbortedError) {
        ctx.status = CLIENT_CLOSED;
        deps.logger.info({ request_id: requestId, reason: err.message }, 'client aborted the request');
        return;
      }
      let apiError: ApiError;
      if (err instanceof ApiError) {
        apiError = err;
      } else if (isInfrastructureError(err)) {
        apiError = errors.serviceUnavailable();
        deps.logger.warn({ request_id: requestId, err: (err as Error).message }, 'dependency unavailable');
      } else {
        apiError = errors.internal();
        deps.logger.error({ request_id: requestId, err }, 'unhandled error');
      }
      code = apiError.code;
      ctx.status = apiError.status;
      ctx.set('Content-Type', JSON_TYPE);
      ctx.body = errorBody(apiError.detail(), requestId, baseUrlOf(deps.config, ctx));
      for (const [name, value] of Object.entries(apiError.headers)) ctx.set(name, value);
    } finally {
      const retry = shouldRetry(ctx.status, code);
      if (retry !== null) ctx.set('Stripe-Should-Retry', retry);
      // Never the raw path: it holds ids, and would make one metric series per object.
      const route = ctx.state.route ?? 'unmatched';
      recordRequest(deps, { requestId, method: ctx.method, route, status: ctx.status, started, key: ctx.state.key });
    }
  };
}

/** A request's one log line, and its metrics: `route` is its template; `started`, its `performance.now()`. */
export function recordRequest(
  deps: Pick<AppDeps, 'logger' | 'onRequest'>,
  request: { requestId: string; method: string; route: string; status: number; started: number; key: ApiKeyDoc | undefined },
): void {
  const { requestId, method, route, status, key } = request;
  const durationMs = performance.now() - request.started;
  deps.logger.info(
    {
      request_id: requestId,
      method,
      route,
      status,
      duration_ms: Math.round(durationMs * 10) / 10,
      project: key?.project,
      livemode: key?.livemode,
    },
    'request',
  );
  deps.onRequest?.({ method, route, status, durationMs });
}
