/**
 * A worker's metrics: job durations and failures by job name, fed from the Workers'
 * `completed` and `failed` events, plus the default process metrics, served on
 * `METRICS_PORT` (`/metrics`, `/healthz`) by a bare HTTP listener, and the webhook
 * first attempts made in place, which are no jobs, and the driver's commands. Queue depth is
 * global state in Redis: the api reports it for every queue, so it is not repeated here.
 */
import { baseQueueName } from '../common/queue-shards.js';
import { createServer } from 'node:http';
import type { Worker } from 'bullmq';
import type { Config } from '../common/config.js';
import type { Logger } from '../common/logger.js';
import type { MongoClient } from 'mongodb';
import { createRegistry, firstAttemptMetric, jobMetrics, JobTally, jobTallyKey, mongoCommandMetrics, type TallyWriter } from '../common/metrics.js';

export interface WorkerMetrics {
  close(): Promise<void>;
}

/**
 * Hooks the job metrics into `workers` and starts the listener; with `METRICS_PORT`
 * 0 it does neither. A port already taken fails the start, as the api's would.
 */
export async function startWorkerMetrics(
  config: Config,
  logger: Logger,
  workers: Worker[],
  firstAttempts?: { outcomes: Readonly<Record<string, number>> },
  mongo?: MongoClient,
): Promise<WorkerMetrics> {
  if (config.metricsPort <= 0) return { close: async () => undefined };
  const registry = createRegistry('worker');
  const jobs = jobMetrics(registry);
  if (firstAttempts) firstAttemptMetric(registry, firstAttempts.outcomes);
  if (mongo) mongoCommandMetrics(registry, mongo);
  for (const worker of workers) {
    worker.on('completed', (job) => jobs.observe(baseQueueName(worker.name), job, 'completed'));
    worker.on('failed', (job) => {
      if (job) jobs.observe(baseQueueName(worker.name), job, 'failed');
    });
  }

  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { Allow: 'GET, HEAD', 'Content-Type': 'text/plain' }).end('method not allowed\n');
    } else if (path === '/metrics') {
      registry.metrics().then(
        (body) => res.writeHead(200, { 'Content-Type': registry.contentType }).end(body),
        (err: Error) => {
          logger.warn({ err: err.message }, 'metrics collection failed');
          res.writeHead(500, { 'Content-Type': 'text/plain' }).end('metrics collection failed\n');
        },
      );
    } else if (path === '/healthz') {
      res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ status: 'ok' }));
    } else {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found\n');
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.metricsPort, config.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  logger.info({ url: `http://${config.host}:${config.metricsPort}/metrics` }, 'worker metrics listening');

  return {
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** How often a worker adds its job tallies to the hash the api reads. */
const TALLY_FLUSH_MS = 1000;

/**
 * Feeds the job durations and failures of `workers` to the shared tallies that the
 * api's `/metrics` reports (common/metrics.ts `JobTally`), whatever `METRICS_PORT` is.
 * `close` adds what is left, once, after the workers have closed.
 */
export function startJobTally(redis: TallyWriter, prefix: string, workers: Worker[], logger: Logger): { close(): Promise<void> } {
  const tally = new JobTally(jobTallyKey(prefix), redis);
  for (const worker of workers) {
    worker.on('completed', (job) => tally.observe(baseQueueName(worker.name), job, 'completed'));
    worker.on('failed', (job) => {
      if (job) tally.observe(baseQueueName(worker.name), job, 'failed');
    });
  }
  const flush = () =>
    tally.flush().catch((err: Error) => logger.debug({ err: err.message }, 'job tallies not flushed: kept for the next flush'));
  const timer = setInterval(flush, TALLY_FLUSH_MS);
  timer.unref();
  return {
    async close() {
      clearInterval(timer);
      await flush();
    },
  };
}
