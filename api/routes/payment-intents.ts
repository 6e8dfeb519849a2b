import type Router from '@koa/router';
import { JOBS, type CreatePaymentIntentData, type PaymentIntentInput } from '../../common/jobs.js';
import { presentPaymentIntent } from '../../common/presenters.js';
import type { AppDeps, State } from '../context.js';
import { parseListQuery } from '../schemas/lists.js';
import { parsePaymentIntentCreate } from '../schemas/payment-intents.js';
import { handleCreate } from '../services/create.js';
import { findInScope, listPage } from '../services/lists.js';
import { rejectQuery, sendJson, type Guards } from './shared.js';

/** Registers its routes on the shared `/v1` router. */
export function paymentIntentRoutes(router: Router<State>, deps: AppDeps, guards: Guards): void {
  const url = '/v1/payment_intents';

  router.post(url, ...guards.write, async (ctx) => {
    await handleCreate<PaymentIntentInput, CreatePaymentIntentData>(deps, ctx, {
      jobName: JOBS.createPaymentIntent,
      idKind: 'payment_intent',
      validate: (body) =>
        parsePaymentIntentCreate(body, {
          operators: deps.config.operators,
          defaultCurrency: deps.config.defaultCurrency,
          now: Math.floor(deps.now() / 1000),
        }),
      jobData: (base, input) => ({ ...base, input }),
    });
  });

  router.get(url, ...guards.read, async (ctx) => {
    const query = parseListQuery(new URLSearchParams(ctx.querystring), { idKind: 'payment_intent' });
    const body = await listPage(deps.mongo.collections.paymentIntents, ctx.state.key!, query, {
      url,
      projection: { client_secret: 0 },
      present: (doc) => JSON.stringify(presentPaymentIntent(doc, { withSecret: false })),
    });
    sendJson(ctx, body);
  });

  router.get(`${url}/:id`, ...guards.read, async (ctx) => {
    rejectQuery(ctx);
    const doc = await findInScope(deps.mongo.collections.paymentIntents, ctx.state.key!, ctx.params.id as string, {
      kind: 'payment_intent',
    });
    sendJson(ctx, JSON.stringify(presentPaymentIntent(doc, { withSecret: false })));
  });
}
