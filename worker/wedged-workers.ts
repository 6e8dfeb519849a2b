/**
 * A BullMQ worker that stopped fetching is replaced (DESIGN section 19). A worker
 * promotes its queue's due delayed jobs only when it fetches (BullMQ's moveToActive),
 * and it fetches when its blocking wait on the queue's marker ends. When a Redis
 * Cluster master dies, the workers of the queue shards that master served were
 * blocked on it, and BullMQ recovers their blocking connection by itself; yet a chaos
 * run saw a dead master's shard keep its due delayed jobs (payment steps) from the
 * kill to the end, while the other shards went on: none of that shard's workers
 * fetched again. Which of BullMQ's waits never ended is not known (it comes back
 * rarely: once in eight runs); a replacement's log line says how long the worker's
 * wait had been pending and what state its blocking connection was in. The sweepers
 * cannot help: they see the jobs queued.
 *
 * So each process looks at its own workers, two ways. A worker whose wait for its
 * next job (BullMQ's, private: blocking on the marker, then fetching) has been
 * pending for more than `graceMs` is wedged: a live wait ends within 11 s. And, if
 * that sign is missing (another cause, another BullMQ version), a shard whose wait list is empty
 * while a delayed job is overdue by more than `graceMs` has no worker that fetches (a
 * live one with a free slot wakes at least every 10 s and promotes the due jobs; one
 * whose every slot runs a job is busy, not wedged, and is left alone).
 * The process then replaces its worker of that shard: a new one (new blocking
 * connection) with the same listeners and concurrency starts at once; the old one
 * is closed without waiting for its jobs (they may be stuck with it), so their locks
 * lapse and BullMQ's stalled-job check hands them, with their ids, to a live worker.
 * Every write a job makes is idempotent on its id (DESIGN section 15). Each process
 * replaces only its own; one shard is replaced at most once per `graceMs`.
 */
import type { Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { jobsInFlight } from '../common/jobs.js';
import type { Logger } from '../common/logger.js';

/** The events the service listens to on a worker: a replacement gets the same listeners. */
const CARRIED_EVENTS = ['active', 'completed', 'failed', 'error', 'stalled'] as const;

/** BullMQ's delayed set scores a job by its due time in ms times 0x1000 (plus a counter). */
const DELAY_SCORE = 0x1000;

export interface WedgedWorkersOptions {
  /** The process's workers, by queue: a replacement takes its predecessor's place in its group. */
  groups: Worker[][];
  /** Makes the worker of a shard, by its name. */
  make: Map<Worker[], (shard: string) => Worker>;
  /** A fail-fast connection for the checks. */
  redis: Pick<Redis, 'zrangebyscore' | 'llen'>;
  prefix: string;
  logger: Logger;
  /** How long past due a delayed job may wait with nothing waiting before its shard's worker is replaced. */
  graceMs: number;
  /** How often the queues are looked at. */
  everyMs: number;
  now?: () => number;
}

/** Whether the shard's delayed jobs are overdue by more than `graceMs` with none waiting: no worker fetches. */
export async function shardWedged(redis: WedgedWorkersOptions['redis'], prefix: string, shard: string, graceMs: number, nowMs: number): Promise<boolean> {
  const overdue = await redis.zrangebyscore(`${prefix}:${shard}:delayed`, 0, (nowMs - graceMs) * DELAY_SCORE, 'LIMIT', 0, 1);
  if (overdue.length === 0) return false;
  return (await redis.llen(`${prefix}:${shard}:wait`)) === 0;
}

/** Moves the listeners of `from` (for the events the service uses) to `to`. */
function carryListeners(from: Worker, to: Worker): void {
  for (const event of CARRIED_EVENTS) {
    for (const listener of from.listeners(event)) to.on(event, listener as (...args: unknown[]) => void);
  }
}

/**
 * What BullMQ keeps private and the checks read (a version without it leaves the
 * first signal silent, not wrong): the pending wait for the next job (the blocking
 * wait on the marker, then the fetch), and the blocking connection's state.
 */
interface WorkerInsides {
  waiting?: Promise<unknown> | null;
  backend?: { blockingConnection?: { _client?: { status?: string } } };
}

function insides(worker: Worker): WorkerInsides {
  return worker as unknown as WorkerInsides;
}

/**
 * How long a live worker's wait for its next job may last: BullMQ blocks at most 10 s
 * on the queue's marker and abandons the command 1 s after its timeout; then one fetch.
 */
export const LONGEST_LIVE_WAIT_MS = 11_000;

/** Starts the checks; returns a function that stops them. */
export function watchWedgedWorkers(options: WedgedWorkersOptions): () => void {
  const { groups, make, redis, prefix, logger, graceMs, everyMs } = options;
  const now = options.now ?? Date.now;
  const replacedAt = new Map<string, number>();
  // Each worker's pending wait and when a check first saw it.
  const waits = new WeakMap<Worker, { wait: Promise<unknown>; since: number }>();
  let stopped = false;
  let running = false;

  /** How long the worker's current wait for a job has been pending, as far as the checks saw (0: none). */
  const waitingFor = (worker: Worker, at: number): number => {
    const wait = insides(worker).waiting;
    if (!wait) {
      waits.delete(worker);
      return 0;
    }
    const seen = waits.get(worker);
    if (seen?.wait === wait) return at - seen.since;
    waits.set(worker, { wait, since: at });
    return 0;
  };

  const replace = (group: Worker[], index: number, why: string, waitedMs: number) => {
    const old = group[index]!;
    const fresh = make.get(group)!(old.name);
    fresh.concurrency = old.concurrency;
    carryListeners(old, fresh);
    group[index] = fresh;
    replacedAt.set(old.name, now());
    logger.warn(
      { queue: old.name, why, grace_ms: graceMs, waiting_for_ms: waitedMs, blocking_connection: insides(old).backend?.blockingConnection?._client?.status ?? 'unknown' },
      'worker not fetching: replaced by a new one',
    );
    fresh.run().catch((err: Error) => logger.error({ queue: fresh.name, err: err.message }, 'worker stopped'));
    // Not awaited: a wedged worker's close may never end. Its jobs' locks lapse.
    old.close(true).catch((err: Error) => logger.warn({ queue: old.name, err: err.message }, 'replaced worker: close failed'));
  };

  const check = async () => {
    const at = now();
    for (const group of groups) {
      for (let i = 0; i < group.length; i++) {
        const worker = group[i]!;
        if (stopped || worker.closing) continue;
        if (at - (replacedAt.get(worker.name) ?? -Infinity) < graceMs) continue;
        // Every slot taken (long jobs): it cannot fetch, and is not wedged for that,
        // whatever its last wait for a job left behind.
        if (jobsInFlight(worker) >= worker.concurrency) continue;
        const waitedMs = waitingFor(worker, at);
        // The worker's own wait never ended: seen by every process whose worker it is.
        if (waitedMs > Math.max(graceMs, LONGEST_LIVE_WAIT_MS)) {
          replace(group, i, 'its wait for a job never ended', waitedMs);
          continue;
        }
        // Whatever the cause, the queue shows it: due jobs that no worker promotes.
        if (!(await shardWedged(redis, prefix, worker.name, graceMs, at))) continue;
        replace(group, i, 'due delayed jobs, none waiting', waitedMs);
      }
    }
  };

  const timer = setInterval(() => {
    if (running || stopped) return;
    running = true;
    check()
      .catch((err: Error) => logger.debug({ err: err.message }, 'wedged-worker check failed: next time'))
      .finally(() => (running = false));
  }, everyMs);
  timer.unref();
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}
