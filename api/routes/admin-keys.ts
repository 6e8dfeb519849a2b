import Router from '@koa/router';
import { issueKey, listKeys, PROJECT_PATTERN, revokeKey } from '../../common/api-keys.js';
import { ApiError, errors } from '../../common/errors.js';
import { presentApiKey, listEnvelopeJson } from '../../common/presenters.js';
import type { AppDeps, State } from '../context.js';
import { adminAuth } from '../middleware/admin-auth.js';
import { parseBody } from '../middleware/body.js';
import { sendJson } from '../respond.js';
import { checkQueryNames } from '../schemas/query.js';

/** A form's values are strings (DESIGN.md section 8): `livemode` from `true`/`false`, the empty string null. */
function fromForm(body: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...body };
  for (const [name, value] of Object.entries(out)) if (value === '') out[name] = null;
  if (out.livemode === 'true') out.livemode = true;
  else if (out.livemode === 'false') out.livemode = false;
  return out;
}

function parseCreateKey(given: Record<string, unknown>, encoding: 'json' | 'form' | undefined): { project: string; livemode: boolean } {
  const body = encoding === 'form' ? fromForm(given) : given;
  for (const name of Object.keys(body)) {
    if (name !== 'project' && name !== 'livemode') throw errors.parameterUnknown(name);
  }
  const { project, livemode = false } = body;
  if (project === undefined) throw errors.parameterMissing('project');
  if (typeof project !== 'string') throw new ApiError('parameter_invalid_string', 'Invalid string: project must be a string.', 'project');
  if (!PROJECT_PATTERN.test(project)) {
    throw errors.parameterInvalid('project', 'use 1 to 63 characters from a-z, 0-9, "_" and "-", starting with a letter or digit');
  }
  if (typeof livemode !== 'boolean') throw new ApiError('parameter_invalid_boolean', 'Invalid boolean: livemode must be true or false.', 'livemode');
  return { project, livemode };
}

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
    checkQueryNames(new URLSearchParams(ctx.querystring), []);
    const { project, livemode } = parseCreateKey(ctx.state.body ?? {}, ctx.state.bodyEncoding);
    const { doc, secret } = await issueKey(keyStore, project, livemode);
    sendJson(ctx, JSON.stringify(presentApiKey(doc, secret)));
  });

  router.get(url, auth, async (ctx) => {
    const params = new URLSearchParams(ctx.querystring);
    checkQueryNames(params, ['project']);
    const project = params.get('project');
    const docs = project === null ? await c.apiKeys.find({}).sort({ _id: -1 }).toArray() : await listKeys(c, project);
    sendJson(ctx, listEnvelopeJson(url, docs.map((d) => JSON.stringify(presentApiKey(d))), false));
  });

  router.delete(`${url}/:id`, auth, parseBody(), async (ctx) => {
    checkQueryNames(new URLSearchParams(ctx.querystring), []);
    const unknown = Object.keys(ctx.state.body ?? {})[0];
    if (unknown !== undefined) throw errors.parameterUnknown(unknown);
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
