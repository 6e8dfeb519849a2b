/**
 * Which processor runs each job: one table per queue, each built from the worker's
 * dependency bags (worker/deps.ts). A table names every job of its queue (the
 * compiler checks it against common/jobs.ts), so a new job is one line in its
 * queue's table. A name on no table fails at once, never retried (`unknownJob`).
 */
import { DelayedError, type Job } from 'bullmq';
import { RecordLockTimeout } from './record-lock.js';
import { publishRefusal } from './processors/create.js';
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
import { movementKeys } from '../common/ledger.js';
import { sweepRefunds } from './processors/sweep-refunds.js';
import { sweepRetention } from './processors/sweep-retention.js';
import { probeOperators } from './processors/probe-operators.js';
import { reconcile } from './reconcile/run.js';
import {
  deleteWebhookEndpoint,
  recoverWebhookEvents,
  resendWebhookEvent,
  rotateWebhookSecret,
  testWebhookEndpoint,
  updateWebhookEndpoint,
} from './processors/webhook-endpoint-mutations.js';
import { processRefund } from './refunds/process.js';
import { checkPayoutBatch } from './payouts/batches.js';
import { cancelPayout, createPayout, createPayoutBatch } from './payouts/create.js';
import { processPayout } from './payouts/process.js';
import { releaseStrandedHolds } from './payouts/stranded.js';
import { sweepPayouts } from './payouts/sweep.js';
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

/**
 * The writes queue's table, each request's job guarded twice (DESIGN section 20,
 * "No worker slot waits for a lock"):
 *
 * - a record that stays locked past `RECORD_LOCK_WAIT_MS` is answered 409
 *   `lock_timeout` (not recorded under the key: a retry runs again), instead of the
 *   job retrying while its request waits;
 * - a job that changes an existing object (it may wait on that object's lock) runs
 *   only while its scope has fewer than half of this worker's slots; past that it is
 *   put back for a moment, so one tenant's convoy on one object never takes every slot.
 */
export function writesRoutes(deps: JobDeps): JobRoutes<'writes'> {
  const routes = writesTable(deps);
  const share = new ScopeShare(Math.max(1, Math.floor(deps.config.workerConcurrency / 2)));
  const guarded = {} as Record<string, (job: Job, token?: string) => Promise<unknown>>;
  for (const [name, route] of Object.entries(routes) as Array<[string, (job: Job, token?: string) => Promise<unknown>]>) {
    const changesObject = !CREATES.has(name);
    guarded[name] = async (job, token) => {
      const scope = scopeOf(job.data);
      if (changesObject && scope && !share.enter(scope)) {
        // Put back for a moment: its scope holds its share of the slots already.
        await job.moveToDelayed(Date.now() + SHARE_RETRY_MS + Math.floor(Math.random() * SHARE_RETRY_MS), token);
        throw new DelayedError();
      }
      try {
        return await route(job, token);
      } catch (err) {
        if (!(err instanceof RecordLockTimeout)) throw err;
        return publishRefusal(deps.createDeps, String(job.id), job.data as never, { code: 'lock_timeout', message: LOCK_TIMEOUT_MESSAGE }, 409);
      } finally {
        if (changesObject && scope) share.leave(scope);
      }
    };
  }
  return guarded as unknown as JobRoutes<'writes'>;
}

const SHARE_RETRY_MS = 50;
const LOCK_TIMEOUT_MESSAGE = 'Another request is changing this object right now; nothing was done. Retry shortly with the same idempotency key.';
/** The writes that make a new object: they wait on no lock. */
const CREATES = new Set<string>([JOBS.createPaymentIntent, JOBS.createWebhookEndpoint, JOBS.createPayout, JOBS.createPayoutBatch]);

function scopeOf(data: unknown): string | null {
  const { project, livemode } = (data ?? {}) as { project?: unknown; livemode?: unknown };
  return typeof project === 'string' ? `${project}:${livemode === true ? 'live' : 'test'}` : null;
}

/** Active jobs per scope in this process, each scope held to `max`. */
class ScopeShare {
  private readonly active = new Map<string, number>();

  constructor(private readonly max: number) {}

  enter(scope: string): boolean {
    const now = this.active.get(scope) ?? 0;
    if (now >= this.max) return false;
    this.active.set(scope, now + 1);
    return true;
  }

  leave(scope: string): void {
    const now = (this.active.get(scope) ?? 1) - 1;
    if (now <= 0) this.active.delete(scope);
    else this.active.set(scope, now);
  }
}

