import type Router from '@koa/router';
import { errors } from '../../common/errors.js';
import { isId } from '../../common/ids.js';
import type { AppDeps, State } from '../context.js';
import type { Guards } from '../middleware/guards.js';
import { eventsKept, eventsPage, findEvent } from '../queries/events.js';
import { sendJson } from '../respond.js';
import { parseListQuery } from '../schemas/lists.js';
import { rejectQuery } from '../schemas/query.js';
import { listPage } from '../queries/pages.js';
import { presentWebhookAttempt } from '../../common/presenters.js';

/**
 * Registers its routes on the shared `/v1` router. Events are stored as the exact
 * JSON that webhooks deliver and served as they are, from their two homes
 * (api/queries/events.ts), for `EVENT_RETENTION_DAYS`.
 */
export function eventRoutes(router: Router<State>, deps: AppDeps, guards: Guards): void {
  const url = '/v1/events';

  router.get(url, ...guards.read, async (ctx) => {
    const query = parseListQuery(new URLSearchParams(ctx.querystring), { idKind: 'event', extra: { type: true } });
    sendJson(ctx, await eventsPage(deps.mongo.collections, ctx.state.key!, query, url, eventsKept(deps)));
  });

  // Every delivery attempt of one event, to every endpoint, newest first.
  router.get(`${url}/:id/attempts`, ...guards.read, async (ctx) => {
    const query = parseListQuery(new URLSearchParams(ctx.querystring), { idKind: 'attempt' });
    const id = ctx.params.id as string;
    const json = isId('event', id) ? await findEvent(deps.mongo.collections, ctx.state.key!, id, eventsKept(deps)) : null;
    if (json === null) throw errors.resourceMissing('event', id, 'id');
    const body = await listPage(deps.mongo.collections.webhookAttempts, ctx.state.key!, query, {
      url: `${url}/${id}/attempts`,
      filter: { event_id: id },
      present: (doc) => JSON.stringify(presentWebhookAttempt(doc)),
    });
    sendJson(ctx, body);
  });

  router.get(`${url}/:id`, ...guards.read, async (ctx) => {
    rejectQuery(ctx.querystring);
    const id = ctx.params.id as string;
    const json = isId('event', id) ? await findEvent(deps.mongo.collections, ctx.state.key!, id, eventsKept(deps)) : null;
    if (json === null) throw errors.resourceMissing('event', id, 'id');
    sendJson(ctx, json);
  });
}
