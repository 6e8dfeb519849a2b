/**
 * Where the jobs were during a chaos run, to find the cause of a slow recovery: each
 * second, the waiting, active, delayed and failed counts of every BullMQ queue of the
 * service (common/jobs.ts QUEUES), and the workers' `job stalled` log lines of that
 * second. Of the delayed jobs, also those due within a minute (operator steps, retry
 * backoffs: not the intents' expiries, a day away) and those already due but not yet
 * moved to wait (overdue: no worker promoted them). A second whose counts Redis did
 * not give within the second (Redis away) has none. Summarised around each server
 * fault for the printed report.
 */
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { QUEUES } from '../../common/jobs.js';
import type { InjectedFault } from './faults.js';

const COUNTED = ['wait', 'active', 'delayed', 'failed'] as const;
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
}

/** The stalled-job line the workers log (worker/main.ts); its queue, or null for any other line. */
export function stalledQueue(line: string): string | null {
  if (!line.includes('job stalled')) return null;
  try {
    return (JSON.parse(line) as { queue?: string }).queue ?? '?';
  } catch {
    return '?';
  }
}

export class QueueSampler {
  private readonly samples: QueueSample[] = [];
  private readonly stalledPerSecond: Array<Record<string, number>> = [];
  private readonly queues: Queue[];
  private readonly redis: Redis;
  private readonly timer: NodeJS.Timeout;
  private sampling = false;

  constructor(
    redisUrl: string,
    prefix: string,
    private readonly startMs: number,
  ) {
    this.queues = Object.values(QUEUES).map((name) => new Queue(name, { connection: { url: redisUrl, maxRetriesPerRequest: 1 }, prefix }));
    for (const queue of this.queues) queue.on('error', () => undefined);
    this.redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
    this.redis.on('error', () => undefined);
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
    const reading = Promise.all(this.queues.map(async (q) => [q.name, await this.counts(q)] as const))
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
    return { wait: counts.wait ?? 0, active: counts.active ?? 0, delayed: counts.delayed ?? 0, due60s, overdue, failed: counts.failed ?? 0 };
  }

  /** Stops sampling; what was sampled. */
  async stop(): Promise<QueueSeries> {
    clearInterval(this.timer);
    await Promise.all(this.queues.map((q) => q.close().catch(() => undefined)));
    this.redis.disconnect();
    return { samples: this.samples, stalledPerSecond: this.stalledPerSecond };
  }
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
    .filter((f) => f.kind === 'redis-restart' || f.kind === 'redis-rollback' || f.kind === 'store-restart')
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
