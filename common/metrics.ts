/**
 * Prometheus metrics shared by the api and the workers: one registry per process,
 * the metric definitions, and the queue-depth collector. Label values are bounded
 * (route templates, job names, queue states), never ids or user input.
 */
import type { Job, Queue } from 'bullmq';
import type { CommandFailedEvent, CommandStartedEvent, CommandSucceededEvent, MongoClient } from 'mongodb';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics, type Metric } from 'prom-client';

/** Seconds; from a cached read (~1 ms) to a create that waited for its job. */
const HTTP_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
/** Seconds; from a MongoDB insert to a webhook delivery that ran into its timeout. */
const JOB_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** How long a scrape waits for Redis before it leaves the queue depth out. */
const QUEUE_COUNT_TIMEOUT_MS = 2000;

/**
 * A registry with the default process metrics (CPU, memory, event loop lag, GC,
 * handles) and a `service` label on every series, so api and worker series are told
 * apart even when scraped through one target.
 */
export function createRegistry(service: 'api' | 'worker'): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  collectDefaultMetrics({ register: registry });
  return registry;
}

export interface RequestInfo {
  method: string;
  /** The route template (`/v1/payment_intents/:id`), never the raw path. */
  route: string;
  status: number;
  durationMs: number;
}

/** `http_requests_total` and `http_request_duration_seconds`, by method, route template and status. */
export function httpMetrics(registry: Registry): { observe(info: RequestInfo): void } {
  const labelNames = ['method', 'route', 'status'] as const;
  const requests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests answered, by method, route template and status.',
    labelNames,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time from receiving a request to its answer, by method, route template and status.',
    labelNames,
    buckets: HTTP_BUCKETS,
    registers: [registry],
  });
  return {
    observe({ method, route, status, durationMs }) {
      const labels = { method, route, status: String(status) };
      requests.inc(labels);
      duration.observe(labels, durationMs / 1000);
    },
  };
}

async function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      work,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('timeout')), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * `bullmq_queue_jobs{queue, state}`: read from Redis with `getJobCounts()` on each
 * scrape, so the value is current and nothing polls between scrapes. A queue that
 * cannot be counted (Redis down) is left out of that scrape rather than reported
 * with a stale value.
 */
export function queueDepthMetric(registry: Registry, queues: Queue[]): Gauge<'queue' | 'state'> {
  return new Gauge({
    name: 'bullmq_queue_jobs',
    help: 'Jobs in each queue, by state (waiting, active, delayed, prioritized, waiting-children, completed, failed).',
    labelNames: ['queue', 'state'],
    registers: [registry],
    async collect() {
      this.reset();
      await Promise.all(
        queues.map(async (queue) => {
          try {
            const counts = await withTimeout(queue.getJobCounts(), QUEUE_COUNT_TIMEOUT_MS);
            for (const [state, count] of Object.entries(counts)) this.set({ queue: queue.name, state }, count);
          } catch {
            // Left out of this scrape; readiness and the logs report the outage.
          }
        }),
      );
    },
  });
}

export type JobOutcome = 'completed' | 'failed';

/**
 * `bullmq_job_duration_seconds{queue, name, outcome}` (processing time of one attempt)
 * and `bullmq_job_failures_total{queue, name}` (failed attempts, retried or final).
 * A business failure of a create (bad input found in the worker) is a completed job:
 * only infrastructure faults and bugs count as failures.
 */
export function jobMetrics(registry: Registry): { observe(queue: string, job: Job, outcome: JobOutcome): void } {
  const duration = new Histogram({
    name: 'bullmq_job_duration_seconds',
    help: 'Processing time of one job attempt, by queue, job name and outcome.',
    labelNames: ['queue', 'name', 'outcome'],
    buckets: JOB_BUCKETS,
    registers: [registry],
  });
  const failures = new Counter({
    name: 'bullmq_job_failures_total',
    help: 'Failed job attempts (retried or final), by queue and job name.',
    labelNames: ['queue', 'name'],
    registers: [registry],
  });
  return {
    observe(queue, job, outcome) {
      const started = job.processedOn;
      if (started !== undefined) {
        const finished = job.finishedOn ?? Date.now();
        duration.observe({ queue, name: job.name, outcome }, Math.max(0, finished - started) / 1000);
      }
      if (outcome === 'failed') failures.inc({ queue, name: job.name });
    },
  };
}

