import Router from '@koa/router';
import { errors } from '../../common/errors.js';
import { isId } from '../../common/ids.js';
import type { AppDeps, State } from '../context.js';
import { parseListQuery } from '../schemas/lists.js';
import { listPage } from '../services/lists.js';
import { rejectQuery, sendJson, type Guards } from './shared.js';

/** Events are stored as the exact JSON that webhooks deliver; it is served as is. */
export function eventsRouter(deps: AppDeps, guards: Guards): Router<State> {
  const router = new Router<State>();
  const url = '/v1/events';
  const events = deps.mongo.collections.events;

  router.get(url, ...guards.read, async (ctx) => {
    const query = parseListQuery(new URLSearchParams(ctx.querystring), { idKind: 'event', extra: { type: true } });
    const body = await listPage(events, ctx.state.key!, query, {
      url,
      ...(query.type ? { filter: { type: query.type } } : {}),
      present: (doc) => doc.json,
    });
    sendJson(ctx, body);
  });

  router.get(`${url}/:id`, ...guards.read, async (ctx) => {
    rejectQuery(ctx);
    const id = ctx.params.id as string;
    const key = ctx.state.key!;
    const doc = isId('event', id) ? await events.findOne({ _id: id, project: key.project, livemode: key.livemode }) : null;
    if (!doc) throw errors.resourceMissing('event', id, 'id');
    sendJson(ctx, doc.json);
  });

  return router;
}
