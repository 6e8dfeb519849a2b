import type Router from '@koa/router';
import { errors } from '../../common/errors.js';
import { createdEventId, objectIdOfCreatedEvent, PAYMENT_INTENT_CREATED } from '../../common/events.js';
import type { AppDeps, State } from '../context.js';
import type { Guards } from '../middleware/guards.js';
import { findInScope, listPage } from '../queries/pages.js';
import { sendJson } from '../respond.js';
import { parseListQuery } from '../schemas/lists.js';
import { rejectQuery } from '../schemas/query.js';

/**
 * Registers its routes on the shared `/v1` router. `evt_X` is the created event of
 * `pi_X`: events are stored as the exact JSON that webhooks deliver, in the document
 * of the object they are about (written in the same insert), and served as they are.
 */
export function eventRoutes(router: Router<State>, deps: AppDeps, guards: Guards): void {
  const url = '/v1/events';
  const paymentIntents = deps.mongo.collections.paymentIntents;

  router.get(url, ...guards.read, async (ctx) => {
    const query = parseListQuery(new URLSearchParams(ctx.querystring), { idKind: 'event', extra: { type: true } });
    if (query.type !== null && query.type !== PAYMENT_INTENT_CREATED) {
      // The only event type recorded so far; a cursor must still name an event.
      const cursor = query.startingAfter ?? query.endingBefore;
      const key = ctx.state.key!;
      if (cursor !== null && !(await paymentIntents.findOne({ _id: objectIdOfCreatedEvent(cursor), project: key.project, livemode: key.livemode }, { projection: { _id: 1 } }))) {
        throw errors.cursorMissing(query.startingAfter !== null ? 'starting_after' : 'ending_before', cursor);
      }
      sendJson(ctx, `{"object":"list","url":"${url}","has_more":false,"data":[]}`);
      return;
    }
    const body = await listPage(
      paymentIntents,
      ctx.state.key!,
      {
        limit: query.limit,
        startingAfter: query.startingAfter && objectIdOfCreatedEvent(query.startingAfter),
        endingBefore: query.endingBefore && objectIdOfCreatedEvent(query.endingBefore),
      },
      { url, present: (doc) => doc.created_event, cursorIdOf: createdEventId },
    );
    sendJson(ctx, body);
  });

  router.get(`${url}/:id`, ...guards.read, async (ctx) => {
    rejectQuery(ctx.querystring);
    const doc = await findInScope(paymentIntents, ctx.state.key!, ctx.params.id as string, {
      kind: 'event',
      projection: { created_event: 1 },
      storedId: objectIdOfCreatedEvent,
    });
    sendJson(ctx, doc.created_event);
  });
}
