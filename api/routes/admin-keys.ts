import { timingSafeEqual, createHash } from 'node:crypto';
import Router from '@koa/router';
import type { Middleware } from 'koa';
import { issueKey, listKeys, PROJECT_PATTERN, revokeKey } from '../../common/api-keys.js';
import { ApiError, errors } from '../../common/errors.js';
import { presentApiKey, listEnvelopeJson } from '../../common/presenters.js';
import type { AppDeps, State } from '../context.js';
import { parseJsonBody } from '../middleware/body.js';
import { sendJson } from './shared.js';

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

/** Compares digests, so neither the length nor the content of the token leaks through timing. */
export function tokenMatches(given: string, expected: string): boolean {
  return timingSafeEqual(digest(given), digest(expected));
}

/** `Authorization: Bearer $ADMIN_TOKEN`; the admin API does not exist without a token configured. */
function adminAuth(deps: AppDeps): Middleware<State> {
  return async (ctx, next) => {
    const expected = deps.config.adminToken;
    if (!expected) throw errors.routeNotFound(ctx.method, ctx.path);
    const match = /^Bearer +(\S+) *$/i.exec(ctx.get('Authorization'));
    if (!match) throw errors.apiKeyMissing();
    if (!tokenMatches(match[1] as string, expected)) throw errors.apiKeyInvalid();
    await next();
  };
}

function parseCreateKey(body: Record<string, unknown>): { project: string; livemode: boolean } {
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

/** Issuing and revoking API keys (DESIGN.md section 3). `Idempotency-Key` is ignored here. */
export function adminKeysRouter(deps: AppDeps): Router<State> {
  const router = new Router<State>();
  const url = '/admin/v1/api_keys';
  const c = deps.mongo.collections;
  const auth = adminAuth(deps);

  router.post(url, auth, parseJsonBody(), async (ctx) => {
    const { project, livemode } = parseCreateKey(ctx.state.body ?? {});
    const { doc, secret } = await issueKey(c, project, livemode);
    sendJson(ctx, JSON.stringify(presentApiKey(doc, secret)));
  });

  router.get(url, auth, async (ctx) => {
    const params = new URLSearchParams(ctx.querystring);
    for (const name of params.keys()) if (name !== 'project') throw errors.parameterUnknown(name);
    if (params.getAll('project').length > 1) throw errors.parameterInvalid('project', 'give it once');
    const project = params.get('project');
    const docs = project === null ? await c.apiKeys.find({}).sort({ _id: -1 }).toArray() : await listKeys(c, project);
    sendJson(ctx, listEnvelopeJson(url, docs.map((d) => JSON.stringify(presentApiKey(d))), false));
  });

  router.delete(`${url}/:id`, auth, async (ctx) => {
    const id = ctx.params.id as string;
    const doc = await revokeKey(c, deps.redis, deps.config.queuePrefix, id);
    if (!doc) throw errors.resourceMissing('api_key', id, 'id');
    deps.keys.evict(doc.hash);
    sendJson(ctx, JSON.stringify(presentApiKey(doc)));
  });

  return router;
}
