/**
 * Worker process: creates, housekeeping, event dispatch and webhook delivery.
 * Any number of these run side by side against the same Redis and MongoDB.
 */
import type { MinimalJob } from 'bullmq';
import type { Redis } from 'ioredis';
import { loadConfig, type Config } from '../common/config.js';
import { IdGenerator } from '../common/ids.js';
import { JOBS, openQueue, QUEUES, startTypedWorker, unknownJob, type DispatchEventData } from '../common/jobs.js';
import { createLogger, logQueueErrors, type Logger } from '../common/logger.js';
import { connect, ensureIndexes, openMongo, untilDone, type Mongo } from '../common/mongo.js';
import { createRedis } from '../common/redis.js';
import { jitteredBackoff } from '../common/retry.js';
import { runEntryPoint, runShutdownSteps, stopOnSignals, type ShutdownStep } from '../common/shutdown.js';
import { resolveStoreProfile, type StoreProfile } from '../common/store-profile.js';
import { InsertBatcher } from './group-commit.js';
import { startWorkerMetrics } from './metrics.js';
import { createPaymentIntent } from './processors/create-payment-intent.js';
import { createWebhookEndpoint } from './processors/create-webhook-endpoint.js';
import { through, WriteGate } from './lifecycle/write-gate.js';
import {
  deleteWebhookEndpoint,
  recoverWebhookEvents,
  resendWebhookEvent,
  rotateWebhookSecret,
  testWebhookEndpoint,
  updateWebhookEndpoint,
  type EndpointMutationDeps,
} from './processors/webhook-endpoint-mutations.js';
import {
  applyOperatorOutcome,
  cancelPaymentIntent,
  confirmPaymentIntent,
  expirePaymentIntent,
  updatePaymentIntent,
  type LifecycleDeps,
} from './processors/payment-intent-lifecycle.js';
import { dispatchEvent } from './processors/dispatch-event.js';
import { checkAttempt, type CheckDeps } from './processors/operator-check.js';
import { liveConnectors } from './operators/connector.js';
import { sweepEvents } from './processors/sweep-events.js';
import { sweepIdempotency } from './processors/sweep-idempotency.js';
import { sweepIntents } from './processors/sweep-intents.js';
import { createRefund, updateRefund, type RefundDeps } from './processors/refunds.js';
import { sweepRefunds } from './processors/sweep-refunds.js';
import { processRefund } from './refunds/process.js';
import { deliverWebhook } from './webhooks/deliver.js';
import { endpointSlots } from './webhooks/endpoint-slots.js';
import { FirstAttempts, priorAttempts } from './webhooks/first-attempt.js';
import { PendingEvents, settleDelivery } from './webhooks/pending-events.js';
import { WEBHOOK_BACKOFF, webhookBackoff } from './webhooks/retry-policy.js';
import { yieldToCreates } from './webhooks/yield-to-creates.js';
import { Redeliveries, settleRedelivery } from './webhooks/redeliveries.js';

/** An endpoint slot's lease, renewed while its POST runs: a dead worker's slots are free again within it. */
const SLOT_LEASE_MS = 3_000;

/** How long an attempt's record waits for others to share its commit. */
const ATTEMPT_BATCH_WAIT_MS = 50;

/**
 * How often a queue is checked for stalled jobs: a third of the job lock, at least 1 s.
 * A check moves back to waiting the jobs it found active the check before whose lock
 * is gone (a live worker renews its locks every half lock, so only a dead worker's
 * lapse). A dead worker's locks lapse 2.5 to 5 s after its death with the 5 s lock,
 * and its jobs wait at most one check more: 1.7 s, where a check every lock added up
 * to 5 s, which with the lapse came near the creates' 10 s timeout.
 */
export function stalledCheckMs(jobLockMs: number): number {
  return Math.max(1000, Math.floor(jobLockMs / 3));
}

/**
 * How long a redelivery counts as pending at most, however its end went unseen: its
 * schedule (the first steps of the deliveries'), with the jitter, and an hour for
 * waits for slots.
 */