/**
 * `webhook_first_attempts_total{outcome}`: first delivery attempts made in place by
 * the job that recorded the event (worker/webhooks/first-attempt.ts), which no job
 * metric sees: `delivered`, `failed` (the chain goes on in a delivery job, or is
 * over), `deferred` (left to a delivery job without an attempt: no free slot, or a
 * fault). Read from the counts at each scrape.
 */
export function firstAttemptMetric(registry: Registry, counts: Readonly<Record<string, number>>): void {
  const seen: Record<string, number> = {};
  new Counter({
    name: 'webhook_first_attempts_total',
    help: 'First webhook delivery attempts made in place, by outcome.',
    labelNames: ['outcome'],
    registers: [registry],
    collect() {
      for (const [outcome, count] of Object.entries(counts)) {
        this.inc({ outcome }, count - (seen[outcome] ?? 0));
        seen[outcome] = count;
      }
    },
  });
}

/** Commands whose first field names the collection (the others: `getMore` names it in `collection`). */
const COLLECTION_FIELD: Record<string, string> = { getMore: 'collection' };

/**
 * `mongodb_commands_total{command, collection}` and
 * `mongodb_command_seconds_total{command, collection}`: every command the process's
 * driver sent, from the driver's command monitoring (`monitorCommands`, set by
 * common/mongo.ts `openMongo`), and the time until its answer. Where the store's time
 * goes, per command and collection: how a payment's cost was accounted
 * (docs/performance.md). Labels are command names and collection names, both bounded.
 */
export function mongoCommandMetrics(registry: Registry, client: MongoClient): void {
  const labelNames = ['command', 'collection'] as const;
  const count = new Counter({ name: 'mongodb_commands_total', help: 'MongoDB commands sent, by command and collection.', labelNames, registers: [registry] });
  const seconds = new Counter({
    name: 'mongodb_command_seconds_total',
    help: 'Time from sending a MongoDB command to its answer, summed, by command and collection.',
    labelNames,
    registers: [registry],
  });
  // What each command in flight is about: its answer does not repeat the collection.
  const inFlight = new Map<number, string>();
  client.on('commandStarted', (event: CommandStartedEvent) => {
    const field = COLLECTION_FIELD[event.commandName] ?? event.commandName;
    const target = event.command[field];
    inFlight.set(event.requestId, typeof target === 'string' ? target : '');
  });
  const done = (event: CommandSucceededEvent | CommandFailedEvent) => {
    const collection = inFlight.get(event.requestId) ?? '';
    inFlight.delete(event.requestId);
    const labels = { command: event.commandName, collection };
    count.inc(labels);
    seconds.inc(labels, event.duration / 1000);
  };
  client.on('commandSucceeded', done);
  client.on('commandFailed', done);
}

/** The Redis hash where every worker adds its job tallies, read by the api's `/metrics`. */
export function jobTallyKey(prefix: string): string {
  return `${prefix}:job-tallies`;
}

/** One tally's place in the hash: what it counts, then its labels. */
type TallyField = ['bucket', string, string, JobOutcome, string] | ['sum' | 'count', string, string, JobOutcome] | ['failures', string, string];

/** What a Redis client needs to add the tallies: one pipeline per flush. */
export interface TallyWriter {
  pipeline(): { hincrby(key: string, field: string, by: number): unknown; hincrbyfloat(key: string, field: string, by: number): unknown; exec(): Promise<unknown> };
}

/**
 * The job durations and failures of one worker process, added up in memory and added
 * to a Redis hash shared by every worker (`flush`, once a second), so that the api's
 * `/metrics` reports the jobs of all workers together (`sharedJobMetrics`): a scrape
 * of the api sees them without reaching any worker. The hash holds sums, so a
 * restarted worker takes nothing back; a flush that fails is kept for the next one,
 * and what a killed worker had not flushed (at most a second) is lost.
 */
export class JobTally {
  private pending = new Map<string, number>();

  constructor(
    private readonly key: string,
    private readonly redis: TallyWriter,
  ) {}

  observe(queue: string, job: Job, outcome: JobOutcome): void {
    const started = job.processedOn;
    if (started !== undefined) {
      const seconds = Math.max(0, (job.finishedOn ?? Date.now()) - started) / 1000;
      const le = JOB_BUCKETS.find((bound) => seconds <= bound);
      this.add(['bucket', queue, job.name, outcome, le === undefined ? '+Inf' : String(le)], 1);
      this.add(['sum', queue, job.name, outcome], seconds);
      this.add(['count', queue, job.name, outcome], 1);
    }
    if (outcome === 'failed') this.add(['failures', queue, job.name], 1);
  }

