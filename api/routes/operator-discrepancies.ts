import type Router from '@koa/router';
import { presentOperatorDiscrepancy } from '../../common/operator-discrepancies.js';
import type { AppDeps, State } from '../context.js';
import type { Guards } from '../middleware/guards.js';
import { findInScope, listPage } from '../queries/pages.js';
import { sendJson } from '../respond.js';
import { parseListQuery } from '../schemas/lists.js';
import { rejectQuery } from '../schemas/query.js';

/** Storage-only fields. */
const PROJECTION = { key: 0, event_id: 0 } as const;

/**
 * Registers its routes on the shared `/v1` router: what reconciliation found
 * (worker/reconcile/), read straight from MongoDB. Nothing here changes them.
 */
export function operatorDiscrepancyRoutes(router: Router<State>, deps: AppDeps, guards: Guards): void {
  const url = '/v1/operator_discrepancies';
  const discrepancies = deps.mongo.collections.operatorDiscrepancies;

  router.get(url, ...guards.read, async (ctx) => {
    const query = parseListQuery(new URLSearchParams(ctx.querystring), { idKind: 'operator_discrepancy' });
    sendJson(ctx, await listPage(discrepancies, ctx.state.key!, query, { url, projection: PROJECTION, present: (doc) => JSON.stringify(presentOperatorDiscrepancy(doc)) }));
  });

  router.get(`${url}/:id`, ...guards.read, async (ctx) => {
    rejectQuery(ctx.querystring);
    const doc = await findInScope(discrepancies, ctx.state.key!, ctx.params.id as string, { kind: 'operator_discrepancy', projection: PROJECTION });
    sendJson(ctx, JSON.stringify(presentOperatorDiscrepancy(doc)));
  });
}
