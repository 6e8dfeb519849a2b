/**
 * Worker process: creates, housekeeping, event dispatch and webhook delivery.
 * Any number of these run side by side against the same Redis and MongoDB.
 */
import { Queue, Worker, type Job } from 'bullmq';
import { loadConfig, type Config } from '../common/config.js';
import { JOBS, QUEUES } from '../common/jobs.js';
import { createLogger, logQueueErrors, type Logger } from '../common/logger.js';
import { connectMongo, type Mongo } from '../common/mongo.js';
import { runEntryPoint, runShutdownSteps, stopOnSignals, type ShutdownStep } from '../common/shutdown.js';
import { createRedis } from '../common/redis.js';
import { startWorkerMetrics } from './metrics.js';
import { createPaymentIntent } from './processors/create-payment-intent.js';
import { createWebhookEndpoint } from './processors/create-webhook-endpoint.js';
import { dispatchEvent } from './processors/dispatch-event.js';
import { sweepEvents } from './processors/sweep-events.js';
import { sweepIdempotency } from './processors/sweep-idempotency.js';
import { deliverWebhook } from './webhooks/deliver.js';
import { WEBHOOK_BACKOFF, webhookBackoff } from './webhooks/retry-policy.js';

/** Retry delay of infrastructure faults: doubling from 250 ms, capped at 10 s. */
export function cappedBackoff(attemptsMade: number): number {
  return Math.min(250 * 2 ** Math.max(0, attemptsMade - 1), 10_000);
}

export interface Running {
  close(): Promise<void>;
}

export async function startWorker(config: Config, logger: Logger, mongo: Mongo): Promise<Running> {
  const prefix = config.queuePrefix;
  const redis = createRedis(config.redisUrl, 'blocking', 'worker');
  const workerConnection = createRedis(config.redisUrl, 'blocking', 'worker-bullmq');
  // Dispatch jobs retry infrastructure faults for a while, then the sweeper takes over;
  // a completed one is removed so the sweeper can add its id again.
  const eventsQueue = new Queue(QUEUES.events, {
    connection: redis,
    prefix,
    defaultJobOptions: { attempts: 20, backoff: { type: 'capped' }, removeOnComplete: true, removeOnFail: 1000 },
  });
  const webhooksQueue = new Queue(QUEUES.webhooks, { connection: redis, prefix });
  const maintenanceQueue = new Queue(QUEUES.maintenance, { connection: redis, prefix });
  logQueueErrors([eventsQueue, webhooksQueue, maintenanceQueue], logger);
  const deps = { collections: mongo.collections, redis, prefix, now: Date.now };
  const deliveryBackoff = webhookBackoff(config.webhooks);
  const common = {
    connection: workerConnection,
    prefix,
    lockDuration: config.jobLockMs,
    stalledInterval: config.jobLockMs,
    maxStalledCount: 1000,
    settings: {
      backoffStrategy: (attemptsMade: number, type?: string, err?: Error) =>
        type === WEBHOOK_BACKOFF ? deliveryBackoff(attemptsMade, err) : cappedBackoff(attemptsMade),
    },
  };

  const creates = new Worker(
    QUEUES.creates,
    async (job: Job) => {
      switch (job.name) {
        case JOBS.createPaymentIntent:
          return createPaymentIntent({ ...deps, eventsQueue }, job);
        case JOBS.createWebhookEndpoint:
          return createWebhookEndpoint(deps, job);
        default:
          throw new Error(`unknown create job ${job.name}`);
      }
    },
    { ...common, concurrency: config.workerConcurrency },
  );

  const maintenance = new Worker(
    QUEUES.maintenance,
    async (job: Job) => {
      if (job.name === JOBS.sweepIdempotency) return sweepIdempotency(mongo.collections, Date.now());
      if (job.name === JOBS.sweepEvents) {
        return sweepEvents({ collections: mongo.collections, eventsQueue }, { nowMs: Date.now(), ageMs: config.webhooks.sweepAgeMs });
      }
      throw new Error(`unknown maintenance job ${job.name}`);
    },
    { ...common, concurrency: 1 },
  );
  await maintenanceQueue.upsertJobScheduler(
    'idempotency-sweep',
    { every: config.idempotencySweepMs },
    { name: JOBS.sweepIdempotency, data: {}, opts: { removeOnComplete: 100, removeOnFail: 100 } },
  );
  await maintenanceQueue.upsertJobScheduler(
    'events-sweep',
    { every: config.webhooks.sweepIntervalMs },
    { name: JOBS.sweepEvents, data: {}, opts: { removeOnComplete: 100, removeOnFail: 100 } },
  );

  const events = new Worker(
    QUEUES.events,
    async (job: Job) => {
      if (job.name === JOBS.dispatchEvent) return dispatchEvent({ collections: mongo.collections, webhooksQueue, config: config.webhooks }, job);
      throw new Error(`unknown events job ${job.name}`);
    },
    { ...common, concurrency: config.workerConcurrency },
  );

  const webhooks = new Worker(
    QUEUES.webhooks,
    async (job: Job) => {
      if (job.name === JOBS.deliverWebhook) return deliverWebhook({ collections: mongo.collections, config: config.webhooks, logger, now: Date.now }, job);
      throw new Error(`unknown webhooks job ${job.name}`);
    },
    { ...common, concurrency: config.webhooks.concurrency },
  );

  const workers = [creates, maintenance, events, webhooks];
  for (const w of workers) {
    w.on('failed', (job, err) => logger.warn({ queue: w.name, job: job?.name, job_id: job?.id, err: err.message }, 'job attempt failed'));
    w.on('error', (err) => logger.warn({ queue: w.name, err: err.message }, 'worker error'));
    w.on('stalled', (jobId) => logger.warn({ queue: w.name, job_id: jobId }, 'job stalled: recovered for retry'));
  }
  const metrics = await startWorkerMetrics(config, logger, workers);
  logger.info({ concurrency: config.workerConcurrency }, 'worker started');

  return {
    async close() {
      // Let active jobs finish, then close the queues and connections; each step on its own.
      await runShutdownSteps(
        [
          ...workers.map((w): ShutdownStep => [`worker ${w.name}`, () => w.close()]),
          ['events queue', () => eventsQueue.close()],
          ['webhooks queue', () => webhooksQueue.close()],
          ['maintenance queue', () => maintenanceQueue.close()],
          ['redis', () => redis.quit()],
          ['redis (bullmq)', () => workerConnection.quit()],
          ['metrics', () => metrics.close()],
        ],
        logger,
      );
    },
  };
}

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.logLevel, 'worker');
  const mongo = await connectMongo(config.mongodbUrl, config.mongodbDb, 'payments-worker');
  const running = await startWorker(config, logger, mongo);
  stopOnSignals(async (signal) => {
    logger.info({ signal }, 'worker stopping: finishing active jobs');
    await running.close();
    await mongo.client.close().catch(() => undefined);
    logger.info('worker stopped');
    process.exit(0);
  });
}

runEntryPoint('worker', main);
