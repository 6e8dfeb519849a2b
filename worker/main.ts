/**
 * Worker process: writes (creates and every mutation), the payment lifecycle,
 * housekeeping, event dispatch and webhook delivery.
 * Any number of these run side by side against the same Redis and MongoDB.
 */
import type { MinimalJob, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { loadConfig, type Config } from '../common/config.js';
import { IdGenerator } from '../common/ids.js';
import { QUEUES, startTypedWorkers, typedWorkerMaker, type QueueName } from '../common/jobs.js';
import { queueLayout } from '../common/queue-shards.js';
import { createLogger, type Logger } from '../common/logger.js';
import { connect, ensureIndexes, openMongo, untilDone } from '../common/mongo.js';
import { createRedis, redisTarget } from '../common/redis.js';
import { jitteredBackoff } from '../common/retry.js';
import { closeRedis, runEntryPoint, runShutdownSteps, stopOnSignals, type ShutdownStep } from '../common/shutdown.js';
import { resolveStoreProfile, type StoreProfile } from '../common/store-profile.js';
import { buildJobDeps, type JobDeps, type WorkerDeps, type WorkerRedis } from './deps.js';
import { startJobTally, startWorkerMetrics } from './metrics.js';
import { writesRoutes, eventsRoutes, intentsRoutes, maintenanceRoutes, routeJobs, webhooksRoutes } from './routes.js';
import { scheduleHousekeeping } from './schedules.js';
import { priorAttempts } from './webhooks/first-attempt.js';
import { WEBHOOK_BACKOFF, webhookBackoff } from './webhooks/retry-policy.js';
import { yieldToCreates } from './webhooks/yield-to-creates.js';
import { watchWedgedWorkers } from './wedged-workers.js';

export type { WorkerDeps, WorkerRedis } from './deps.js';

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

/** Retry delay of infrastructure faults: doubling from 250 ms, capped at 10 s, jittered. */
export function cappedBackoff(attemptsMade: number, random: () => number = Math.random): number {
  return jitteredBackoff(attemptsMade, { baseMs: 250, capMs: 10_000, random });
}

/**
 * A queue shard whose delayed jobs are this overdue with nothing waiting has no worker
 * that fetches (an idle live one wakes at least every 10 s): its worker is replaced.
 */
const WEDGED_GRACE_MS = 20_000;
const WEDGED_CHECK_MS = 5_000;

export interface Running {
  close(): Promise<void>;
}

/** The options every worker of the process shares; each adds its concurrency. */
function workerOptions(config: Config, connection: Redis) {
  const deliveryBackoff = webhookBackoff(config.webhooks);
  return {
    connection,
    prefix: config.queuePrefix,
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
}

/** BullMQ's connections are out of reach: its closes and the active jobs cannot end. */
function redisUnreachable(redis: WorkerRedis): boolean {
  return redis.queues.status !== 'ready' || redis.workers.status !== 'ready';
}

export async function startWorker(deps: WorkerDeps): Promise<Running> {
  const { config, logger, redis, storeProfile } = deps;
  const jobs = buildJobDeps(deps);
  const { first, pending } = jobs;
  const common = workerOptions(config, redis.workers);
  // One BullMQ worker per shard of each queue (common/queue-shards.ts), each with the queue's concurrency.
  const layout = queueLayout(config);
  // Each queue's makers too: a wedged worker is replaced by a new one (wedged-workers.ts).
  const makers = new Map<Worker[], (shard: string) => Worker>();
  const start = <Q extends QueueName>(name: Q, processor: Parameters<typeof typedWorkerMaker<Q>>[0], concurrency: number): Worker[] => {
    const options = { ...common, concurrency };
    const group = startTypedWorkers(name, processor, options, layout);
    makers.set(group, typedWorkerMaker(processor, options));
    return group;
  };
  const writes = start(QUEUES.writes, routeJobs(writesRoutes(jobs)), config.workerConcurrency);
  const intents = start(QUEUES.intents, routeJobs(intentsRoutes(jobs)), jobs.intentsConcurrency);
  const maintenance = start(QUEUES.maintenance, routeJobs(maintenanceRoutes(jobs)), 1);
  const events = start(QUEUES.events, routeJobs(eventsRoutes(jobs)), config.workerConcurrency);
  const webhooks = start(QUEUES.webhooks, routeJobs(webhooksRoutes(jobs)), config.webhooks.concurrency);
  const groups = [writes, intents, maintenance, events, webhooks];
  // The delivery workers' concurrency, set and read as one (yield-to-creates.ts, first attempts).
  const deliveries = {
    get concurrency() {
      return webhooks[0]!.concurrency;
    },
    set concurrency(value: number) {
      for (const w of webhooks) w.concurrency = value;
    },
  };
  jobs.deliveries.worker = deliveries;

  // Listened to before anything is awaited: a BullMQ worker connects as it is made,
  // and its connection's errors (Redis away while this process starts) with no
  // listener went to stderr as bare stack traces instead of the log.
  const workers = [...writes, ...intents, ...maintenance, ...events, ...webhooks];
  for (const w of workers) {
    w.on('failed', (job, err) => logger.warn({ queue: w.name, job: job?.name, job_id: job?.id, err: err.message }, 'job attempt failed'));
    w.on('error', (err) => logger.warn({ queue: w.name, err: err.message }, 'worker error'));
    w.on('stalled', (jobId) => logger.warn({ queue: w.name, job_id: jobId }, 'job stalled: recovered for retry'));
  }
  const stopSchedules = await scheduleHousekeeping(jobs.maintenanceQueue, config, redis.queues, logger);
  for (const w of workers) w.run().catch((err: Error) => logger.error({ queue: w.name, err: err.message }, 'worker stopped'));
  const stopYielding = yieldToCreates({
    creates: jobs.writesQueue,
    deliveries,
    full: config.webhooks.concurrency,
    reduced: Math.max(1, Math.ceil(config.webhooks.concurrency / 10)),
    backlog: config.workerConcurrency,
    logger,
  });
  const metrics = await startWorkerMetrics(config, logger, workers, first, deps.mongo.client);
  const tally = startJobTally(redis.commands, config.queuePrefix, workers, logger);
  // After the listeners above: a replacement takes them over.
  const stopWatching = watchWedgedWorkers({ groups, make: makers, redis: redis.commands, prefix: config.queuePrefix, logger, graceMs: WEDGED_GRACE_MS, everyMs: WEDGED_CHECK_MS });
  logStarted(logger, config, storeProfile, jobs);

  return {
    async close() {
      stopSchedules();
      stopYielding();
      stopWatching();
      // Let active jobs finish, then close the queues; each step on its own.
      await runShutdownSteps(
        [
          // The workers now: some may have been replaced since the start.
          ...groups.flat().map((w): ShutdownStep => [`worker ${w.name}`, () => w.close()]),
          // Started by jobs that have finished; a chain that goes on needs the queues.
          ['first webhook attempts', () => first.drain()],
          ['events queue', () => jobs.eventsQueue.close()],
          ['webhooks queue', () => jobs.webhooksQueue.close()],
          ['maintenance queue', () => jobs.maintenanceQueue.close()],
          ['intents queue', () => jobs.intentsQueue.close()],
          ['writes queue', () => jobs.writesQueue.close()],
          ['metrics', () => metrics.close()],
          ['job tallies', () => tally.close()],
          ['outbox releases', () => pending.close()],
        ],
        logger,
        () => redisUnreachable(deps.redis),
      );
    },
  };
}

function logStarted(logger: Logger, config: Config, storeProfile: StoreProfile, { writesInFlight, transitionWritesInFlight, transitionBatchMax, intentsConcurrency }: Pick<JobDeps, 'writesInFlight' | 'transitionWritesInFlight' | 'transitionBatchMax' | 'intentsConcurrency'>): void {
  logger.info(
    {
      concurrency: config.workerConcurrency,
      batch_max: config.createBatchMax,
      batch_wait_ms: config.createBatchWaitMs,
      store_profile: storeProfile.name,
      writes_in_flight: writesInFlight,
      transition_writes_in_flight: transitionWritesInFlight,
      transition_batch_max: transitionBatchMax,
      intents_concurrency: intentsConcurrency,
    },
    'worker started',
  );
  if (!config.ledgerPostings) logger.warn('LEDGER_POSTINGS=off: nothing is posted to the ledger, and the balances are wrong (a benchmark\'s baseline only)');
}

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.logLevel, 'worker');
  const mongo = openMongo(config.mongodbUrl, config.mongodbDb, 'payments-worker', undefined, { monitorCommands: config.metricsPort > 0 });
  // Before any job: the unique indexes are what makes an insert idempotent on a key.
  // Listing them is a read, so a restart under write load does not queue for nothing.
  let storeProfile: StoreProfile | undefined;
  await untilDone(
    async () => {
      await connect(mongo);
      storeProfile = await resolveStoreProfile(config.storeProfile, mongo.db);
      await ensureIndexes(mongo, storeProfile);
    },
    (err, failures) => {
      if (failures === 1 || failures % 10 === 0) logger.warn({ err: err.message, failures }, 'MongoDB not ready: retrying');
    },
  );
  const redis: WorkerRedis = {
    commands: createRedis(redisTarget(config), 'failFast', 'worker', { autoPipelining: true }),
    queues: createRedis(redisTarget(config), 'patient', 'worker-queues'),
    workers: createRedis(redisTarget(config), 'patient', 'worker-bullmq'),
  };
  const now = Date.now;
  const running = await startWorker({ config, logger, mongo, redis, now, ids: new IdGenerator(now), storeProfile: storeProfile! });
  stopOnSignals(async (signal) => {
    logger.info({ signal }, 'worker stopping: finishing active jobs');
    await running.close();
    await runShutdownSteps(
      [
        ...Object.entries(redis).map(([name, client]): ShutdownStep => [`redis (${name})`, () => closeRedis(client)]),
        ['mongodb', () => mongo.client.close()],
      ],
      logger,
    );
    logger.info('worker stopped');
    process.exit(0);
  });
}

runEntryPoint('worker', import.meta.url, main);
