/**
 * Where the jobs were during a chaos run, to find the cause of a slow recovery: each
 * second, the waiting, active, delayed and failed counts of every BullMQ queue of the
 * service (common/jobs.ts QUEUES; waiting counts the prioritized jobs too, the payer's
 * steps in the intents queue), and the workers' `job stalled` log lines of that
 * second. Of the delayed jobs, also those due within a minute (operator steps, retry
 * backoffs: not the intents' expiries, a day away) and those already due but not yet
 * moved to wait (overdue: no worker promoted them). A second whose counts Redis did
 * not give within the second (Redis away) has none. Summarised around each server
 * fault for the printed report.
 */
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { QUEUES, type QueueName } from '../../common/jobs.js';
import { baseQueueName, queueNames, PLAIN_LAYOUT, type QueueLayout } from '../../common/queue-shards.js';
import { createRedis, type RedisTarget } from '../../common/redis.js';
import type { InjectedFault } from './faults.js';

const COUNTED = ['wait', 'prioritized', 'active', 'delayed', 'failed'] as const;
export const STATES = ['wait', 'active', 'delayed', 'due60s', 'overdue', 'failed'] as const;
export type QueueCounts = Record<(typeof STATES)[number], number>;
/** BullMQ scores a delayed job by its due time in ms × 0x1000 (and a counter below). */
const DELAYED_SCORE = 0x1000;

export interface QueueSample {
  /** Seconds from the start of the load. */
  atS: number;
  /** By queue name; null: Redis did not answer within the second. */
  queues: Record<string, QueueCounts> | null;
}

export interface QueueSeries {
  samples: QueueSample[];
  /** Workers' `job stalled` log lines in each second of the run, by queue. */
  stalledPerSecond: Array<Record<string, number>>;
  /** The intents queue's completed jobs, by the two seconds they were due in (absent: not read). */
  intentsJobs?: JobTimes[];
}

/**
 * The completed jobs of a queue that came due within `fromS`..`fromS + 2` of the load's
 * start (added, plus their delay): how long after that their last attempt began
 * (`waitMs`: the queue's wait, and any earlier attempts, stalls and retry backoffs),
 * and how long that attempt ran (`runMs`), at the median and the 90th percentile.
 * Tells a backlog (jobs waiting) from slow work (jobs running long).
 */
export interface JobTimes {
  fromS: number;
  jobs: number;
  waitMs: { p50: number; p90: number };
  runMs: { p50: number; p90: number };
  /** Jobs run more than once (stalled, or failed and retried). */
  again: number;
}

const JOB_TIMES_BUCKET_S = 2;
/** At most this many completed jobs are read (the intents queue keeps 10 000). */
const JOB_TIMES_MAX = 20_000;

function quantile(sorted: number[], q: number): number {
  return sorted.length === 0 ? 0 : (sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number);
}

/** The completed jobs' times (JobTimes), from their BullMQ records. */
export function jobTimes(
  jobs: Array<{ timestamp: number; opts?: { delay?: number }; processedOn?: number; finishedOn?: number; attemptsStarted?: number; stalledCounter?: number }>,
  startMs: number,
): JobTimes[] {
  const buckets = new Map<number, { wait: number[]; run: number[]; again: number }>();
  for (const job of jobs) {
    if (!job.processedOn || !job.finishedOn) continue;
    // The delay asked for (a promoted job's own `delay` field reads 0).
    const dueMs = job.timestamp + (job.opts?.delay ?? 0);
    const fromS = Math.floor((dueMs - startMs) / 1000 / JOB_TIMES_BUCKET_S) * JOB_TIMES_BUCKET_S;
    const bucket = buckets.get(fromS) ?? { wait: [], run: [], again: 0 };
    bucket.wait.push(Math.max(0, job.processedOn - dueMs));
    bucket.run.push(Math.max(0, job.finishedOn - job.processedOn));
    if ((job.attemptsStarted ?? 1) > 1 || (job.stalledCounter ?? 0) > 0) bucket.again++;
    buckets.set(fromS, bucket);
  }
  return [...buckets.entries()]
    .sort(([a], [b]) => a - b)
    .map(([fromS, { wait, run, again }]) => {
      wait.sort((a, b) => a - b);
      run.sort((a, b) => a - b);
      return { fromS, jobs: wait.length, waitMs: { p50: quantile(wait, 0.5), p90: quantile(wait, 0.9) }, runMs: { p50: quantile(run, 0.5), p90: quantile(run, 0.9) }, again };
    });
}

/** The stalled-job line the workers log (worker/main.ts); its queue, or null for any other line. */
export function stalledQueue(line: string): string | null {
  if (!line.includes('job stalled')) return null;
  try {
    const queue = (JSON.parse(line) as { queue?: string }).queue;
    return queue ? baseQueueName(queue) : '?';
  } catch {
    return '?';
  }
}

export class QueueSampler {
  private readonly samples: QueueSample[] = [];
  private readonly stalledPerSecond: Array<Record<string, number>> = [];
  /** Each queue of the service, with its shards (one, on one Redis without QUEUE_SHARDS). */
  private readonly queues: Array<{ name: QueueName; shards: Queue[] }>;
  private readonly redis: Redis;
  private readonly timer: NodeJS.Timeout;
  private sampling = false;

  constructor(
    target: RedisTarget,
    prefix: string,
    private readonly startMs: number,
    layout: QueueLayout = PLAIN_LAYOUT,
  ) {
    // One connection for every queue (a cluster's client among them): closed by `stop`.
    this.redis = createRedis(target, 'failFast', 'chaos-sampler');
    this.queues = Object.values(QUEUES).map((name) => ({
      name,
      shards: queueNames(name, layout).map((shard) => new Queue(shard, { connection: this.redis, prefix })),
    }));
    for (const queue of this.queues.flatMap((q) => q.shards)) queue.on('error', () => undefined);
    this.timer = setInterval(() => void this.sample(), 1000);
  }

