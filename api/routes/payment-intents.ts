import type Router from '@koa/router';
import { JOBS, type Scope } from '../../common/jobs.js';
import { presentPaymentIntent } from '../../common/presenters.js';
import { InputSeal } from '../../common/input-seal.js';
import { KEPT_FOR_RETRIEVES, KeptIntents } from '../../common/kept-intents.js';
import type { AppDeps, Ctx, State } from '../context.js';
import type { WriteHandler } from '../handlers/write.js';
import type { Guards } from '../middleware/guards.js';
import { findInScope, listPage } from '../queries/pages.js';
import { parseSearchParams, searchPage } from '../queries/search.js';
import { resolveStoreProfile, type StoreProfile } from '../../common/store-profile.js';
import { sendJson } from '../respond.js';
import { parseListQuery } from '../schemas/lists.js';
import { parsePaymentIntentCreate } from '../schemas/payment-intents.js';
import { parseCancel, parseConfirm, parseUpdate } from '../schemas/payment-intent-lifecycle.js';
import { rejectQuery } from '../schemas/query.js';
import { accountFor } from '../../common/operator-accounts.js';
import { BREAKER_PROBE_MS, breakerState } from '../../common/operator-breaker.js';
import { countryOf, resolveNumber } from '../../common/operator-catalog.js';
import { errors } from '../../common/errors.js';

/**
 * Live mode (DESIGN section 14): a confirm through an operator account whose breaker
 * is open is answered 503 `operator_unavailable` with `Retry-After`, before anything
 * is claimed or enqueued, so the intent is unchanged. The operator is the one named,
 * else the one the number's prefix predicts; an intent that selects its operator
 * otherwise is left to the worker, whose checks retry on the poll schedule.
 */
async function refuseWhileBreakerOpen(deps: AppDeps, input: { operator: string | null; phone_number: string }): Promise<void> {
  const operator = input.operator ?? resolveNumber(input.phone_number).operator;
  if (!operator) return;
  const { accounts, breakerFailures } = deps.config.liveOperators;
  const account = accountFor(accounts, operator, countryOf(input.phone_number)?.code ?? null, input.phone_number);
  if (!account) return;
  const state = await breakerState(deps.redis, deps.config.queuePrefix, account.id, breakerFailures);
  if (state.open) throw errors.operatorUnavailable(operator, Math.ceil(BREAKER_PROBE_MS / 1000));
}

/** How many intents created, or found by a mutation's existence check, each api process remembers. */
const KNOWN_INTENTS = 100_000;

/** Ids known to exist in a scope; the oldest forgotten first beyond `max`. */
class KnownIds {
  private readonly ids = new Set<string>();

  constructor(private readonly max: number) {}

  has(scope: Scope, id: string): boolean {
    return this.ids.has(KnownIds.key(scope, id));
  }

  add(scope: Scope, id: string): void {
    if (this.ids.size >= this.max) this.ids.delete(this.ids.values().next().value as string);
    this.ids.add(KnownIds.key(scope, id));
  }

  private static key(scope: Scope, id: string): string {
    return `${scope.project}\n${scope.livemode ? 'live' : 'test'}\n${id}`;
  }
}