function writesTable({ config, createDeps, eventsQueue, fanOut, intentsQueue, lifecycleDeps, endpointDeps, refundDeps, payoutDeps }: JobDeps): JobRoutes<'writes'> {
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
    [JOBS.createPayout]: (job) => createPayout(payoutDeps, job),
    [JOBS.createPayoutBatch]: (job) => createPayoutBatch(payoutDeps, job),
    [JOBS.cancelPayout]: (job) => cancelPayout(payoutDeps, job),
  };
}

export function intentsRoutes({ lifecycleDeps, refundDeps, checkDeps, payoutDeps }: JobDeps): JobRoutes<'intents'> {
  return {
    [JOBS.operatorOutcome]: (job) => applyOperatorOutcome(lifecycleDeps, job),
    [JOBS.expirePaymentIntent]: (job) => expirePaymentIntent(lifecycleDeps, job),
    [JOBS.operatorCheck]: (job) => checkAttempt(checkDeps, job),
    [JOBS.processRefund]: (job) => processRefund(refundDeps, job.data),
    [JOBS.processPayout]: (job) => processPayout(payoutDeps, job.data),
    [JOBS.checkPayoutBatch]: (job) => checkPayoutBatch(payoutDeps, job.data),
  };
}

/** How soon the retention sweep goes on after a pass that ran out of time: other maintenance jobs go first. */
const RETENTION_FOLLOW_UP_MS = 1_000;
/** How far back the refunds' sweep looks for balances whose last round a crash may have cut short. */
const LEDGER_TAILS_RECENT_MS = 3_600_000;

export function maintenanceRoutes({ config, now, collections, redis, prefix, intentsQueue, webhooksQueue, maintenanceQueue, pending, refundDeps, lifecycleDeps, payoutDeps, queriesUseIndexes, ledger }: JobDeps): JobRoutes<'maintenance'> {
  // A sweeper's pass walks for its budget, never longer than its interval (worker/sweep-walk.ts).
  const intentsBudgetMs = Math.min(config.sweepBudgetMs, config.intentsSweepIntervalMs);
  return {
    [JOBS.sweepIdempotency]: () => sweepIdempotency({ collections, redis: redis.commands, prefix }, now()),
    [JOBS.sweepIntents]: (job) => {
      const recentMs = job.data.recentMs;
      const recent: RecentEvents | undefined = recentMs === undefined ? undefined : { recentMs, record: (doc, evt) => recordedBefore(lifecycleDeps, doc, evt) };
      return sweepIntents({ collections, intentsQueue, redis: redis.commands, prefix, queriesUseIndexes }, now(), { budgetMs: intentsBudgetMs }, recent);
    },
    [JOBS.sweepRefunds]: async (job) => {
      const pass = await sweepRefunds({ ...refundDeps, intentsQueue, redis: redis.commands, prefix, queriesUseIndexes }, now(), job.data.graceMs ?? config.intentsSweepIntervalMs, { budgetMs: intentsBudgetMs });
      // The ledger's rounds cut short by a crash (balance/ledger.ts): the balances changed lately.
      const tails = await ledger.completeTails(LEDGER_TAILS_RECENT_MS);
      return { ...pass, ledger: tails };
    },
    [JOBS.adjustBalance]: async (job) => {
      const { id, reference, currency, amount, description, project, livemode } = job.data;
      const outcome = await ledger.post({ project, livemode, key: movementKeys.adjustment(reference), currency, type: 'adjustment', amount, source: id, operator: null, description });
      if (outcome.kind !== 'posted') throw new Error(`adjustment ${id}: not posted`);
      return { txn: outcome.txn._id };
    },
    [JOBS.sweepRetention]: async () => {
      const pass = await sweepRetention({ collections, redis: redis.commands, prefix, retention: config.retention, now });
      if (!pass.done) {
        const once = { removeOnComplete: true, removeOnFail: true };
        await maintenanceQueue.add(JOBS.sweepRetention, {}, { jobId: `retention-sweep-more-${now()}`, delay: RETENTION_FOLLOW_UP_MS, ...once });
      }
      return pass;
    },
    [JOBS.sweepPayouts]: async () => ({
      ...(await sweepPayouts(payoutDeps, config.intentsSweepIntervalMs)),
      stranded: await releaseStrandedHolds({ ...payoutDeps, strandedMs: config.payoutHoldStrandedMs }),
    }),
    [JOBS.probeOperators]: () => probeOperators({ connectors: lifecycleDeps.connectors, redis: redis.commands, prefix, config: config.liveOperators }),
    [JOBS.reconcileOperator]: (job) => reconcile({ ...lifecycleDeps, ...refundDeps, operatorTimeoutMs: config.liveOperators.timeoutMs }, job.data.account),
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
