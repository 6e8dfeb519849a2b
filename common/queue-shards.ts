/**
 * Queues past one Redis (DESIGN section 19). On a Redis Cluster every BullMQ key of
 * a queue must hash to one slot: the queue's name carries a hash tag (`{writes}`),
 * BullMQ's second way of making a queue cluster-safe. With `QUEUE_SHARDS=N` a
 * sharded queue is N queues (`{writes-0}` … `{writes-N-1}`), each in a slot of its
 * own, so the cluster's masters share the work; a job goes to the shard its routing
 * key names, so one project's writes (and its events) stay in one queue, in order.
 * Workers consume every shard.
 *
 * One Redis and one shard keep the plain names (`writes`): a deployment that
 * upgrades finds its queued jobs where they were.
 */
import type { Job, JobsOptions, JobType, Queue, QueueOptions } from 'bullmq';
import type { Config } from './config.js';
import type { QueueName, TypedQueue } from './jobs.js';

export interface QueueLayout {
  shards: number;
  /** Names carry a hash tag: a cluster, or more than one shard. */
  tagged: boolean;
}

export function queueLayout(config: Pick<Config, 'queueShards' | 'redisClusterNodes'>): QueueLayout {
  return { shards: config.queueShards, tagged: config.redisClusterNodes !== null || config.queueShards > 1 };
}

/** The single queue's layout of one Redis (tests, tools). */
export const PLAIN_LAYOUT: QueueLayout = { shards: 1, tagged: false };

/**
 * What a job of each sharded queue is routed by: writes and events by project (a
 * project's jobs in order); the intents' clock by payment intent (its jobs are
 * delayed, each at its own time, and a check a callback asks for knows only the
 * intent); deliveries by endpoint. Housekeeping is one queue.
 */
const ROUTES: Record<QueueName, ((data: Record<string, unknown>) => unknown) | null> = {
  writes: (data) => data.project,
  events: (data) => data.project,
  intents: (data) => data.paymentIntent,
  webhooks: (data) => data.endpointId ?? data.target,
  maintenance: null,
};

/** The names of queue `base`'s shards under `layout`. */
export function queueNames(base: QueueName, layout: QueueLayout): string[] {
  const shards = ROUTES[base] ? layout.shards : 1;
  if (!layout.tagged) return [base];
  return shards === 1 ? [`{${base}}`] : Array.from({ length: shards }, (_, i) => `{${base}-${i}}`);
}

/** The queue a shard's name stands for (`{writes-2}` → `writes`), for metrics and logs. */
export function baseQueueName(name: string): string {
  const match = /^\{([a-z]+)(?:-\d+)?\}$/.exec(name);
  return match ? match[1]! : name;
}

/** FNV-1a of the routing key, modulo the shards: stable across processes and restarts. */
export function shardOf(key: string, shards: number): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    hash ^= key.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % shards;
}

/** The shard index of a job of `base` with `data` (0 when the queue is not sharded or the key is missing). */
export function shardOfJob(base: QueueName, data: unknown, shards: number): number {
  const route = ROUTES[base];
  if (!route || shards === 1) return 0;
  const key = route((data ?? {}) as Record<string, unknown>);
  return typeof key === 'string' ? shardOf(key, shards) : 0;
}

/**
 * A sharded queue: `add` and `addBulk` route each job to its shard; lookups by job
 * id ask every shard (a job id names one job in one shard, since a job's routing
 * key is part of what its id stands for); counts add up. What the service calls on
 * a queue, no more: the dashboard and the metrics see the shards themselves.
 */
export class ShardedQueue {
  constructor(
    readonly base: QueueName,
    readonly shards: Queue[],
  ) {}

  get name(): string {
    return this.base;
  }

  private pick(data: unknown): Queue {
    return this.shards[shardOfJob(this.base, data, this.shards.length)]!;
  }

  add(name: string, data: unknown, opts?: JobsOptions): Promise<Job> {
    return this.pick(data).add(name, data, opts);
  }

