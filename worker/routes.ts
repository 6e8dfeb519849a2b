/**
 * Which processor runs each job: one table per queue, each built from the worker's
 * dependency bags (worker/deps.ts). A table names every job of its queue (the
 * compiler checks it against common/jobs.ts), so a new job is one line in its
 * queue's table. A name on no table fails at once, never retried (`unknownJob`).
 */
import type { Job } from 'bullmq';
import { JOBS, unknownJob, type AnyJob, type JobData, type JobName, type JobResult, type QueueName } from '../common/jobs.js';
import type { JobDeps } from './deps.js';
import { createPaymentIntent } from './processors/create-payment-intent.js';
import { createWebhookEndpoint } from './processors/create-webhook-endpoint.js';
import { dispatchEvent } from './processors/dispatch-event.js';
import {
  applyOperatorOutcome,
  cancelPaymentIntent,
  confirmPaymentIntent,
  expirePaymentIntent,
  updatePaymentIntent,
} from './processors/payment-intent-lifecycle.js';
import { checkAttempt } from './processors/operator-check.js';
import { createRefund, updateRefund } from './processors/refunds.js';
import { sweepEvents } from './processors/sweep-events.js';
import { sweepIdempotency } from './processors/sweep-idempotency.js';
import { sweepIntents, type RecentEvents } from './processors/sweep-intents.js';
import { recordedBefore } from './lifecycle/transition.js';
import { sweepRefunds } from './processors/sweep-refunds.js';
import { probeOperators } from './processors/probe-operators.js';
import {
  deleteWebhookEndpoint,
  recoverWebhookEvents,
  resendWebhookEvent,
  rotateWebhookSecret,
  testWebhookEndpoint,
  updateWebhookEndpoint,
} from './processors/webhook-endpoint-mutations.js';
import { processRefund } from './refunds/process.js';
import { deliverWebhook } from './webhooks/deliver.js';
import { settleDelivery } from './webhooks/pending-events.js';
import { settleRedelivery } from './webhooks/redeliveries.js';

/** A processor for every job of queue `Q`, each seeing its own job's data. `token` is the worker's lock on the job. */
export type JobRoutes<Q extends QueueName> = {
  [N in JobName<Q>]: (job: Job<JobData<Q, N>, JobResult<Q, N>, N>, token?: string) => Promise<JobResult<Q, N>>;
};

/** The processor of a queue's worker: the job's route, or `unknownJob`. */
export function routeJobs<Q extends QueueName>(routes: JobRoutes<Q>): (job: AnyJob<Q>, token?: string) => Promise<unknown> {
  return async (job, token) => {
    // Own keys only: a job named after an Object.prototype method is unknown too.
    if (!Object.hasOwn(routes, job.name)) return unknownJob(job);
    const route = routes[job.name as JobName<Q>] as (job: AnyJob<Q>, token?: string) => Promise<unknown>;
    return route(job, token);
  };
}

export function writesRoutes({ config, createDeps, eventsQueue, fanOut, intentsQueue, lifecycleDeps, endpointDeps, refundDeps }: JobDeps): JobRoutes<'writes'> {
  return {
    [JOBS.createPaymentIntent]: (job) => createPaymentIntent({ ...createDeps, eventsQueue, fanOut, intentsQueue }, job),
    [JOBS.confirmPaymentIntent]: (job) => confirmPaymentIntent(lifecycleDeps, job),
    [JOBS.cancelPaymentIntent]: (job) => cancelPaymentIntent(lifecycleDeps, job),
    [JOBS.updatePaymentIntent]: (job) => updatePaymentIntent(lifecycleDeps, job),
    [JOBS.createWebhookEndpoint]: (job) => createWebhookEndpoint({ ...createDeps, endpointLimit: config.webhooks.endpointLimit }, job),
    [JOBS.updateWebhookEndpoint]: (job) => updateWebhookEndpoint(endpointDeps, job),
    [JOBS.deleteWebhookEndpoint]: (job) => deleteWebhookEndpoint(endpointDeps, job),
    [JOBS.rotateWebhookSecret]: (job) => rotateWebhookSecret(endpointDeps, job),
    [JOBS.resendWebhookEvent]: (job) => resendWebhookEvent(endpointDeps, job),
    [JOBS.recoverWebhookEvents]: (job) => recoverWebhookEvents(endpointDeps, job),
    [JOBS.createRefund]: (job) => createRefund(refundDeps, job),
    [JOBS.updateRefund]: (job) => updateRefund(refundDeps, job),
  };
}

