/**
 * The repeatable housekeeping on the maintenance queue: one scheduler per sweep,
 * upserted at start-up and again whenever the queues' connection comes back.
 */
import type { Redis } from 'ioredis';
import type { Config } from '../common/config.js';
import { JOBS, type TypedQueue } from '../common/jobs.js';
import type { Logger } from '../common/logger.js';

/** Upserts the schedules, and keeps them on every reconnect until the returned stop is called. */
export async function scheduleHousekeeping(maintenanceQueue: TypedQueue<'maintenance'>, config: Config, queues: Redis, logger: Logger): Promise<() => void> {
  const schedules = [
    ['idempotency-sweep', config.idempotencySweepMs, JOBS.sweepIdempotency],
    ['intents-sweep', config.intentsSweepIntervalMs, JOBS.sweepIntents],
    ['refunds-sweep', config.intentsSweepIntervalMs, JOBS.sweepRefunds],
    ['events-sweep', config.webhooks.sweepIntervalMs, JOBS.sweepEvents],
  ] as const;
  const schedule = async () => {
    for (const [id, every, name] of schedules) {
      await maintenanceQueue.upsertJobScheduler(id, { every }, { name, data: {}, opts: { removeOnComplete: 100, removeOnFail: 100 } });
    }
  };
  await schedule();
  // A Redis that comes back empty (a failover to a replica without the data) has
  // lost the schedules too; a reconnect puts them back (upserting is idempotent).
  const onReconnect = () => {
    schedule().catch((err: Error) => logger.warn({ err: err.message }, 'could not restore the maintenance schedules'));
  };
  queues.on('ready', onReconnect);
  return () => {
    queues.off('ready', onReconnect);
  };
}
