/**
 * The shared job tallies (common/metrics.ts): what workers add to one Redis hash is
 * what the api's registry reports, summed over the workers, as a Prometheus histogram
 * and counter; a flush that fails is kept for the next one.
 */
import test from 'ava';
import type { Job } from 'bullmq';
import { Redis } from 'ioredis';
import { Registry } from 'prom-client';
import { JobTally, jobTallyKey, sharedJobMetrics } from '../../common/metrics.js';
import { stackUrls, uniqueName } from '../helpers/service.js';

/** What the tally reads of a finished job. */
function finished(name: string, ms: number): Job {
  return { name, processedOn: 1_000, finishedOn: 1_000 + ms } as Job;
}

/** The value of the one sample of `name` whose labels are exactly `labels`, in any order. */
function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  const wanted = JSON.stringify(Object.entries(labels).sort());
  for (const l of text.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)\{(.*)\} (\S+)$/.exec(l);
    if (!match || match[1] !== name) continue;
    const found = [...(match[2] as string).matchAll(/([a-zA-Z_]+)="([^"]*)"/g)].map((m) => [m[1], m[2]]);
    if (JSON.stringify(found.sort()) === wanted) return Number(match[3]);
  }
  return undefined;
}

test('two workers add up: buckets are cumulative, and sum, count and failures are totals', async (t) => {
  const redis = new Redis(stackUrls().redisUrl);
  t.teardown(() => redis.disconnect());
  const key = jobTallyKey(uniqueName('tally'));
  t.teardown(() => redis.del(key).then(() => undefined));
  const one = new JobTally(key, redis);
  const two = new JobTally(key, redis);
  one.observe('writes', finished('payment_intent.create.v1', 3), 'completed');
  one.observe('writes', finished('payment_intent.create.v1', 40), 'completed');
  two.observe('writes', finished('payment_intent.create.v1', 70_000), 'completed');
  two.observe('writes', finished('test.unknown.v1', 1), 'failed');
  await Promise.all([one.flush(), two.flush()]);
  await one.flush(); // nothing new: adds nothing

  const registry = new Registry();
  registry.setDefaultLabels({ service: 'api' });
  sharedJobMetrics(registry, redis, key);
  const text = await registry.metrics();
  const labels = { service: 'worker', queue: 'writes', name: 'payment_intent.create.v1', outcome: 'completed' };
  const bucket = (le: string) => sample(text, 'bullmq_job_duration_seconds_bucket', { ...labels, le });
  t.is(bucket('0.005'), 1);
  t.is(bucket('0.025'), 1);
  t.is(bucket('0.05'), 2);
  t.is(bucket('60'), 2);
  t.is(bucket('+Inf'), 3);
  t.is(sample(text, 'bullmq_job_duration_seconds_count', labels), 3);
  t.is(Math.round((sample(text, 'bullmq_job_duration_seconds_sum', labels) ?? 0) * 1000), 70_043);
  t.is(sample(text, 'bullmq_job_failures_total', { service: 'worker', queue: 'writes', name: 'test.unknown.v1' }), 1);
  t.is(sample(text, 'bullmq_job_failures_total', { service: 'worker', queue: 'writes', name: 'payment_intent.create.v1' }), undefined);
  t.regex(text, /# TYPE bullmq_job_duration_seconds histogram/);
  t.regex(text, /# TYPE bullmq_job_failures_total counter/);
});

test('a flush that fails is kept, and added by the next one that reaches Redis', async (t) => {
  const redis = new Redis(stackUrls().redisUrl);
  t.teardown(() => redis.disconnect());
  const key = jobTallyKey(uniqueName('tally'));
  t.teardown(() => redis.del(key).then(() => undefined));
  // A client that gives up at once: no server listens on port 1.
  const away = new Redis({ port: 1, lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => null });
  away.on('error', () => undefined);
  t.teardown(() => away.disconnect());
  let writer: Redis = away;
  const tally = new JobTally(key, { pipeline: () => writer.pipeline() });
  tally.observe('intents', finished('payment_intent.follow_up.v1', 2), 'failed');
  await t.throwsAsync(() => tally.flush());
  t.deepEqual(await redis.hgetall(key), {});

  writer = redis;
  tally.observe('intents', finished('payment_intent.follow_up.v1', 2), 'failed');
  await tally.flush();
  const hash = await redis.hgetall(key);
  t.is(hash[JSON.stringify(['failures', 'intents', 'payment_intent.follow_up.v1'])], '2');
  t.is(hash[JSON.stringify(['count', 'intents', 'payment_intent.follow_up.v1', 'failed'])], '2');
});

test('with Redis out of reach, a scrape leaves the job metrics out and still answers', async (t) => {
  const away = new Redis({ port: 1, lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => null });
  away.on('error', () => undefined);
  t.teardown(() => away.disconnect());
  const registry = new Registry();
  sharedJobMetrics(registry, away, jobTallyKey('nowhere'));
  const text = await registry.metrics();
  t.regex(text, /# TYPE bullmq_job_duration_seconds histogram/);
  t.notRegex(text, /bullmq_job_duration_seconds_count/);
});