export function redeliveryStaleMs(config: Config['webhooks']): number {
  const steps = config.retrySchedule.slice(0, Math.max(0, config.redeliveryAttempts - 1));
  return Math.round(steps.reduce((sum, ms) => sum + ms, 0) * (1 + config.jitter)) + 3600_000;
}

/** Retry delay of infrastructure faults: doubling from 250 ms, capped at 10 s, jittered. */
export function cappedBackoff(attemptsMade: number, random: () => number = Math.random): number {
  return jitteredBackoff(attemptsMade, { baseMs: 250, capMs: 10_000, random });
}

/** The worker's Redis connections, built by the caller like its MongoDB. */
export interface WorkerRedis {
  /** Fail-fast: result publishing, the idempotency cache, subscription hints. A failure fails the job, which is retried. */
  commands: Redis;
  /** Patient: the queues this worker adds jobs to. */
  queues: Redis;
  /** Patient: BullMQ's blocking connection for its Workers. */
  workers: Redis;
}

export interface WorkerDeps {
  config: Config;
  logger: Logger;
  mongo: Mongo;
  redis: WorkerRedis;
  /** Epoch ms. */
  now: () => number;
  ids: IdGenerator;
  /** What the store can do (common/store-profile.ts), decided once at start-up. */
  storeProfile: StoreProfile;
}

export interface Running {
  close(): Promise<void>;
}

