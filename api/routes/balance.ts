import { Readable } from 'node:stream';
import type Router from '@koa/router';
import type { Filter } from 'mongodb';
import type { BalanceTransactionDoc } from '../../common/documents.js';
import { presentBalance, presentBalanceTransaction } from '../../common/presenters.js';
import type { AppDeps, State } from '../context.js';
import type { Guards } from '../middleware/guards.js';
import { findInScope, listPage } from '../queries/pages.js';
import { statementChunks } from '../queries/statements.js';
import { sendJson } from '../respond.js';
import { parseBalanceTransactionListQuery, parseStatementQuery } from '../schemas/balance.js';
import { rejectQuery } from '../schemas/query.js';

/** What a transaction's presentation does not show. */
const PROJECTION = { entries: 0, key: 0 } as const;

/**
 * The ledger's reads (DESIGN section 16): the balance, its transactions and a
 * statement, straight from MongoDB (the postings are the worker's,
 * worker/balance/ledger.ts). Registers its routes on the shared `/v1` router.
 */
export function balanceRoutes(router: Router<State>, deps: AppDeps, guards: Guards): void {
  const c = deps.mongo.collections;

  router.get('/v1/balance', ...guards.read, async (ctx) => {
    rejectQuery(ctx.querystring);
    const scope = ctx.state.key!;
    // A scope's balances are few (one per currency): index `scope_currency`.
    const docs = await c.balances.find({ project: scope.project, livemode: scope.livemode }, { projection: { tail: 0 } }).limit(1000).toArray();
    sendJson(ctx, JSON.stringify(presentBalance(docs, scope.livemode)));
  });

  const url = '/v1/balance_transactions';
  router.get(url, ...guards.read, async (ctx) => {
    const query = parseBalanceTransactionListQuery(new URLSearchParams(ctx.querystring));
    const filter: Record<string, unknown> = {};
    if (query.txnType !== null) filter.type = query.txnType;
    if (query.source !== null) filter.source = query.source;
    if (query.created !== null) filter.created = query.created;
    const body = await listPage(c.balanceTransactions, ctx.state.key!, query, {
      url,
      ...(Object.keys(filter).length > 0 ? { filter: filter as Filter<BalanceTransactionDoc> } : {}),
      projection: PROJECTION,
      present: (doc) => JSON.stringify(presentBalanceTransaction(doc)),
    });
    sendJson(ctx, body);
  });

  router.get(`${url}/:id`, ...guards.read, async (ctx) => {
    rejectQuery(ctx.querystring);
    const doc = await findInScope(c.balanceTransactions, ctx.state.key!, ctx.params.id as string, { kind: 'balance_transaction', projection: PROJECTION });
    sendJson(ctx, JSON.stringify(presentBalanceTransaction(doc)));
  });

  router.get('/v1/statements', ...guards.read, (ctx) => {
    const query = parseStatementQuery(new URLSearchParams(ctx.querystring));
    ctx.status = 200;
    ctx.set('Content-Type', 'text/csv; charset=utf-8');
    ctx.set('Content-Disposition', `attachment; filename="statement-${query.currency}-${query.from}-${query.to}.csv"`);
    ctx.body = Readable.from(statementChunks(c, ctx.state.key!, query));
  });
}
