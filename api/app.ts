import Koa, { type Middleware } from 'koa';
import Router from '@koa/router';
import { errors } from '../common/errors.js';
import { matchedRoute, type AppDeps, type State } from './context.js';
import { writeHandler } from './handlers/write.js';
import { replayAtTheDoor, type Listener } from './handlers/replay-from-memory.js';
import { IdempotencyStore } from './idempotency/store.js';
import { authenticate } from './middleware/auth.js';
import { parseBody } from './middleware/body.js';
import { handleErrors } from './middleware/errors.js';
import { makeGuards } from './middleware/guards.js';
import { anonymousLimit, rateLimit } from './middleware/rate-limit.js';
import { securityHeaders } from './middleware/security-headers.js';
import { adminKeysRouter } from './routes/admin-keys.js';
import { apiKeyRoutes } from './routes/api-keys.js';
import { checkoutRouter } from './routes/checkout.js';
import { portalRouter } from './portal/router.js';
import { eventRoutes } from './routes/events.js';
import { balanceRoutes } from './routes/balance.js';
import { adminAdjustmentsRouter } from './routes/admin-adjustments.js';
import { operatorRoutes } from './routes/operators.js';
import { operatorCallbacksRouter } from './routes/operator-callbacks.js';
import { faviconRouter } from './routes/favicon.js';
import { opsRouter } from './routes/ops.js';
import { paymentIntentRoutes } from './routes/payment-intents.js';
import { payoutRoutes } from './routes/payouts.js';
import { referenceRouter } from './routes/reference.js';
import { refundRoutes } from './routes/refunds.js';
import { operatorDiscrepancyRoutes } from './routes/operator-discrepancies.js';
import { webhookEndpointRoutes } from './routes/webhook-endpoints.js';

/**
 * Records the matched route template for logs and metrics. @koa/router sets it while
 * routing, so it is read once the routers have run (errors included).
 */
function nameRoute(): Middleware<State> {
  return async (ctx, next) => {
    try {
      await next();
    } finally {
      ctx.state.route ??= matchedRoute(ctx);
    }
  };
}

/** After every router: a known path with another method is 405 (with `Allow`), else 404. */
function unmatched(routers: Array<Router<State>>): Middleware<State> {
  return async (ctx) => {
    const allowed = new Set<string>();
    for (const router of routers) {
      for (const layer of router.match(ctx.path, ctx.method).path) {
        for (const method of layer.methods) allowed.add(method);
      }
    }
    if (allowed.size > 0) throw errors.methodNotAllowed(ctx.method, [...allowed]);
    throw errors.routeNotFound(ctx.method, ctx.path);
  };
}

/**
 * Builds the api: the listener an HTTP server calls, which answers replays from
 * memory at the door and hands everything else to Koa. It never listens: main.ts (or
 * a test) does. `idempotency`: the store, when the caller wants a hand on it (a
 * test); otherwise one is built here.
 */
export function createApi(deps: AppDeps, parts: { idempotency?: IdempotencyStore } = {}): Listener {
  const app = new Koa<State>();
  const guards = makeGuards({ auth: authenticate(deps), rateLimit: rateLimit(deps), body: parseBody() });
  const idempotency = parts.idempotency ?? new IdempotencyStore({ config: deps.config, redis: deps.redis, collections: deps.mongo.collections, now: deps.now });
  deps.results.onEvery(
    (message) => idempotency.hear(message),
    (message) => idempotency.keepsHeard(message),
  );
  const create = writeHandler(deps, idempotency);
  // One router for the public API, first: most requests are its, and each router
  // costs a match per request. Paths match exactly, as on Stripe: `/v1/Payment_Intents`
  // and `/v1/payment_intents/` are unknown routes.
  const v1 = new Router<State>({ strict: true, sensitive: true });
  paymentIntentRoutes(v1, deps, guards, create);
  webhookEndpointRoutes(v1, deps, guards, create);
  eventRoutes(v1, deps, guards);
  operatorRoutes(v1, deps, guards);
  refundRoutes(v1, deps, guards, create);
  apiKeyRoutes(v1, deps, guards);
  payoutRoutes(v1, deps, guards, create);
  operatorDiscrepancyRoutes(v1, deps, guards);
  balanceRoutes(v1, deps, guards);
  const routers: Array<Router<State>> = [
    v1,
    opsRouter(deps),
    referenceRouter(deps),
    adminKeysRouter(deps),
    adminAdjustmentsRouter(deps),
    checkoutRouter(deps),
    portalRouter(deps),
    operatorCallbacksRouter(deps),
    faviconRouter(),
    ...((deps.extraRouters ?? []) as Array<Router<State>>),
  ];
  // Outermost: its headers go on every answer, error answers included.
  app.use(securityHeaders());
  app.use(handleErrors(deps));
  app.use(nameRoute());
  app.use(anonymousLimit(deps));
  for (const router of routers) app.use(router.routes());
  app.use(unmatched(routers));
  // handleErrors renders every error of ours; what Koa emits comes from Bull Board's
  // sub-app (its error handler emits on the app). Kept in the JSON log: the listener
  // must be on before `callback()`, which otherwise adds Koa's default, a multi-line
  // stderr dump.
  app.on('error', (err: Error, ctx?: { state?: { requestId?: string } }) => {
    deps.logger.warn({ request_id: ctx?.state?.requestId, err: err.message }, 'dashboard error');
  });
  return replayAtTheDoor(deps, idempotency.replays, app.callback());
}