export async function startWorker({ config, logger, mongo, redis, now, ids, storeProfile }: WorkerDeps): Promise<Running> {
  const prefix = config.queuePrefix;
  const collections = mongo.collections;
  // Dispatch jobs retry infrastructure faults for a while, then the sweeper takes over;
  // a completed one is removed so the sweeper can add its id again.
  const eventsQueue = openQueue(QUEUES.events, {
    connection: redis.queues,
    prefix,
    defaultJobOptions: { attempts: 20, backoff: { type: 'capped' }, removeOnComplete: true, removeOnFail: 1000 },
  });
  const webhooksQueue = openQueue(QUEUES.webhooks, { connection: redis.queues, prefix });
  const maintenanceQueue = openQueue(QUEUES.maintenance, { connection: redis.queues, prefix });
  const intentsQueue = openQueue(QUEUES.intents, { connection: redis.queues, prefix });
  // Read only: how many creates wait (deliveries yield to them).
  const createsQueue = openQueue(QUEUES.creates, { connection: redis.queues, prefix });
  logQueueErrors([eventsQueue, webhooksQueue, maintenanceQueue, intentsQueue, createsQueue], logger);
  // One gate for the process's batched inserts and transition updates (write-gate.ts).
  const writesInFlight = config.workerWritesInFlight ?? storeProfile.writesInFlight;
  const transitionWritesInFlight = Math.min(writesInFlight, config.workerTransitionWritesInFlight ?? storeProfile.transitionWritesInFlight);
  const writes = new WriteGate(writesInFlight);
  const inserts = new InsertBatcher({ maxDocs: config.createBatchMax, waitMs: config.createBatchWaitMs, gate: writes });
  const createDeps = { collections, redis: redis.commands, prefix, now, inserts };
  const pending = new PendingEvents({ redis: redis.commands, prefix, collections, logger });
  const slots = endpointSlots(redis.commands, { prefix, limit: config.webhooks.endpointConcurrency, leaseMs: SLOT_LEASE_MS });
  // Attempts are recorded after their POST, where no client waits: a longer window
  // than the creates' gathers more of them into each commit.
  const attempts = new InsertBatcher({ maxDocs: 64, waitMs: ATTEMPT_BATCH_WAIT_MS, gate: writes });
  const deliverDeps = { collections, config: config.webhooks, logger, now, ids, slots, attempts, redis: redis.commands, prefix };
  // The delivery worker, once started: first attempts are made in place only while it
  // takes deliveries at full concurrency (not while they yield to creates).
  const deliveries: { worker?: { concurrency: number } } = {};
  const first = new FirstAttempts({
    ...deliverDeps,
    pending,
    webhooksQueue,
    limit: config.webhooks.concurrency,
    open: () => deliveries.worker !== undefined && deliveries.worker.concurrency >= config.webhooks.concurrency,
  });
  const dispatchDeps = { collections, webhooksQueue, config: config.webhooks, pending, first, redis: redis.commands, prefix };
  // Events are fanned out in the job that records them (their first attempts made
  // there too); the dispatch job is the fallback.
  const fanOut = (event: DispatchEventData, json: string) => dispatchEvent(dispatchDeps, event, json);
  const lifecycleDeps: LifecycleDeps = {
    ...createDeps,
    eventsQueue,
    fanOut,
    intentsQueue,
    ids,
    simulator: config.simulator,
    confirmFailureLimit: config.confirmFailureLimit,
    // Live mode: one connector per configured operator; only their answers decide
    // live intents (security review M3; docs/payments.md, "Live operators").
    connectors: liveConnectors(config, { redis: redis.commands, db: mongo.db, prefix }),
    publicBaseUrl: config.publicBaseUrl,
    // Transition updates hold at most their share of the slots: the inserts keep the rest.
    writes: through(new WriteGate(transitionWritesInFlight), writes),
    atomicConditionalUpdates: storeProfile.atomicConditionalUpdates,
    logger,
  };
  const refundDeps: RefundDeps = { ...lifecycleDeps, publicBaseUrl: config.publicBaseUrl };
  const checkDeps: CheckDeps = { ...lifecycleDeps, pollScheduleMs: config.liveOperators.pollScheduleMs };
  const deliveryBackoff = webhookBackoff(config.webhooks);
  const common = {
    connection: redis.workers,
    prefix,
    lockDuration: config.jobLockMs,
    stalledInterval: stalledCheckMs(config.jobLockMs),
    maxStalledCount: 1000,
    // Started below, once every listener is attached: a worker's first stalled check
    // runs as it starts, and a job it recovers while nobody listens is never logged.
    autorun: false,
    settings: {
      backoffStrategy: (attemptsMade: number, type?: string, err?: Error, job?: MinimalJob) =>
        type === WEBHOOK_BACKOFF ? deliveryBackoff(attemptsMade + priorAttempts(job), err) : cappedBackoff(attemptsMade),
    },
  };

  const redeliveries = new Redeliveries(redis.commands, {
    prefix,
    limit: config.webhooks.endpointRedeliveryLimit,
    staleMs: redeliveryStaleMs(config.webhooks),
  });
  const endpointDeps: EndpointMutationDeps = { ...createDeps, webhooksQueue, redeliveries, config: config.webhooks, deliver: deliverDeps, ids, logger };

  const creates = startTypedWorker(
    QUEUES.creates,
    async (job) => {
      switch (job.name) {
        case JOBS.createPaymentIntent:
          return createPaymentIntent({ ...createDeps, eventsQueue, fanOut, intentsQueue }, job);
        case JOBS.confirmPaymentIntent:
          return confirmPaymentIntent(lifecycleDeps, job);
        case JOBS.cancelPaymentIntent:
          return cancelPaymentIntent(lifecycleDeps, job);
        case JOBS.updatePaymentIntent:
          return updatePaymentIntent(lifecycleDeps, job);
        case JOBS.createWebhookEndpoint:
          return createWebhookEndpoint({ ...createDeps, endpointLimit: config.webhooks.endpointLimit }, job);
        case JOBS.updateWebhookEndpoint:
          return updateWebhookEndpoint(endpointDeps, job);
        case JOBS.deleteWebhookEndpoint:
          return deleteWebhookEndpoint(endpointDeps, job);
        case JOBS.rotateWebhookSecret:
          return rotateWebhookSecret(endpointDeps, job);
        case JOBS.resendWebhookEvent:
          return resendWebhookEvent(endpointDeps, job);
        case JOBS.recoverWebhookEvents:
          return recoverWebhookEvents(endpointDeps, job);
        case JOBS.createRefund:
          return createRefund(refundDeps, job);
        case JOBS.updateRefund:
          return updateRefund(refundDeps, job);
        default:
          return unknownJob(job);
      }
    },
    { ...common, concurrency: config.workerConcurrency },
  );

  const intents = startTypedWorker(
    QUEUES.intents,
    async (job) => {
      switch (job.name) {
        case JOBS.operatorOutcome:
          return applyOperatorOutcome(lifecycleDeps, job);
        case JOBS.expirePaymentIntent:
          return expirePaymentIntent(lifecycleDeps, job);
        case JOBS.operatorCheck:
          return checkAttempt(checkDeps, job);
        case JOBS.processRefund:
          return processRefund(refundDeps, job.data);
        default:
          return unknownJob(job);
      }
    },
    { ...common, concurrency: config.workerConcurrency },
  );

  const maintenance = startTypedWorker(
    QUEUES.maintenance,
    async (job) => {
      switch (job.name) {
        case JOBS.sweepIdempotency:
          return sweepIdempotency({ collections, redis: redis.commands, prefix }, now());
        case JOBS.sweepIntents:
          return sweepIntents({ collections, intentsQueue }, now());
        case JOBS.sweepRefunds:
          return sweepRefunds({ ...refundDeps, intentsQueue }, now(), config.intentsSweepIntervalMs);
        case JOBS.sweepEvents:
          return sweepEvents({ collections, webhooksQueue, config: config.webhooks, pending, redis: redis.commands, prefix }, { nowMs: now(), ageMs: config.webhooks.sweepAgeMs });
        default:
          return unknownJob(job);
      }
    },
    { ...common, concurrency: 1 },
  );
  const schedule = async () => {
    await maintenanceQueue.upsertJobScheduler(
      'idempotency-sweep',
      { every: config.idempotencySweepMs },
      { name: JOBS.sweepIdempotency, data: {}, opts: { removeOnComplete: 100, removeOnFail: 100 } },
    );
    await maintenanceQueue.upsertJobScheduler(
      'intents-sweep',
      { every: config.intentsSweepIntervalMs },
      { name: JOBS.sweepIntents, data: {}, opts: { removeOnComplete: 100, removeOnFail: 100 } },
    );
    await maintenanceQueue.upsertJobScheduler(
      'refunds-sweep',
      { every: config.intentsSweepIntervalMs },
      { name: JOBS.sweepRefunds, data: {}, opts: { removeOnComplete: 100, removeOnFail: 100 } },
    );
    await maintenanceQueue.upsertJobScheduler(
      'events-sweep',
      { every: config.webhooks.sweepIntervalMs },
      { name: JOBS.sweepEvents, data: {}, opts: { removeOnComplete: 100, removeOnFail: 100 } },
    );
  };
  await schedule();
  // A Redis that comes back empty (a failover to a replica without the data) has
  // lost the schedules too; a reconnect puts them back (upserting is idempotent).
  const onReconnect = () => {
    schedule().catch((err: Error) => logger.warn({ err: err.message }, 'could not restore the maintenance schedules'));
  };
  redis.queues.on('ready', onReconnect);

  const events = startTypedWorker(
    QUEUES.events,
    async (job) => {
      switch (job.name) {
        case JOBS.dispatchEvent:
          return dispatchEvent(dispatchDeps, job.data);
        default:
          return unknownJob(job);
      }
    },
    { ...common, concurrency: config.workerConcurrency },
  );

  const webhooks = startTypedWorker(
    QUEUES.webhooks,
    async (job, token) => {
      switch (job.name) {
        case JOBS.deliverWebhook:
          if (job.data.redelivery) return settleRedelivery(redeliveries, job, () => deliverWebhook(deliverDeps, job, token));
          return settleDelivery(pending, job, () => deliverWebhook(deliverDeps, job, token));
        case JOBS.testWebhookEndpoint:
          return testWebhookEndpoint(endpointDeps, job);
        default:
          return unknownJob(job);
      }
    },
    { ...common, concurrency: config.webhooks.concurrency },
  );
  deliveries.worker = webhooks;

  const workers = [creates, intents, maintenance, events, webhooks];
  for (const w of workers) {
    w.on('failed', (job, err) => logger.warn({ queue: w.name, job: job?.name, job_id: job?.id, err: err.message }, 'job attempt failed'));
    w.on('error', (err) => logger.warn({ queue: w.name, err: err.message }, 'worker error'));
    w.on('stalled', (jobId) => logger.warn({ queue: w.name, job_id: jobId }, 'job stalled: recovered for retry'));
  }
  for (const w of workers) w.run().catch((err: Error) => logger.error({ queue: w.name, err: err.message }, 'worker stopped'));
  const stopYielding = yieldToCreates({
    creates: createsQueue,
    deliveries: webhooks,
    full: config.webhooks.concurrency,
    reduced: Math.max(1, Math.ceil(config.webhooks.concurrency / 10)),
    backlog: config.workerConcurrency,
    logger,
  });
  const metrics = await startWorkerMetrics(config, logger, workers, first);
  logger.info(
    {
      concurrency: config.workerConcurrency,
      batch_max: config.createBatchMax,
      batch_wait_ms: config.createBatchWaitMs,
      store_profile: storeProfile.name,
      writes_in_flight: writesInFlight,
      transition_writes_in_flight: transitionWritesInFlight,
    },
    'worker started',
  );

  return {
    async close() {
      redis.queues.off('ready', onReconnect);
      stopYielding();
      // Let active jobs finish, then close the queues; each step on its own.
      await runShutdownSteps(
        [
          ...workers.map((w): ShutdownStep => [`worker ${w.name}`, () => w.close()]),
          // Started by jobs that have finished; a chain that goes on needs the queues.
          ['first webhook attempts', () => first.drain()],
          ['events queue', () => eventsQueue.close()],
          ['webhooks queue', () => webhooksQueue.close()],
          ['maintenance queue', () => maintenanceQueue.close()],
          ['intents queue', () => intentsQueue.close()],
          ['creates queue', () => createsQueue.close()],
          ['metrics', () => metrics.close()],
          ['outbox releases', () => pending.close()],
        ],
        logger,
      );
    },
  };
}

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.logLevel, 'worker');
  const mongo = openMongo(config.mongodbUrl, config.mongodbDb, 'payments-worker');
  // Before any job: the unique indexes are what makes an insert idempotent on a key.
  // Listing them is a read, so a restart under write load does not queue for nothing.
  let storeProfile: StoreProfile | undefined;
  await untilDone(
    async () => {
      await connect(mongo);
      await ensureIndexes(mongo.collections);
      storeProfile = await resolveStoreProfile(config.storeProfile, mongo.db);
    },
    (err, failures) => {
      if (failures === 1 || failures % 10 === 0) logger.warn({ err: err.message, failures }, 'MongoDB not ready: retrying');
    },
  );
  const redis: WorkerRedis = {
    commands: createRedis(config.redisUrl, 'failFast', 'worker', { autoPipelining: true }),
    queues: createRedis(config.redisUrl, 'patient', 'worker-queues'),
    workers: createRedis(config.redisUrl, 'patient', 'worker-bullmq'),
  };
  const now = Date.now;
  const running = await startWorker({ config, logger, mongo, redis, now, ids: new IdGenerator(now), storeProfile: storeProfile! });
  stopOnSignals(async (signal) => {
    logger.info({ signal }, 'worker stopping: finishing active jobs');
    await running.close();
    await runShutdownSteps(
      [
        ...Object.entries(redis).map(([name, client]): ShutdownStep => [`redis (${name})`, () => client.quit()]),
        ['mongodb', () => mongo.client.close()],
      ],
      logger,
    );
    logger.info('worker stopped');
    process.exit(0);
  });
}

runEntryPoint('worker', import.meta.url, main);