  /** Counts a worker's log line if it reports a stalled job. */
  line(text: string): void {
    const queue = stalledQueue(text);
    if (queue === null) return;
    const second = Math.max(0, Math.floor((Date.now() - this.startMs) / 1000));
    for (let s = this.stalledPerSecond.length; s <= second; s++) this.stalledPerSecond.push({});
    const counts = this.stalledPerSecond[second] as Record<string, number>;
    counts[queue] = (counts[queue] ?? 0) + 1;
  }

  private async sample(): Promise<void> {
    const atS = Math.round((Date.now() - this.startMs) / 100) / 10;
    // One reading at a time: while Redis is away, the seconds go without counts.
    if (this.sampling) {
      this.samples.push({ atS, queues: null });
      return;
    }
    this.sampling = true;
    const timeout = new Promise<null>((resolve) => setTimeout(() => resolve(null), 900).unref());
    const reading = Promise.all(this.queues.map(async (q) => [q.name, sumCounts(await Promise.all(q.shards.map((shard) => this.counts(shard))))] as const))
      .then((pairs) => Object.fromEntries(pairs))
      .catch(() => null);
    const queues = await Promise.race([reading, timeout]);
    void reading.finally(() => (this.sampling = false));
    this.samples.push({ atS, queues });
  }

  private async counts(queue: Queue): Promise<QueueCounts> {
    const now = Date.now();
    const [counts, due60s, overdue] = await Promise.all([
      queue.getJobCounts(...COUNTED),
      this.redis.zcount(queue.keys.delayed as string, '-inf', (now + 60_000) * DELAYED_SCORE),
      this.redis.zcount(queue.keys.delayed as string, '-inf', now * DELAYED_SCORE),
    ]);
    return { wait: (counts.wait ?? 0) + (counts.prioritized ?? 0), active: counts.active ?? 0, delayed: counts.delayed ?? 0, due60s, overdue, failed: counts.failed ?? 0 };
  }

  /** Stops sampling; what was sampled, and the intents queue's completed jobs' times. */
  async stop(): Promise<QueueSeries> {
    clearInterval(this.timer);
    const intents = this.queues.find((q) => q.name === QUEUES.intents)?.shards ?? [];
    const completed = await Promise.all(intents.map((shard) => shard.getJobs(['completed'], 0, JOB_TIMES_MAX - 1)))
      .then((each) => each.flat())
      .catch(() => null);
    await Promise.all(this.queues.flatMap((q) => q.shards).map((q) => q.close().catch(() => undefined)));
    this.redis.disconnect();
    return {
      samples: this.samples,
      stalledPerSecond: this.stalledPerSecond,
      ...(completed ? { intentsJobs: jobTimes(completed.filter((job) => job), this.startMs) } : {}),
    };
  }
}

/** The counts of a queue's shards added up. */
function sumCounts(each: QueueCounts[]): QueueCounts {
  const total: QueueCounts = { wait: 0, active: 0, delayed: 0, due60s: 0, overdue: 0, failed: 0 };
  for (const counts of each) for (const state of STATES) total[state] += counts[state];
  return total;
}

export interface QueueAroundFault {
  kind: string;
  atS: number;
  /** By queue: the counts of the last second before the fault, their peak within the window after it (and when), and the counts at its end. */
  queues: Record<string, { before: QueueCounts | null; peak: QueueCounts; peakAtS: Record<string, number>; after: QueueCounts | null }>;
  /** Seconds of the window without counts (Redis away). */
  unreadS: number;
  /** Stalled-job lines within the window, by queue. */
  stalled: Record<string, number>;
}

/** The queues around each Redis and store fault: before it, at their peak within `windowS` after it, and at the window's end. */
export function queuesAroundFaults({ samples, stalledPerSecond }: QueueSeries, faults: Array<Pick<InjectedFault, 'kind' | 'atS'>>, windowS: number): QueueAroundFault[] {
  const zero = (): QueueCounts => ({ wait: 0, active: 0, delayed: 0, due60s: 0, overdue: 0, failed: 0 });
  return faults
    .filter((f) => f.kind === 'redis-restart' || f.kind === 'redis-rollback' || f.kind === 'redis-master-kill' || f.kind === 'store-restart')
    .map((fault) => {
      const before = samples.filter((s) => s.atS < fault.atS && s.queues).at(-1)?.queues ?? null;
      const window = samples.filter((s) => s.atS >= fault.atS && s.atS <= fault.atS + windowS);
      const after = window.filter((s) => s.queues).at(-1)?.queues ?? null;
      const queues: QueueAroundFault['queues'] = {};
      const stalled: Record<string, number> = {};
      for (const [second, counts] of stalledPerSecond.entries()) {
        if (second + 1 <= fault.atS || second > fault.atS + windowS) continue;
        for (const [q, n] of Object.entries(counts)) stalled[q] = (stalled[q] ?? 0) + n;
      }
      for (const name of Object.values(QUEUES)) {
        const peak = zero();
        const peakAtS: Record<string, number> = {};
        for (const s of window) {
          const counts = s.queues?.[name];
          if (!counts) continue;
          for (const state of STATES) {
            if (counts[state] > peak[state]) {
              peak[state] = counts[state];
              peakAtS[state] = Math.round((s.atS - fault.atS) * 10) / 10;
            }
          }
        }
        queues[name] = { before: before?.[name] ?? null, peak, peakAtS, after: after?.[name] ?? null };
      }
      return { kind: fault.kind, atS: fault.atS, queues, unreadS: window.filter((s) => !s.queues).length, stalled };
    });
}
