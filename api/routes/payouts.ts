import type Router from '@koa/router';
import type { Filter } from 'mongodb';
import { JOBS } from '../../common/jobs.js';
import { countPayouts, DESTINATIONS_KEY_ID, presentPayout, presentPayoutBatch, type PayoutBatchDoc, type PayoutDoc } from '../../common/payouts.js';
import { Seal } from '../../common/seal.js';
import type { AppDeps, Ctx, State } from '../context.js';
import type { WriteHandler } from '../handlers/write.js';
import type { Guards } from '../middleware/guards.js';
import { findInScope, listPage } from '../queries/pages.js';
import { sendJson } from '../respond.js';
import { bodySchema, checkBody } from '../schemas/body.js';
import { parseListQuery } from '../schemas/lists.js';
import { parsePayoutBatch, parsePayoutCreate, parsePayoutListQuery, type PayoutContext } from '../schemas/payouts.js';
import { rejectQuery } from '../schemas/query.js';

/** The full number is stored while the payout needs it, and never read by the api. */
const PROJECTION = { phone_number: 0 } as const;

const CANCEL = bodySchema({});

/**
 * Payouts and batches (DESIGN.md section 17), on the shared `/v1` router. Creates and
 * cancels go through the queue like every mutation (worker/payouts/); reads go to
 * MongoDB. A destination's number rides in its job sealed, under a service key Redis
 * never holds; a batch's numbers ride together, in one sealed text.
 */
export function payoutRoutes(router: Router<State>, deps: AppDeps, guards: Guards, create: WriteHandler): void {
  const payouts = deps.mongo.collections.payouts;
  const batches = deps.mongo.collections.payoutBatches;
  const seal = new Seal(deps.mongo.collections.serviceKeys, DESTINATIONS_KEY_ID, { reloadMs: deps.config.serviceKeysReloadMs });
  const context = (ctx: Ctx, encoding: PayoutContext['encoding']): PayoutContext => ({
    operators: deps.config.operators,
    livemode: ctx.state.key!.livemode,
    accounts: deps.config.liveOperators.accounts,
    encoding,
  });

  router.post('/v1/payouts', ...guards.write, async (ctx) => {
    await create(ctx, {
      jobName: JOBS.createPayout,
      idKind: 'payout',
      validate: (body, encoding) => parsePayoutCreate(body, context(ctx, encoding)),
      object: () => null,
      precheck: () => seal.ready(),
      jobData: async (base, { input, phone_number }) => ({ ...base, target: base.id, input, sealed: await seal.seal(base.id, JSON.stringify([phone_number])) }),
    });
  });

  router.get('/v1/payouts', ...guards.read, async (ctx) => {
    const query = parsePayoutListQuery(new URLSearchParams(ctx.querystring));
    const filter: Record<string, unknown> = {};
    if (query.batch !== null) filter.batch = query.batch;
    if (query.status !== null) filter.status = query.status;
    const body = await listPage(payouts, ctx.state.key!, query, {
      url: '/v1/payouts',
      ...(Object.keys(filter).length > 0 ? { filter: filter as Filter<PayoutDoc> } : {}),
      projection: PROJECTION,
      present: (doc) => JSON.stringify(presentPayout(doc)),
    });
    sendJson(ctx, body);
  });

  router.get('/v1/payouts/:id', ...guards.read, async (ctx) => {
    rejectQuery(ctx.querystring);
    const doc = await findInScope(payouts, ctx.state.key!, ctx.params.id as string, { kind: 'payout', projection: PROJECTION });
    sendJson(ctx, JSON.stringify(presentPayout(doc)));
  });

  router.post('/v1/payouts/:id/cancel', ...guards.write, async (ctx) => {
    await create(ctx, {
      jobName: JOBS.cancelPayout,
      validate: (body, encoding) => {
        checkBody(CANCEL, body, encoding);
        return {};
      },
      precheck: async () => {
        await findInScope(payouts, ctx.state.key!, ctx.params.id as string, { kind: 'payout', projection: { _id: 1 } });
      },
      jobData: (base) => ({ ...base, target: ctx.params.id as string, input: {} }),
    });
  });

  router.post('/v1/payout_batches', ...guards.write, async (ctx) => {
    await create(ctx, {
      jobName: JOBS.createPayoutBatch,
      idKind: 'payout_batch',
      validate: (body, encoding) => parsePayoutBatch(body, context(ctx, encoding)),
      objects: (items) => 1 + items.length,
      object: () => null,
      precheck: () => seal.ready(),
      jobData: async (base, items) => ({
        ...base,
        target: base.id,
        // Chosen here, once per request: a retried job makes the same payouts again, nothing twice.
        payouts: items.map(() => deps.ids.next('payout')),
        input: items.map((item) => item.input),
        sealed: await seal.seal(base.id, JSON.stringify(items.map((item) => item.phone_number))),
      }),
    });
  });

  router.get('/v1/payout_batches', ...guards.read, async (ctx) => {
    const query = parseListQuery(new URLSearchParams(ctx.querystring), { idKind: 'payout_batch' });
    const docs: PayoutBatchDoc[] = [];
    const body = await listPage(batches, ctx.state.key!, query, {
      url: '/v1/payout_batches',
      present: (doc) => {
        docs.push(doc);
        return JSON.stringify(presentPayoutBatch(doc, doc.counts ?? countPayouts([])));
      },
    });
    // A batch still processing shows its counts as they are now.
    if (docs.every((doc) => doc.counts !== undefined)) return sendJson(ctx, body);
    const parsed = JSON.parse(body) as { data: Array<{ id: string }> };
    parsed.data = await Promise.all(docs.map(async (doc) => presentPayoutBatch(doc, await countsOf(doc))));
    sendJson(ctx, JSON.stringify(parsed));
  });

  router.get('/v1/payout_batches/:id', ...guards.read, async (ctx) => {
    rejectQuery(ctx.querystring);
    const doc = await findInScope(batches, ctx.state.key!, ctx.params.id as string, { kind: 'payout_batch' });
    sendJson(ctx, JSON.stringify(presentPayoutBatch(doc, await countsOf(doc))));
  });

  /** A completed batch's counts are stored with it; a processing one's are counted from its payouts (at most 1,000). */
  async function countsOf(doc: PayoutBatchDoc) {
    if (doc.counts) return doc.counts;
    const items = await payouts.find({ batch: doc._id } as Filter<PayoutDoc>, { projection: { status: 1, project: 1, livemode: 1 } }).toArray();
    return countPayouts(items.filter((p) => p.project === doc.project && p.livemode === doc.livemode).map((p) => p.status));
  }
}
