/**
 * Worker process: creates, housekeeping, event dispatch and webhook delivery.
 * Any number of these run side by side against the same Redis and MongoDB.
 */
import type { Redis } from 'ioredis';
import { loadConfig, type Config } from '../common/config.js';
import { IdGenerator } from '../common/ids.js';
import { JOBS, openQueue, QUEUES, startTypedWorker, unknownJob } from '../common/jobs.js';
import { createLogger, logQueueErrors, type Logger } from '../common/logger.js';
import { connect, ensureIndexes, openMongo, servedByFerretDB, untilDone, type Mongo } from '../common/mongo.js';
import { createRedis } from '../common/redis.js';
import { jitteredBackoff } from '../common/retry.js';
import { runEntryPoint, runShutdownSteps, stopOnSignals, type ShutdownStep } from '../common/shutdown.js';
import { InsertBatcher } from './group-commit.js';
import { startWorkerMetrics } from './metrics.js';
import { createPaymentIntent } from './processors/create-payment-intent.js';
import { createWebhookEndpoint } from './processors/create-webhook-endpoint.js';
import { liveConnectors } from './operators/connector.js';
import { WriteGate } from './lifecycle/write-gate.js';
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
import { sweepEvents } from './processors/sweep-events.js';
import { sweepIdempotency } from './processors/sweep-idempotency.js';
import { sweepIntents } from './processors/sweep-intents.js';
import { deliverWebhook } from './webhooks/deliver.js';
import { endpointSlots } from './webhooks/endpoint-slots.js';
import { PendingEvents, settleDelivery } from './webhooks/pending-events.js';
import { WEBHOOK_BACKOFF, webhookBackoff } from './webhooks/retry-policy.js';

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
}

export interface Running {
  close(): Promise<void>;
}

export async function startWorker({ config, logger, mongo, redis, now, ids }: WorkerDeps): Promise<Running> {
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
  logQueueErrors([eventsQueue, webhooksQueue, maintenanceQueue, intentsQueue], logger);
  const inserts = new InsertBatcher({ maxDocs: config.createBatchMax, waitMs: config.createBatchWaitMs });
  const createDeps = { collections, redis: redis.commands, prefix, now, inserts };
  const lifecycleDeps: LifecycleDeps = {
    ...createDeps,
    eventsQueue,
    intentsQueue,
    ids,
    simulator: config.simulator,
    connectors: liveConnectors(),
    writes: new WriteGate(2),
    keyOnlyUpdates: () => servedByFerretDB(mongo.db),
    logger,
  };
  const pending = new PendingEvents({ redis: redis.commands, prefix, collections, logger });
  const deliveryBackoff = webhookBackoff(config.webhooks);
  const common = {
    connection: redis.workers,
    prefix,
    lockDuration: config.jobLockMs,
    stalledInterval: config.jobLockMs,
    maxStalledCount: 1000,
    settings: {
      backoffStrategy: (attemptsMade: number, type?: string, err?: Error) =>
        type === WEBHOOK_BACKOFF ? deliveryBackoff(attemptsMade, err) : cappedBackoff(attemptsMade),
    },
  };

  // A slot is held for at most one attempt's deadline plus the time to record it.
  const slots = endpointSlots(redis.commands, { prefix, limit: config.webhooks.endpointConcurrency, holdMs: config.webhooks.timeoutMs + 5_000 });
  const deliverDeps = { collections, config: config.webhooks, logger, now, ids, slots };
  const endpointDeps: EndpointMutationDeps = { ...createDeps, webhooksQueue, config: config.webhooks, deliver: deliverDeps, ids, logger };

  const creates = startTypedWorker(
    QUEUES.creates,
    async (job) => {
      switch (job.name) {
        case JOBS.createPaymentIntent:
          return createPaymentIntent({ ...createDeps, eventsQueue, intentsQueue }, job);
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
        case JOBS.testWebhookEndpoint:
          return testWebhookEndpoint(endpointDeps, job);
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
          return sweepIdempotency(collections, now());
        case JOBS.sweepIntents:
          return sweepIntents({ collections, intentsQueue }, now());
        case JOBS.sweepEvents:
          return sweepEvents({ collections, webhooksQueue, config: config.webhooks, pending }, { nowMs: now(), ageMs: config.webhooks.sweepAgeMs });
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
          return dispatchEvent({ collections, webhooksQueue, config: config.webhooks, pending }, job);
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
          if (job.data.redelivery) return deliverWebhook(deliverDeps, job, token);
          return settleDelivery(pending, job, () => deliverWebhook(deliverDeps, job, token));
        default:
          return unknownJob(job);
      }
    },
    { ...common, concurrency: config.webhooks.concurrency },
  );

  const workers = [creates, intents, maintenance, events, webhooks];
  for (const w of workers) {
    w.on('failed', (job, err) => logger.warn({ queue: w.name, job: job?.name, job_id: job?.id, err: err.message }, 'job attempt failed'));
    w.on('error', (err) => logger.warn({ queue: w.name, err: err.message }, 'worker error'));
    w.on('stalled', (jobId) => logger.warn({ queue: w.name, job_id: jobId }, 'job stalled: recovered for retry'));
  }
  const metrics = await startWorkerMetrics(config, logger, workers);
  logger.info({ concurrency: config.workerConcurrency, batch_max: config.createBatchMax, batch_wait_ms: config.createBatchWaitMs }, 'worker started');

  return {
    async close() {
      redis.queues.off('ready', onReconnect);
      // Let active jobs finish, then close the queues; each step on its own.
      await runShutdownSteps(
        [
          ...workers.map((w): ShutdownStep => [`worker ${w.name}`, () => w.close()]),
          ['events queue', () => eventsQueue.close()],
          ['webhooks queue', () => webhooksQueue.close()],
          ['maintenance queue', () => maintenanceQueue.close()],
          ['intents queue', () => intentsQueue.close()],
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
  await untilDone(
    async () => {
      await connect(mongo);
      await ensureIndexes(mongo.collections);
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
  const running = await startWorker({ config, logger, mongo, redis, now, ids: new IdGenerator(now) });
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