  /** Adds what was observed since the last flush to the hash; what fails is kept. */
  async flush(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    const pipeline = this.redis.pipeline();
    for (const [field, by] of batch) {
      if (field.startsWith('["sum"')) pipeline.hincrbyfloat(this.key, field, by);
      else pipeline.hincrby(this.key, field, by);
    }
    try {
      const results = (await pipeline.exec()) as Array<[Error | null, unknown]> | null;
      const failed = results?.find(([err]) => err)?.[0];
      if (failed) throw failed;
    } catch (err) {
      // Kept whole for the next flush: a pipeline that failed part-way is rare
      // (a Redis restart between two commands) and counts its head twice.
      for (const [field, by] of batch) this.pending.set(field, (this.pending.get(field) ?? 0) + by);
      throw err;
    }
  }

  private add(field: TallyField, by: number): void {
    const name = JSON.stringify(field);
    this.pending.set(name, (this.pending.get(name) ?? 0) + by);
  }
}

/** What a Redis client needs to read the tallies. */
export interface TallyReader {
  hgetall(key: string): Promise<Record<string, string>>;
}

type SeriesValue = { value: number; labels: Record<string, string | number>; metricName?: string };

/**
 * `bullmq_job_duration_seconds` and `bullmq_job_failures_total` on the api, for the
 * jobs of every worker together, read from the tallies' hash on each scrape (left out
 * of a scrape when Redis does not answer within 2 s, like the queue depth), labelled
 * `service="worker"`. The same names as a worker's own listener (`METRICS_PORT`),
 * which counts that worker alone: scrape jobs from one or the other, not both.
 */
export function sharedJobMetrics(registry: Registry, redis: TallyReader, key: string): void {
  const parsed = async () => {
    const hash = (await withTimeout(redis.hgetall(key), QUEUE_COUNT_TIMEOUT_MS).catch(() => null)) ?? {};
    return Object.entries(hash).flatMap(([field, raw]) => {
      try {
        const parts = JSON.parse(field) as TallyField;
        const value = Number(raw);
        return Array.isArray(parts) && Number.isFinite(value) ? [{ parts, value }] : [];
      } catch {
        return [];
      }
    });
  };
  registry.registerMetric(
    sharedMetric('bullmq_job_duration_seconds', 'Processing time of one job attempt, by queue, job name and outcome: every worker together.', 'histogram', async () => {
      const series = new Map<string, { labels: Record<string, string>; buckets: Map<string, number>; sum: number; count: number }>();
      for (const { parts, value } of await parsed()) {
        if (parts[0] === 'failures') continue;
        const [kind, queue, name, outcome] = parts;
        const id = JSON.stringify([queue, name, outcome]);
        let s = series.get(id);
        if (!s) series.set(id, (s = { labels: { service: 'worker', queue, name, outcome }, buckets: new Map(), sum: 0, count: 0 }));
        if (kind === 'bucket') s.buckets.set(parts[4], value);
        else if (kind === 'sum') s.sum = value;
        else s.count = value;
      }
      const values: SeriesValue[] = [];
      for (const { labels, buckets, sum, count } of series.values()) {
        let cumulative = 0;
        for (const le of [...JOB_BUCKETS.map(String), '+Inf']) {
          cumulative += buckets.get(le) ?? 0;
          values.push({ metricName: 'bullmq_job_duration_seconds_bucket', labels: { ...labels, le }, value: cumulative });
        }
        values.push({ metricName: 'bullmq_job_duration_seconds_sum', labels, value: sum });
        values.push({ metricName: 'bullmq_job_duration_seconds_count', labels, value: count });
      }
      return values;
    }),
  );
  registry.registerMetric(
    sharedMetric('bullmq_job_failures_total', 'Failed job attempts (retried or final), by queue and job name: every worker together.', 'counter', async () =>
      (await parsed()).flatMap(({ parts, value }) => (parts[0] === 'failures' ? [{ labels: { service: 'worker', queue: parts[1], name: parts[2] }, value }] : [])),
    ),
  );
}

/** A metric whose values are computed at each scrape, in the shape prom-client's registry formats. */
function sharedMetric(name: string, help: string, type: 'histogram' | 'counter', values: () => Promise<SeriesValue[]>): Metric {
  const metric = {
    name,
    help,
    type,
    aggregator: 'sum',
    async get() {
      return { name, help, type, aggregator: 'sum', values: await values() };
    },
    reset() {},
  };
  return metric as unknown as Metric;
}
