import Router from '@koa/router';
import type { Registry } from 'prom-client';

/** `GET /metrics` in the Prometheus text format; like `/healthz`, it needs no API key. */
export function metricsRouter(registry: Registry): Router {
  const router = new Router();
  router.get('/metrics', async (ctx) => {
    const body = await registry.metrics();
    ctx.type = registry.contentType;
    ctx.body = body;
  });
  return router;
}
