import type Router from '@koa/router';
import { JOBS } from '../../common/jobs.js';
import { presentWebhookAttempt, presentWebhookEndpoint } from '../../common/presenters.js';
import type { AppDeps, Ctx, State } from '../context.js';
import type { WriteHandler } from '../handlers/write.js';
import type { Guards } from '../middleware/guards.js';
import { findInScope, listPage } from '../queries/pages.js';
import { sendJson } from '../respond.js';
import { parseListQuery } from '../schemas/lists.js';
import { rejectQuery } from '../schemas/query.js';
import {
  parseEmptyBody,
  parseRecover,
  parseResend,
  parseRotateSecret,
  parseWebhookEndpointCreate,
  parseWebhookEndpointUpdate,
} from '../schemas/webhook-endpoints.js';
import { eventsKept, findEvent } from '../queries/events.js';
import { errors } from '../../common/errors.js';
import { isId } from '../../common/ids.js';
import { WebhookRecoveryLocks } from '../webhook-recoveries.js';
import type { TokenLock } from '../../common/redis-lock.js';
import { WebhookTestSlots } from '../webhook-test-slots.js';

/** Registers its routes on the shared `/v1` router. */
export function webhookEndpointRoutes(router: Router<State>, deps: AppDeps, guards: Guards, create: WriteHandler): void {
  const url = '/v1/webhook_endpoints';
  const endpoints = deps.mongo.collections.webhookEndpoints;

  const findEndpoint = (ctx: Ctx) =>
    findInScope(endpoints, ctx.state.key!, ctx.params.id as string, { kind: 'webhook_endpoint', projection: { secret: 0 } });

  router.post(url, ...guards.write, async (ctx) => {
    await create(ctx, {
      jobName: JOBS.createWebhookEndpoint,
      idKind: 'webhook_endpoint',
      validate: (body, encoding) =>
        parseWebhookEndpointCreate(body, {
          livemode: ctx.state.key!.livemode,
          allowPrivateTargets: deps.config.webhooks.allowPrivateTargets,
          encoding,
        }),
      jobData: (base, input) => ({ ...base, input }),
    });
  });

  router.get(url, ...guards.read, async (ctx) => {
    const query = parseListQuery(new URLSearchParams(ctx.querystring), { idKind: 'webhook_endpoint' });
    const body = await listPage(endpoints, ctx.state.key!, query, {
      url,
      projection: { secret: 0 },
      present: (doc) => JSON.stringify(presentWebhookEndpoint(doc, { withSecret: false })),
    });
    sendJson(ctx, body);
  });

  router.get(`${url}/:id`, ...guards.read, async (ctx) => {
    rejectQuery(ctx.querystring);
    const doc = await findEndpoint(ctx);
    sendJson(ctx, JSON.stringify(presentWebhookEndpoint(doc, { withSecret: false })));
  });

  router.get(`${url}/:id/attempts`, ...guards.read, async (ctx) => {
    const query = parseListQuery(new URLSearchParams(ctx.querystring), { idKind: 'attempt' });
    const endpoint = await findEndpoint(ctx);
    const body = await listPage(deps.mongo.collections.webhookAttempts, ctx.state.key!, query, {
      url: `${url}/${endpoint._id}/attempts`,
      filter: { endpoint_id: endpoint._id },
      present: (doc) => JSON.stringify(presentWebhookAttempt(doc)),
    });
    sendJson(ctx, body);
  });

  // Changes: validated here, applied by a worker, answered with the job's result.
  const exists = (ctx: Ctx) => async () => {
    await findInScope(endpoints, ctx.state.key!, ctx.params.id as string, { kind: 'webhook_endpoint', projection: { _id: 1 } });
  };
  const target = (ctx: Ctx) => ctx.params.id as string;

  router.post(`${url}/:id`, ...guards.write, async (ctx) => {
    await create(ctx, {
      jobName: JOBS.updateWebhookEndpoint,
      validate: (body, encoding) =>
        parseWebhookEndpointUpdate(body, { livemode: ctx.state.key!.livemode, allowPrivateTargets: deps.config.webhooks.allowPrivateTargets, encoding }),
      precheck: exists(ctx),
      jobData: (base, input) => ({ ...base, target: target(ctx), input }),
    });
  });

  router.delete(`${url}/:id`, ...guards.write, async (ctx) => {
    await create(ctx, {
      jobName: JOBS.deleteWebhookEndpoint,
      validate: (body) => parseEmptyBody(body),
      precheck: exists(ctx),
      jobData: (base, input) => ({ ...base, target: target(ctx), input }),
    });
  });

  router.post(`${url}/:id/rotate_secret`, ...guards.write, async (ctx) => {
    await create(ctx, {
      jobName: JOBS.rotateWebhookSecret,
      validate: (body, encoding) => parseRotateSecret(body, { encoding }),
      precheck: exists(ctx),
      jobData: (base, input) => ({ ...base, target: target(ctx), input }),
    });
  });

  router.post(`${url}/:id/resend`, ...guards.write, async (ctx) => {
    let event = '';
    await create(ctx, {
      jobName: JOBS.resendWebhookEvent,
      validate: (body, encoding) => {
        const input = parseResend(body, { encoding });
        event = input.event;
        return input;
      },
      precheck: async () => {
        await exists(ctx)();
        // An event of another project or mode is as missing as an unknown one.
        const found = isId('event', event) ? await findEvent(deps.mongo.collections, ctx.state.key!, event, eventsKept(deps)) : null;
        if (found === null) throw errors.resourceMissing('event', event, 'event');
      },
      jobData: (base, input) => ({ ...base, target: target(ctx), input }),
    });
  });

  const recoveries = new WebhookRecoveryLocks(deps.redis, { prefix: deps.config.queuePrefix, leaseMs: deps.config.writeTimeoutMs + 5000 });
  router.post(`${url}/:id/recover`, ...guards.write, async (ctx) => {
    const holder = ctx.state.requestId;
    const recovery: { lock: TokenLock | null } = { lock: null };
    try {
      await create(ctx, {
        jobName: JOBS.recoverWebhookEvents,
        validate: (body, encoding, now) => parseRecover(body, { encoding, now }),
        // One recovery of an endpoint at a time is its own guard (409 webhook_recovery_in_progress).
        object: () => null,
        precheck: async () => {
          await exists(ctx)();
          recovery.lock = await recoveries.take(target(ctx), holder);
          if (!recovery.lock) throw errors.recoveryInProgress();
        },
        jobData: (base, input) => ({ ...base, target: target(ctx), input }),
      });
    } finally {
      await recovery.lock?.release();
    }
  });

  // Test calls in flight per scope are capped: past the cap, 429 before anything is enqueued.
  const testSlots = new WebhookTestSlots(deps.redis, {
    prefix: deps.config.queuePrefix,
    limit: deps.config.webhooks.testsInFlight,
    leaseMs: deps.config.writeTimeoutMs + 5000,
  });
  router.post(`${url}/:id/test`, ...guards.write, async (ctx) => {
    const key = ctx.state.key!;
    const holder = ctx.state.requestId;
    let held = false;
    try {
      await create(ctx, {
        jobName: JOBS.testWebhookEndpoint,
        validate: (body) => parseEmptyBody(body),
        // Test calls change nothing of the endpoint and have their own cap (429 past it).
        object: () => null,
        // The slot first: a storm of test calls past the cap costs a Redis call each, no read of MongoDB.
        precheck: async () => {
          if (!(await testSlots.take(key, holder))) {
            const limit = deps.config.webhooks.testsInFlight;
            throw errors.testCallsInFlight(limit, testSlots.retryAfterSeconds(deps.config.webhooks.testTimeoutMs));
          }
          held = true;
          await exists(ctx)();
        },
        jobData: (base, input) => ({ ...base, target: target(ctx), input }),
      });
    } finally {
      if (held) await testSlots.release(key, holder).catch(() => undefined);
    }
  });
}