/** Registers its routes on the shared `/v1` router. */
export function paymentIntentRoutes(router: Router<State>, deps: AppDeps, guards: Guards, create: WriteHandler): void {
  const url = '/v1/payment_intents';

  // A payment intent is never deleted, nor moved to another scope: once found, or
  // created by this process, it exists for good. A mutation's existence check (404)
  // reads MongoDB only for an intent this process has not seen: not for a confirm
  // that follows its create through the same api, nor for a retried mutation (409
  // while its first try is in flight, 503 under load).
  const known = new KnownIds(KNOWN_INTENTS);

  router.post(url, ...guards.write, async (ctx) => {
    await create(ctx, {
      jobName: JOBS.createPaymentIntent,
      idKind: 'payment_intent',
      validate: (body, encoding, now) =>
        parsePaymentIntentCreate(body, { operators: deps.config.operators, defaultCurrency: deps.config.defaultCurrency, now, encoding }),
      jobData: (base, input) => ({ ...base, input }),
      created: (id) => known.add(ctx.state.key!, id),
    });
  });

  router.get(url, ...guards.read, async (ctx) => {
    const query = parseListQuery(new URLSearchParams(ctx.querystring), { idKind: 'payment_intent' });
    const body = await listPage(deps.mongo.collections.paymentIntents, ctx.state.key!, query, {
      url,
      // The stored event is the largest field, and a list of intents does not show it.
      projection: { created_event: 0, history: 0, refunds: 0 },
      present: (doc) => JSON.stringify(presentPaymentIntent(doc)),
    });
    sendJson(ctx, body);
  });

  // Before `/:id`, which would take `search` for an id. The store's profile is asked
  // once, on the first search (common/store-profile.ts).
  let profile: Promise<StoreProfile> | null = null;
  router.get(`${url}/search`, ...guards.read, async (ctx) => {
    const search = parseSearchParams(new URLSearchParams(ctx.querystring));
    profile ??= resolveStoreProfile(deps.config.storeProfile, deps.mongo.db).catch((err: unknown) => {
      profile = null;
      throw err;
    });
    const body = await searchPage(deps.mongo.collections.paymentIntents, ctx.state.key!, search, {
      elemMatch: (await profile).elemMatchFields,
      url: `${url}/search`,
      projection: { created_event: 0, history: 0, refunds: 0 },
      present: (doc) => JSON.stringify(presentPaymentIntent(doc)),
    });
    sendJson(ctx, body);
  });

  // Retrieves, polled while a payment is on its way, are answered from the intents
  // this process read, while each one's token in Redis is unchanged (common/kept-intents.ts).
  const kept = new KeptIntents({ redis: deps.redis, prefix: deps.config.queuePrefix, now: deps.now, ...KEPT_FOR_RETRIEVES });
  deps.redis.on('close', () => kept.clear());
  router.get(`${url}/:id`, ...guards.read, async (ctx) => {
    rejectQuery(ctx.querystring);
    const key = ctx.state.key!;
    const id = ctx.params.id as string;
    const doc = await kept.get(key, id, () =>
      findInScope(deps.mongo.collections.paymentIntents, key, id, {
        kind: 'payment_intent',
        projection: { created_event: 0, history: 0, refunds: 0 },
      }),
    );
    sendJson(ctx, JSON.stringify(presentPaymentIntent(doc)));
  });

  // Mutations: validated here, applied by a worker on the stored intent (its status
  // decides), answered with the job's result, as a create is.
  const exists = (ctx: Ctx) => async () => {
    const key = ctx.state.key!;
    const id = ctx.params.id as string;
    if (known.has(key, id)) return;
    await findInScope(deps.mongo.collections.paymentIntents, key, id, { kind: 'payment_intent', projection: { _id: 1 } });
    known.add(key, id);
  };

  router.post(`${url}/:id`, ...guards.write, async (ctx) => {
    await create(ctx, {
      jobName: JOBS.updatePaymentIntent,
      validate: (body, encoding, now) => parseUpdate(body, { operators: deps.config.operators, now, encoding }),
      precheck: exists(ctx),
      jobData: (base, input) => ({ ...base, target: ctx.params.id as string, input }),
    });
  });

  // The payer's phone number and one-time code ride in the job sealed, under a key
  // Redis never holds (common/input-seal.ts); the key is loaded before anything is claimed.
  const seal = new InputSeal(deps.mongo.collections.serviceKeys, { reloadMs: deps.config.serviceKeysReloadMs });
  router.post(`${url}/:id/confirm`, ...guards.write, async (ctx) => {
    await create(ctx, {
      jobName: JOBS.confirmPaymentIntent,
      removeOnComplete: true,
      validate: (body, encoding, now) => parseConfirm(body, { operators: deps.config.operators, now, encoding }),
      precheck: async (input) => {
        await Promise.all([exists(ctx)(), seal.ready(), ctx.state.key!.livemode ? refuseWhileBreakerOpen(deps, input) : undefined]);
      },
      jobData: async (base, { phone_number, otp, ...input }) => ({
        ...base,
        target: ctx.params.id as string,
        input,
        sealed: await seal.seal(base.id, { phone_number, otp }),
      }),
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