  /** Each shard's jobs go as one bulk; the jobs come back in the order given. */
  async addBulk(jobs: Array<{ name: string; data: unknown; opts?: JobsOptions }>): Promise<Job[]> {
    const groups = new Map<number, number[]>();
    jobs.forEach((job, i) => {
      const shard = shardOfJob(this.base, job.data, this.shards.length);
      groups.set(shard, [...(groups.get(shard) ?? []), i]);
    });
    const added: Job[] = new Array<Job>(jobs.length);
    await Promise.all(
      [...groups].map(async ([shard, indexes]) => {
        const made = await this.shards[shard]!.addBulk(indexes.map((i) => jobs[i]!));
        indexes.forEach((i, n) => (added[i] = made[n]!));
      }),
    );
    return added;
  }

  async getJob(id: string): Promise<Job | undefined> {
    const found = await Promise.all(this.shards.map((queue) => queue.getJob(id)));
    return found.find((job) => job !== undefined && job !== null) ?? undefined;
  }

  async getJobState(id: string): Promise<Awaited<ReturnType<Queue['getJobState']>>> {
    const states = await Promise.all(this.shards.map((queue) => queue.getJobState(id)));
    return states.find((state) => state !== 'unknown') ?? 'unknown';
  }

  async getJobCounts(...types: JobType[]): Promise<Record<string, number>> {
    const counts = await Promise.all(this.shards.map((queue) => queue.getJobCounts(...types)));
    const total: Record<string, number> = {};
    for (const each of counts) for (const [type, n] of Object.entries(each)) total[type] = (total[type] ?? 0) + n;
    return total;
  }

  async getWaitingCount(): Promise<number> {
    const counts = await Promise.all(this.shards.map((queue) => queue.getWaitingCount()));
    return counts.reduce((sum, n) => sum + n, 0);
  }

  /** The oldest waiting jobs of every shard together, oldest first. */
  async getWaiting(start = 0, end = -1): Promise<Job[]> {
    const each = await Promise.all(this.shards.map((queue) => queue.getWaiting(0, end)));
    const all = each.flat().sort((a, b) => a.timestamp - b.timestamp);
    return end < 0 ? all.slice(start) : all.slice(start, end + 1);
  }

  async getActiveCount(): Promise<number> {
    const counts = await Promise.all(this.shards.map((queue) => queue.getActiveCount()));
    return counts.reduce((sum, n) => sum + n, 0);
  }

  async getFailedCount(): Promise<number> {
    const counts = await Promise.all(this.shards.map((queue) => queue.getFailedCount()));
    return counts.reduce((sum, n) => sum + n, 0);
  }

  /** The jobs of these states of every shard (each shard's `start`..`end`), oldest first. */
  async getJobs(types?: JobType | JobType[], start = 0, end = -1): Promise<Job[]> {
    const each = await Promise.all(this.shards.map((queue) => queue.getJobs(types, start, end)));
    return each.flat().sort((a, b) => a.timestamp - b.timestamp);
  }

  /** Removes the job from whichever shard holds it; 1 when one did. */
  async remove(id: string): Promise<number> {
    const removed = await Promise.all(this.shards.map((queue) => queue.remove(id)));
    return removed.some((n) => n === 1) ? 1 : 0;
  }

  on(event: 'error', listener: (err: Error) => void): this {
    for (const queue of this.shards) queue.on(event, listener);
    return this;
  }

  async close(): Promise<void> {
    await Promise.all(this.shards.map((queue) => queue.close()));
  }
}

/**
 * Queue `base` under `layout`: a BullMQ queue when it has one shard, else a
 * `ShardedQueue` over its shards, typed as the queue for its callers (it answers
 * what they call). `shardsOf` gives the BullMQ queues behind either.
 */
export function openLayoutQueue<Q extends QueueName>(
  base: Q,
  options: QueueOptions,
  layout: QueueLayout,
  open: (name: string, options: QueueOptions) => Queue,
): TypedQueue<Q> {
  const shards = queueNames(base, layout).map((name) => open(name, options));
  if (shards.length === 1) return shards[0] as unknown as TypedQueue<Q>;
  return new ShardedQueue(base, shards) as unknown as TypedQueue<Q>;
}

/** The BullMQ queues behind a queue `openLayoutQueue` made. */
export function shardsOf(queue: TypedQueue<QueueName> | Queue): Queue[] {
  return (queue as unknown) instanceof ShardedQueue ? (queue as unknown as ShardedQueue).shards : [queue as Queue];
}
