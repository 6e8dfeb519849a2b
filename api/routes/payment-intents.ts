import type Router from '@koa/router';
import { JOBS } from '../../common/jobs.js';
import { presentPaymentIntent } from '../../common/presenters.js';
import type { AppDeps, Ctx, State } from '../context.js';
import type { CreateHandler } from '../handlers/create.js';
import type { Guards } from '../middleware/guards.js';
import { findInScope, listPage } from '../queries/pages.js';
import { sendJson } from '../respond.js';
import { parseListQuery } from '../schemas/lists.js';
import { parsePaymentIntentCreate } from '../schemas/payment-intents.js';
import { parseCancel, parseConfirm, parseUpdate } from '../schemas/payment-intent-lifecycle.js';
import { rejectQuery } from '../schemas/query.js';

/** Registers its routes on the shared `/v1` router. */
export function paymentIntentRoutes(router: Router<State>, deps: AppDeps, guards: Guards, create: CreateHandler): void {
  const url = '/v1/payment_intents';

  router.post(url, ...guards.write, async (ctx) => {
    await create(ctx, {
      jobName: JOBS.createPaymentIntent,
      idKind: 'payment_intent',
      validate: (body, encoding) =>
        parsePaymentIntentCreate(body, {
          operators: deps.config.operators,
          defaultCurrency: deps.config.defaultCurrency,
          now: Math.floor(deps.now() / 1000),
          encoding,
        }),
      jobData: (base, input) => ({ ...base, input }),
    });
  });

  router.get(url, ...guards.read, async (ctx) => {
    const query = parseListQuery(new URLSearchParams(ctx.querystring), { idKind: 'payment_intent' });
    const body = await listPage(deps.mongo.collections.paymentIntents, ctx.state.key!, query, {
      url,
      // The stored event is the largest field, and a list of intents does not show it.
      projection: { created_event: 0, history: 0 },
      present: (doc) => JSON.stringify(presentPaymentIntent(doc)),
    });
    sendJson(ctx, body);
  });

  router.get(`${url}/:id`, ...guards.read, async (ctx) => {
    rejectQuery(ctx.querystring);
    const doc = await findInScope(deps.mongo.collections.paymentIntents, ctx.state.key!, ctx.params.id as string, {
      kind: 'payment_intent',
      projection: { created_event: 0, history: 0 },
    });
    sendJson(ctx, JSON.stringify(presentPaymentIntent(doc)));
  });

  // Mutations: validated here, applied by a worker on the stored intent (its status
  // decides), answered with the job's result, as a create is.
  const exists = (ctx: Ctx) => async () => {
    await findInScope(deps.mongo.collections.paymentIntents, ctx.state.key!, ctx.params.id as string, {
      kind: 'payment_intent',
      projection: { _id: 1 },
    });
  };
  const lifecycle = () => ({ operators: deps.config.operators, now: Math.floor(deps.now() / 1000) });

  router.post(`${url}/:id`, ...guards.write, async (ctx) => {
    await create(ctx, {
      jobName: JOBS.updatePaymentIntent,
      validate: (body, encoding) => parseUpdate(body, { ...lifecycle(), encoding }),
      precheck: exists(ctx),
      jobData: (base, input) => ({ ...base, target: ctx.params.id as string, input }),
    });
  });

  router.post(`${url}/:id/confirm`, ...guards.write, async (ctx) => {
    await create(ctx, {
      jobName: JOBS.confirmPaymentIntent,
      validate: (body, encoding) => parseConfirm(body, { ...lifecycle(), encoding }),
      precheck: exists(ctx),
      jobData: (base, input) => ({ ...base, target: ctx.params.id as string, input }),
    });
  });

  router.post(`${url}/:id/cancel`, ...guards.write, async (ctx) => {
    await create(ctx, {
      jobName: JOBS.cancelPaymentIntent,
      validate: (body, encoding) => parseCancel(body, { encoding }),
      precheck: exists(ctx),
      jobData: (base, input) => ({ ...base, target: ctx.params.id as string, input }),
    });
  });
}
