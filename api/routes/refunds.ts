import type Router from '@koa/router';
import type { Filter } from 'mongodb';
import { errors } from '../../common/errors.js';
import type { RefundDoc } from '../../common/documents.js';
import { JOBS } from '../../common/jobs.js';
import { findByIdInScope } from '../../common/mongo.js';
import { presentRefund } from '../../common/presenters.js';
import type { AppDeps, Ctx, State } from '../context.js';
import type { WriteHandler } from '../handlers/write.js';
import type { Guards } from '../middleware/guards.js';
import { findInScope, listPage } from '../queries/pages.js';
import { sendJson } from '../respond.js';
import { rejectQuery } from '../schemas/query.js';
import { parseRefundCreate, parseRefundListQuery, parseRefundUpdate } from '../schemas/refunds.js';

/** The stored bookkeeping a refund's presentation does not show. */
const PROJECTION = { answer: 0 } as const;

/**
 * Registers its routes on the shared `/v1` router. Creates and updates go through
 * the queue like every mutation (worker/processors/refunds.ts); reads go to MongoDB.
 */
export function refundRoutes(router: Router<State>, deps: AppDeps, guards: Guards, create: WriteHandler): void {
  const url = '/v1/refunds';
  const refunds = deps.mongo.collections.refunds;

  router.post(url, ...guards.write, async (ctx) => {
    let target = '';
    await create(ctx, {
      jobName: JOBS.createRefund,
      idKind: 'refund',
      validate: (body, encoding) => {
        const input = parseRefundCreate(body, encoding);
        target = input.payment_intent;
        return input;
      },
      // A refund writes its payment intent's ledger: it counts among that intent's writes in flight.
      object: (input) => input.payment_intent,
      // Another project's intent, or none: 404 before anything is locked or enqueued.
      precheck: async () => {
        const found = await findByIdInScope(deps.mongo.collections.paymentIntents, target, ctx.state.key!, { projection: { _id: 1 } });
        if (!found) throw errors.resourceMissing('payment_intent', target, 'payment_intent');
      },
      jobData: (base, input) => ({ ...base, target: input.payment_intent, input }),
    });
  });

  router.get(url, ...guards.read, async (ctx) => {
    const query = parseRefundListQuery(new URLSearchParams(ctx.querystring));
    const body = await listPage(refunds, ctx.state.key!, query, {
      url,
      ...(query.paymentIntent !== null ? { filter: { payment_intent: query.paymentIntent } as Filter<RefundDoc> } : {}),
      projection: PROJECTION,
      present: (doc) => JSON.stringify(presentRefund(doc)),
    });
    sendJson(ctx, body);
  });

  router.get(`${url}/:id`, ...guards.read, async (ctx) => {
    rejectQuery(ctx.querystring);
    const doc = await findInScope(refunds, ctx.state.key!, ctx.params.id as string, { kind: 'refund', projection: PROJECTION });
    sendJson(ctx, JSON.stringify(presentRefund(doc)));
  });

  const exists = (ctx: Ctx) => async () => {
    await findInScope(refunds, ctx.state.key!, ctx.params.id as string, { kind: 'refund', projection: { _id: 1 } });
  };

  router.post(`${url}/:id`, ...guards.write, async (ctx) => {
    await create(ctx, {
      jobName: JOBS.updateRefund,
      validate: (body, encoding) => parseRefundUpdate(body, encoding),
      precheck: exists(ctx),
      jobData: (base, input) => ({ ...base, target: ctx.params.id as string, input }),
    });
  });
}
