import Router from '@koa/router';
import { issueKey, listKeys, revokeKey } from '../../common/api-keys.js';
import { errors } from '../../common/errors.js';
import { presentApiKey, listEnvelopeJson } from '../../common/presenters.js';
import type { AppDeps, State } from '../context.js';
import { adminAuth } from '../middleware/admin-auth.js';
import { parseBody } from '../middleware/body.js';
import { sendJson } from '../respond.js';
import { parseApiKeyCreate, parseApiKeyListQuery } from '../schemas/api-keys.js';
import { rejectQuery } from '../schemas/query.js';
import { parseEmptyBody } from '../schemas/webhook-endpoints.js';

/**
 * Issuing and revoking API keys (DESIGN.md section 3). `Idempotency-Key` is ignored
 * here. Without `ADMIN_TOKEN` there are no routes at all, so every method on every
 * admin path is 404, never 405.
 */
export function adminKeysRouter(deps: AppDeps): Router<State> {
  const router = new Router<State>();
  if (!deps.config.adminToken) return router;
  const url = '/admin/v1/api_keys';
  const c = deps.mongo.collections;
  const auth = adminAuth(deps.config.adminToken, deps.adminFailures);
  const keyStore = { collections: c, ids: deps.ids, now: deps.now };

  // As every POST: JSON or a form; no query string (DESIGN.md sections 4 and 8).
  router.post(url, auth, parseBody(), async (ctx) => {
    rejectQuery(ctx.querystring);
    const { project, livemode } = parseApiKeyCreate(ctx.state.body ?? {}, ctx.state.bodyEncoding);
    const { doc, secret } = await issueKey(keyStore, project, livemode);
    sendJson(ctx, JSON.stringify(presentApiKey(doc, secret)));
  });

  router.get(url, auth, async (ctx) => {
    const { project } = parseApiKeyListQuery(new URLSearchParams(ctx.querystring));
    const docs = project === null ? await c.apiKeys.find({}).sort({ _id: -1 }).toArray() : await listKeys(c, project);
    sendJson(ctx, listEnvelopeJson(url, docs.map((d) => JSON.stringify(presentApiKey(d))), false));
  });

  router.delete(`${url}/:id`, auth, parseBody(), async (ctx) => {
    rejectQuery(ctx.querystring);
    parseEmptyBody(ctx.state.body ?? {});
    const id = ctx.params.id as string;
    const revoked = await revokeKey(keyStore, deps.redis, deps.config.queuePrefix, id, (hash) => deps.keys.evict(hash));
    if (!revoked) throw errors.resourceMissing('api_key', id, 'id');
    if (!revoked.pushed) {
      deps.logger.warn(
        { request_id: ctx.state.requestId, key_id: id },
        'key revoked, but the revocation could not be pushed over Redis: other api processes drop it within API_KEY_CACHE_MS, or when they reconnect',
      );
    }
    sendJson(ctx, JSON.stringify(presentApiKey(revoked.doc)));
  });

  return router;
}
