// Prometheus metrics: the api's /metrics (requests by route template and status,
// queue depth by state, the job durations and failures of every worker, process
// metrics) and a worker's listener on METRICS_PORT
// (job durations and failures by job name, process metrics).

import test from 'ava';
import { Queue } from 'bullmq';
import { freePort } from '#scripts/lib/net.mjs';
import { Service, sleep } from '../../helpers/service.js';
import { Receiver } from '../../helpers/receiver.js';
import { createEndpoint, createPaymentIntent } from '../../helpers/webhook-fixtures.js';

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parses the Prometheus text format (enough of it for these tests). */
function parseMetrics(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) throw new Error(`unparsable metrics line: ${line}`);
    const labels: Record<string, string> = {};
    for (const m of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[m[1] as string] = m[2] as string;
    samples.push({ name: match[1] as string, labels, value: Number(match[3]) });
  }
  return samples;
}

function find(samples: Sample[], name: string, labels: Record<string, string>): Sample[] {
  return samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
}

function value(samples: Sample[], name: string, labels: Record<string, string>): number {
  return find(samples, name, labels).reduce((sum, s) => sum + s.value, 0);
}

let service: Service;
let workerMetricsUrl: string;
let key: string;

test.before(async () => {
  service = await Service.start({ workers: 0 });
  const port = await freePort();
  await service.startWorker({ METRICS_PORT: String(port) });
  workerMetricsUrl = `http://127.0.0.1:${port}`;
  key = await service.issueKey('metrics');
});

test.after.always(async () => {
  await service?.stop();
});

const created: string[] = [];

