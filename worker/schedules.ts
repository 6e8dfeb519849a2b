/**
 * The repeatable housekeeping on the maintenance queue: one scheduler per sweep,
 * upserted at start-up and again whenever the queues' connection comes back.
 *
 * A connection that comes back may come back to a Redis that lost jobs (a restart
 * from an old snapshot, a failover to a lagging replica): the payments' delayed
 * operator steps among them, each due within a second of its transition. MongoDB
 * holds every payment in flight, and the intents' sweep re-drives them from it; on
 * its schedule alone (`INTENTS_SWEEP_INTERVAL_MS`, a minute) a payment waited up to
 * that long. So the sweep also runs at once on a reconnect, and once more a job lock
 * (`JOB_LOCK_MS`) later: by then the jobs that were active when Redis went away have
 * ended, and those whose keys Redis lost are gone with their ends ("Missing key for
 * job"). Each sweep re-adds only jobs Redis no longer knows.
 */
import type { Redis } from 'ioredis';
import type { Config } from '../common/config.js';
import { JOBS, type TypedQueue } from '../common/jobs.js';
import { onClusterChange } from '../common/redis.js';
import type { Logger } from '../common/logger.js';
import { BREAKER_PROBE_MS } from '../common/operator-breaker.js';

/** Upserts the schedules, and keeps them on every reconnect until the returned stop is called. */
export async function scheduleHousekeeping(maintenanceQueue: TypedQueue<'maintenance'>, config: Config, queues: Redis, logger: Logger): Promise<() => void> {
  const schedules = [
    ['idempotency-sweep', config.idempotencySweepMs, JOBS.sweepIdempotency],
    ['intents-sweep', config.intentsSweepIntervalMs, JOBS.sweepIntents],
    ['refunds-sweep', config.intentsSweepIntervalMs, JOBS.sweepRefunds],
    ['payouts-sweep', config.intentsSweepIntervalMs, JOBS.sweepPayouts],
    ['events-sweep', config.webhooks.sweepIntervalMs, JOBS.sweepEvents],
    // Storage is bounded (DESIGN section 20): a pass that runs out of time adds the next (routes.ts).
    ['retention-sweep', config.retention.sweepIntervalMs, JOBS.sweepRetention],
    // Live mode: an account whose breaker is open is probed until it answers (DESIGN section 14).
    ...(config.liveOperators.accounts.length > 0 ? [['operators-probe', BREAKER_PROBE_MS, JOBS.probeOperators] as const] : []),
  ] as const;
  // Reconciliation (DESIGN section 16): one per live account, and one over the simulator.
  const reconciles = [null, ...config.liveOperators.accounts.map((a) => a.id)];
  const schedule = async () => {
    for (const [id, every, name] of schedules) {
      await maintenanceQueue.upsertJobScheduler(id, { every }, { name, data: {}, opts: { removeOnComplete: 100, removeOnFail: 100 } });
    }
    for (const account of reconciles) {
      await maintenanceQueue.upsertJobScheduler(`reconcile-${account ?? 'simulator'}`, { every: config.reconcileIntervalMs }, { name: JOBS.reconcileOperator, data: { account }, opts: { removeOnComplete: 100, removeOnFail: 100 } });
    }
  };
  await schedule();
  // A Redis that comes back empty (a failover to a replica without the data) has
  // lost the schedules too; a reconnect puts them back (upserting is idempotent).
  const onReconnect = () => {
    schedule().catch((err: Error) => logger.warn({ err: err.message }, 'could not restore the maintenance schedules'));
    redriveIntents(maintenanceQueue, config.jobLockMs, Date.now()).catch((err: Error) => logger.warn({ err: err.message }, 'could not sweep the intents after a reconnect'));
  };
  queues.on('ready', onReconnect);
  // A cluster's failover is no reconnect of the client: its node change stands for one.
  const stopWatching = onClusterChange(queues, onReconnect);
  return () => {
    queues.off('ready', onReconnect);
    stopWatching();
  };
}

/**
 * Workers that see one Redis come back reconnect within a few seconds of each other
 * (each on its own backoff): while a window's sweep is pending, the others' adds of
 * it are ignored (a sweep reads every intent in flight and asks Redis about each of
 * its jobs). A sweep that ran is removed, so another fault in the same window still
 * gets its own.
 */
const REDRIVE_WINDOW_MS = 10_000;

/**
 * How far back a reconnect's sweep looks for transitions whose events Redis may have
 * lost with their jobs: a Redis back from a snapshot up to a minute old.
 */
const RECENT_EVENTS_MS = 60_000;

/**
 * The intents' sweep now and `laterMs` from now, and the refunds' sweep `laterMs` from
 * now, as one-off jobs whose ids name the window of the reconnect. The refunds' sweep
 * re-drives the refunds made more than two job locks before it (not the sweep
 * interval's grace): a refund step that failed while Redis was away, its retry lost
 * with Redis, was otherwise left for a minute or two (a second step that is not
 * needed changes nothing).
 */
export async function redriveIntents(maintenanceQueue: TypedQueue<'maintenance'>, laterMs: number, nowMs: number): Promise<void> {
  const window = Math.floor(nowMs / REDRIVE_WINDOW_MS);
  const once = { removeOnComplete: true, removeOnFail: true };
  for (const [step, delay] of [['now', 0], ['later', laterMs]] as const) {
    // The later one, once the jobs Redis kept have finished theirs, also records the
    // events of recent transitions whose jobs it lost (processors/sweep-intents.ts).
    const data = step === 'later' ? { recentMs: RECENT_EVENTS_MS + laterMs } : {};
    await maintenanceQueue.add(JOBS.sweepIntents, data, { jobId: `intents-sweep-reconnect-${window}-${step}`, delay, ...once });
  }
  await maintenanceQueue.add(JOBS.sweepRefunds, { graceMs: 2 * laterMs }, { jobId: `refunds-sweep-reconnect-${window}`, delay: laterMs, ...once });
}
