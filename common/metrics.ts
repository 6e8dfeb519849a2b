/**
 * Prometheus metrics shared by the api and the workers: one registry per process,
 * the metric definitions, and the queue-depth collector. Label values are bounded
 * (route templates, job names, queue states), never ids or user input.
 */
import type { Job, Queue } from 'bullmq';
import type { CommandFailedEvent, CommandStartedEvent, CommandSucceededEvent, MongoClient } from 'mongodb';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

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