export function intentsRoutes({ lifecycleDeps, refundDeps, checkDeps }: JobDeps): JobRoutes<'intents'> {
  return {
    [JOBS.operatorOutcome]: (job) => applyOperatorOutcome(lifecycleDeps, job),
    [JOBS.expirePaymentIntent]: (job) => expirePaymentIntent(lifecycleDeps, job),
    [JOBS.operatorCheck]: (job) => checkAttempt(checkDeps, job),
    [JOBS.processRefund]: (job) => processRefund(refundDeps, job.data),
  };
}

export function maintenanceRoutes({ config, now, collections, redis, prefix, intentsQueue, webhooksQueue, pending, refundDeps, lifecycleDeps, queriesUseIndexes }: JobDeps): JobRoutes<'maintenance'> {
  // A sweeper's pass walks for its budget, never longer than its interval (worker/sweep-walk.ts).
  const intentsBudgetMs = Math.min(config.sweepBudgetMs, config.intentsSweepIntervalMs);
  return {
    [JOBS.sweepIdempotency]: () => sweepIdempotency({ collections, redis: redis.commands, prefix }, now()),
    [JOBS.sweepIntents]: (job) => {
      const recentMs = job.data.recentMs;
      const recent: RecentEvents | undefined = recentMs === undefined ? undefined : { recentMs, record: (doc, evt) => recordedBefore(lifecycleDeps, doc, evt) };
      return sweepIntents({ collections, intentsQueue, redis: redis.commands, prefix, queriesUseIndexes }, now(), { budgetMs: intentsBudgetMs }, recent);
    },
    [JOBS.sweepRefunds]: (job) =>
      sweepRefunds({ ...refundDeps, intentsQueue, redis: redis.commands, prefix, queriesUseIndexes }, now(), job.data.graceMs ?? config.intentsSweepIntervalMs, { budgetMs: intentsBudgetMs }),
    [JOBS.probeOperators]: () => probeOperators({ connectors: lifecycleDeps.connectors, redis: redis.commands, prefix, config: config.liveOperators }),
    [JOBS.sweepEvents]: () =>
      sweepEvents(
        { collections, webhooksQueue, config: config.webhooks, pending, redis: redis.commands, prefix, queriesUseIndexes },
        { nowMs: now(), ageMs: config.webhooks.sweepAgeMs, budgetMs: Math.min(config.sweepBudgetMs, config.webhooks.sweepIntervalMs) },
      ),
  };
}

export function eventsRoutes({ dispatchDeps }: JobDeps): JobRoutes<'events'> {
  return {
    [JOBS.dispatchEvent]: (job) => dispatchEvent(dispatchDeps, job.data),
  };
}

export function webhooksRoutes({ redeliveries, pending, deliverDeps, endpointDeps }: JobDeps): JobRoutes<'webhooks'> {
  return {
    [JOBS.deliverWebhook]: (job, token) => {
      if (job.data.redelivery) return settleRedelivery(redeliveries, job, () => deliverWebhook(deliverDeps, job, token), pending);
      return settleDelivery(pending, job, () => deliverWebhook(deliverDeps, job, token));
    },
    [JOBS.testWebhookEndpoint]: (job) => testWebhookEndpoint(endpointDeps, job),
  };
}
