import type Router from '@koa/router';
import { catalogEntry, resolveNumber } from '../../common/operator-catalog.js';
import { NO_CALLS_RECORDED, operatorStatus } from '../../common/operator-status.js';
import { listEnvelopeJson, presentOperator, presentResolution, type PresentedAccount } from '../../common/presenters.js';
import { breakerState } from '../../common/operator-breaker.js';
import type { AppDeps, State } from '../context.js';
import type { Guards } from '../middleware/guards.js';
import { sendJson } from '../respond.js';
import { parseResolveQuery } from '../schemas/operators.js';
import { rejectQuery } from '../schemas/query.js';

/**
 * Registers its routes on the shared `/v1` router: the operator catalog
 * (common/operator-catalog.ts) of this deployment's `OPERATORS`, as data, and which
 * of them a phone number belongs to. Nothing is stored; the key's mode decides each
 * operator's status (common/operator-status.ts).
 */
export function operatorRoutes(router: Router<State>, deps: AppDeps, guards: Guards): void {
  const url = '/v1/operators';
  const health = deps.operatorHealth ?? NO_CALLS_RECORDED;

  const { accounts, breakerFailures } = deps.config.liveOperators;
  /** Live mode: the operator's accounts and their breakers (common/operator-breaker.ts). */
  const accountsOf = async (operator: string): Promise<PresentedAccount[]> => {
    const mine = accounts.filter((a) => a.operator === operator);
    return Promise.all(
      mine.map(async (a) => {
        const breaker = await breakerState(deps.redis, deps.config.queuePrefix, a.id, breakerFailures).catch(() => ({ open: false }));
        return { id: a.id, countries: [...a.countries], sandbox: a.sandbox, status: breaker.open ? ('unavailable' as const) : ('operational' as const) };
      }),
    );
  };

  router.get(url, ...guards.read, async (ctx) => {
    rejectQuery(ctx.querystring);
    const livemode = ctx.state.key!.livemode;
    const items: string[] = [];
    for (const id of deps.config.operators) {
      const entry = catalogEntry(id);
      if (entry === null) continue;
      let status = await operatorStatus(deps.config, id, livemode, health);
      const accounts = livemode ? await accountsOf(id) : [];
      if (accounts.length > 0 && accounts.every((a) => a.status === 'unavailable')) status = 'unavailable';
      else if (status === 'operational' && accounts.some((a) => a.status === 'unavailable')) status = 'degraded';
      items.push(JSON.stringify(presentOperator(entry, { status, livemode, accounts })));
    }
    sendJson(ctx, listEnvelopeJson(url, items, false));
  });

  router.get(`${url}/resolve`, ...guards.read, async (ctx) => {
    const phone = parseResolveQuery(ctx.querystring);
    const offered = new Set(deps.config.operators);
    const found = resolveNumber(phone);
    const resolution = {
      ...found,
      operator: found.operator !== null && offered.has(found.operator) ? found.operator : null,
      candidates: found.candidates.filter((id) => offered.has(id)),
    };
    sendJson(ctx, JSON.stringify(presentResolution(phone, resolution)));
  });
}