test.serial('the api counts requests and their durations by route and status', async (t) => {
  for (let i = 0; i < 3; i++) {
    const res = await service.request('POST', '/v1/payment_intents', { key, body: { amount: 100 + i } });
    t.is(res.status, 200);
    created.push(res.body.id as string);
  }
  t.is((await service.request('GET', '/no/such/route/xyz')).status, 404);
  t.is((await service.request('POST', '/v1/payment_intents', { body: { amount: 1 } })).status, 401);

  const res = await fetch(`${service.baseUrl}/metrics`);
  t.is(res.status, 200);
  t.regex(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  const text = await res.text();
  const samples = parseMetrics(text);
  t.true(value(samples, 'http_requests_total', { method: 'POST', route: '/v1/payment_intents', status: '200', service: 'api' }) >= 3);
  t.is(value(samples, 'http_requests_total', { method: 'POST', route: '/v1/payment_intents', status: '401' }), 1);
  t.is(value(samples, 'http_requests_total', { method: 'GET', route: 'unmatched', status: '404' }), 1);
  t.true(value(samples, 'http_request_duration_seconds_count', { method: 'POST', route: '/v1/payment_intents', status: '200' }) >= 3);
  t.true(find(samples, 'http_request_duration_seconds_bucket', { route: '/v1/payment_intents', le: '+Inf' }).length > 0);
  t.false(text.includes('/no/such/route'), 'no raw path of an unmatched request');
});

test.serial('parameterised routes are labelled by their template, never by the id in the path', async (t) => {
  for (const id of created) t.is((await service.request('GET', `/v1/payment_intents/${id}`, { key })).status, 200);
  t.is((await service.request('GET', '/v1/payment_intents/pi_doesnotexist', { key })).status, 404);
  const text = await (await fetch(`${service.baseUrl}/metrics`)).text();
  const samples = parseMetrics(text);
  t.is(value(samples, 'http_requests_total', { method: 'GET', route: '/v1/payment_intents/:id', status: '200' }), created.length);
  t.is(value(samples, 'http_requests_total', { method: 'GET', route: '/v1/payment_intents/:id', status: '404' }), 1);
  for (const id of created) t.false(text.includes(id), 'no object id in any label');
});

test.serial('the api reports the depth of every queue by state, read on each scrape', async (t) => {
  const samples = parseMetrics(await (await fetch(`${service.baseUrl}/metrics`)).text());
  for (const queue of ['writes', 'events', 'webhooks', 'maintenance']) {
    for (const state of ['waiting', 'active', 'delayed', 'prioritized', 'waiting-children', 'completed', 'failed']) {
      t.is(find(samples, 'bullmq_queue_jobs', { queue, state }).length, 1, `${queue} ${state}`);
    }
  }

  // A delayed job shows up on the next scrape.
  const redis = service.redis();
  const webhooks = new Queue('webhooks', { connection: redis, prefix: service.prefix });
  t.teardown(async () => {
    await webhooks.close();
    redis.disconnect();
  });
  const before = value(samples, 'bullmq_queue_jobs', { queue: 'webhooks', state: 'delayed' });
  const job = await webhooks.add('test.parked.v1', {}, { delay: 600_000 });
  t.teardown(() => job.remove().then(() => undefined, () => undefined));
  const after = parseMetrics(await (await fetch(`${service.baseUrl}/metrics`)).text());
  t.is(value(after, 'bullmq_queue_jobs', { queue: 'webhooks', state: 'delayed' }), before + 1);
});

test.serial('the api exposes the default process metrics', async (t) => {
  const samples = parseMetrics(await (await fetch(`${service.baseUrl}/metrics`)).text());
  for (const name of ['process_cpu_user_seconds_total', 'process_resident_memory_bytes', 'nodejs_eventloop_lag_seconds', 'nodejs_heap_size_used_bytes']) {
    t.true(find(samples, name, { service: 'api' }).length > 0, name);
  }
});

test.serial('a worker serves job durations and failures by job name on METRICS_PORT', async (t) => {
  for (let i = 0; i < 2; i++) t.is((await service.request('POST', '/v1/payment_intents', { key, body: { amount: 500 } })).status, 200);

  // A job of an unknown name fails in the worker: one failed attempt, no retry.
  const redis = service.redis();
  const creates = new Queue('writes', { connection: redis, prefix: service.prefix });
  t.teardown(async () => {
    await creates.close();
    redis.disconnect();
  });
  const bogus = await creates.add('test.unknown.v1', {}, { attempts: 1 });
  for (let i = 0; i < 200 && !(await bogus.isFailed()); i++) await sleep(25);
  t.true(await bogus.isFailed());

  let samples: Sample[] = [];
  for (let i = 0; i < 40; i++) {
    samples = parseMetrics(await (await fetch(`${workerMetricsUrl}/metrics`)).text());
    if (value(samples, 'bullmq_job_failures_total', { name: 'test.unknown.v1' }) > 0) break;
    await sleep(50);
  }
  const completed = { queue: 'writes', name: 'payment_intent.create.v1', outcome: 'completed', service: 'worker' };
  t.true(value(samples, 'bullmq_job_duration_seconds_count', completed) >= 2);
  t.true(value(samples, 'bullmq_job_duration_seconds_sum', completed) > 0);
  t.true(find(samples, 'bullmq_job_duration_seconds_bucket', { ...completed, le: '+Inf' }).length === 1);
  t.is(value(samples, 'bullmq_job_failures_total', { queue: 'writes', name: 'test.unknown.v1' }), 1);
  t.is(value(samples, 'bullmq_job_duration_seconds_count', { queue: 'writes', name: 'test.unknown.v1', outcome: 'failed' }), 1);
  t.is(value(samples, 'bullmq_job_failures_total', { name: 'payment_intent.create.v1' }), 0);
  t.true(find(samples, 'process_cpu_user_seconds_total', { service: 'worker' }).length > 0);
  t.is(find(samples, 'http_requests_total', {}).length, 0, 'request metrics belong to the api');
});

test.serial('a worker counts the webhook first attempts it makes in place, which are no jobs', async (t) => {
  const receiver = await Receiver.start();
  t.teardown(() => receiver.close());
  const hookedKey = await service.issueKey('metrics-hooked');
  await createEndpoint(service, hookedKey, receiver.url('/ok'));
  await createEndpoint(service, hookedKey, receiver.url('/fails'));
  receiver.on('/fails', () => ({ status: 500, body: 'no' }));
  await createPaymentIntent(service, hookedKey);
  await Promise.all([receiver.waitFor('/ok'), receiver.waitFor('/fails')]);

  let samples: Sample[] = [];
  for (let i = 0; i < 200; i++) {
    samples = parseMetrics(await (await fetch(`${workerMetricsUrl}/metrics`)).text());
    if (value(samples, 'webhook_first_attempts_total', { outcome: 'failed' }) > 0) break;
    await sleep(50);
  }
  t.is(value(samples, 'webhook_first_attempts_total', { outcome: 'delivered', service: 'worker' }), 1);
  t.is(value(samples, 'webhook_first_attempts_total', { outcome: 'failed', service: 'worker' }), 1);
  t.is(value(samples, 'webhook_first_attempts_total', { outcome: 'deferred', service: 'worker' }), 0);
  t.is(value(samples, 'bullmq_job_duration_seconds_count', { queue: 'webhooks' }), 0, 'no delivery job ran yet: the retry waits');
});

test.serial('the api reports the job durations and failures of every worker together', async (t) => {
  // A second worker, without a listener of its own: its jobs reach the api's /metrics too.
  await service.startWorker();
  const completed = { queue: 'writes', name: 'payment_intent.create.v1', outcome: 'completed', service: 'worker' };
  const apiSamples = async () => parseMetrics(await (await fetch(`${service.baseUrl}/metrics`)).text());
  // The earlier tests' jobs may still be reporting: read the count once it has settled.
  const settled = async () => {
    let last = -1;
    for (let i = 0; i < 50; i++) {
      const now = value(await apiSamples(), 'bullmq_job_duration_seconds_count', completed);
      if (now === last) return now;
      last = now;
      await sleep(300);
    }
    return last;
  };
  const before = await settled();
  const creates = 8;
  await Promise.all(
    Array.from({ length: creates }, async () => t.is((await service.request('POST', '/v1/payment_intents', { key, body: { amount: 700 } })).status, 200)),
  );
  let samples: Sample[] = [];
  for (let i = 0; i < 100; i++) {
    samples = await apiSamples();
    if (value(samples, 'bullmq_job_duration_seconds_count', completed) >= before + creates) break;
    await sleep(50);
  }
  t.is(value(samples, 'bullmq_job_duration_seconds_count', completed), before + creates);
  t.is(value(samples, 'bullmq_job_duration_seconds_bucket', { ...completed, le: '+Inf' }), before + creates);
  t.true(value(samples, 'bullmq_job_duration_seconds_sum', completed) > 0);
  // The failed attempt of the test above, made by the first worker.
  t.is(value(samples, 'bullmq_job_failures_total', { queue: 'writes', name: 'test.unknown.v1', service: 'worker' }), 1);
  t.is(value(samples, 'bullmq_job_duration_seconds_count', { queue: 'writes', name: 'test.unknown.v1', outcome: 'failed' }), 1);
  t.is(value(samples, 'bullmq_job_failures_total', { name: 'payment_intent.create.v1' }), 0);
});

test.serial("a worker's listener answers /healthz, and 404 elsewhere", async (t) => {
  const health = await fetch(`${workerMetricsUrl}/healthz`);
  t.is(health.status, 200);
  t.deepEqual(await health.json(), { status: 'ok' });
  t.is((await fetch(`${workerMetricsUrl}/nothing`)).status, 404);
  t.is((await fetch(`${workerMetricsUrl}/metrics`, { method: 'POST' })).status, 405);
});
