/**
 * `/v1/api_keys`: a project's own keys, managed with one of its secret keys (the
 * merchant portal's API keys page; DESIGN section 18). A key sees and makes keys of
 * its own project and mode only: a test key never mints a live one.
 *
 * Writes apply here, as the admin API's do (api/routes/admin-keys.ts), not through
 * the queue, and `Idempotency-Key` is not replayed: a replay record would have to
 * keep the new secret, and no record of this service keeps one
 * (docs/decisions/0031-portal-client-of-v1.md). A retried create makes a second key
 * (listed, and revocable by a roll); a retried roll of a key already rolled is 400.
 */
import type Router from '@koa/router';
import { issueKey, revokeKey } from '../../common/api-keys.js';
import { ApiError, errors } from '../../common/errors.js';
import { findByIdInScope } from '../../common/mongo.js';
import { presentApiKey } from '../../common/presenters.js';
import type { AppDeps, State } from '../context.js';
import type { Guards } from '../middleware/guards.js';
import { listPage } from '../queries/pages.js';
import { sendJson } from '../respond.js';
import { parseListQuery } from '../schemas/lists.js';
import { rejectQuery } from '../schemas/query.js';

/** Keys not revoked, per project and mode: past it a create is refused. */
export const ACTIVE_KEYS_LIMIT = 20;

function emptyBody(body: Record<string, unknown> | undefined): void {
  const unknown = Object.keys(body ?? {})[0];
  if (unknown !== undefined) throw errors.parameterUnknown(unknown);
}

export function apiKeyRoutes(router: Router<State>, deps: AppDeps, guards: Guards): void {
  const url = '/v1/api_keys';
  const keys = deps.mongo.collections.apiKeys;
  const keyStore = { collections: deps.mongo.collections, ids: deps.ids, now: deps.now };

  router.get(url, ...guards.read, async (ctx) => {
    const query = parseListQuery(new URLSearchParams(ctx.querystring), { idKind: 'api_key' });
    sendJson(ctx, await listPage(keys, ctx.state.key!, query, { url, projection: { hash: 0 }, present: (doc) => JSON.stringify(presentApiKey(doc)) }));
  });

  router.post(url, ...guards.write, async (ctx) => {
    rejectQuery(ctx.querystring);
    emptyBody(ctx.state.body);
    const scope = ctx.state.key!;
    const active = await keys.countDocuments({ project: scope.project, livemode: scope.livemode, revoked_at: null }, { limit: ACTIVE_KEYS_LIMIT });
    if (active >= ACTIVE_KEYS_LIMIT) {
      throw new ApiError('parameter_invalid', `At most ${ACTIVE_KEYS_LIMIT} keys of a project and mode can be active: roll one instead of creating one.`);
    }
    const { doc, secret } = await issueKey(keyStore, scope.project, scope.livemode);
    sendJson(ctx, JSON.stringify(presentApiKey(doc, secret)));
  });

  // A new key, and the old one revoked at once (everywhere: api/routes/admin-keys.ts).
  router.post(`${url}/:id/roll`, ...guards.write, async (ctx) => {
    rejectQuery(ctx.querystring);
    emptyBody(ctx.state.body);
    const scope = ctx.state.key!;
    const id = ctx.params.id as string;
    const old = await findByIdInScope(keys, id, scope, { projection: { hash: 0 } });
    if (!old) throw errors.resourceMissing('api_key', id, 'id');
    if (old.revoked_at !== null) throw new ApiError('parameter_invalid', `The key ${id} is revoked already: roll an active one.`, 'id');
    const { doc, secret } = await issueKey(keyStore, scope.project, scope.livemode);
    const revoked = await revokeKey(keyStore, deps.redis, deps.config.queuePrefix, id, (hash) => deps.keys.evict(hash));
    if (revoked && !revoked.pushed) {
      deps.logger.warn({ request_id: ctx.state.requestId, key_id: id }, 'key rolled, but the revocation could not be pushed over Redis');
    }
    sendJson(ctx, JSON.stringify(presentApiKey(doc, secret)));
  });
}
