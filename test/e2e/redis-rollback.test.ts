/**
 * After Redis goes back in time (a failover to a replica that lagged, a restart from
 * an old snapshot), a key's cached result may be gone while Redis still trusts its
 * misses. The retry then reaches the worker, which finds the key's object in MongoDB:
 * it is still answered as a replay, flagged, byte for byte, with no second object.
 * A request whose job Redis lost while it waited has its job enqueued again by its
 * api once Redis is back, instead of waiting out its timeout.
 */
import test from 'ava';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { redisKey, scopeHash } from '../../common/idempotency.js';
import { QUEUES } from '../../common/jobs.js';
import { startRedisServer } from '../helpers/redis-server.js';
import { Service, uniqueName, until, withService } from '../helpers/service.js';

const PI = '/v1/payment_intents';

test('a replay answered from MongoDB after Redis lost the key is flagged Idempotent-Replayed, byte for byte', async (t) => {
  const service = await Service.start({ workers: 1 });
  t.teardown(() => service.stop());
  const project = uniqueName('rollback');
  const key = await service.issueKey(project);
  const headers = { 'Idempotency-Key': 'order-1' };
  const first = await service.request('POST', PI, { key, body: { amount: 41 }, headers });
  t.is(first.status, 200, first.text);
  t.is(first.headers.get('idempotent-replayed'), null);

  // What a rollback leaves: the key's result is gone, the epoch (misses are the truth) is not.
  const redis = service.redis();
  t.teardown(() => redis.disconnect());
  const entry = redisKey(service.prefix, scopeHash({ project, livemode: false }, 'order-1'));
  t.is(await redis.del(entry), 1);
  t.truthy(await redis.get(`${service.prefix}:idem:epoch`));

  // A fresh api process: nothing in its memory either.
  const { baseUrl } = await service.startExtraApi();
  const again = await service.request('POST', PI, { key, baseUrl, body: { amount: 41 }, headers });
  t.is(again.status, 200, again.text);
  t.is(again.headers.get('idempotent-replayed'), 'true');
  t.is(again.text, first.text);
  const db = await service.db();
  t.is(await db.collection('payment_intents').countDocuments({ project }), 1);
});

test("a request that waits on another request's job of its key gets that job's answer flagged", async (t) => {
  // No worker yet: the first request's job waits in the queue.
  const service = await Service.start({ workers: 0, env: { WRITE_TIMEOUT_MS: '12000', CREATE_ADMISSION_WAIT_MS: '0' } });
  t.teardown(() => service.stop());
  const project = uniqueName('rollback-queued');
  const key = await service.issueKey(project);
  const headers = { 'Idempotency-Key': 'order-2' };
  const first = await service.request('POST', PI, { key, body: { amount: 42 }, headers });
  t.is(first.status, 503, first.text);
  t.is(first.body.error.code, 'processing_timeout', 'accepted: its job waits');

  // The timeout freed the key (as a rollback of Redis may): the retry takes it and
  // waits on the same job id, the first request's job, which runs now. It goes to an
  // api that waits longer: a worker starting on a loaded machine may take seconds.
  const { baseUrl } = await service.startExtraApi({ WRITE_TIMEOUT_MS: '60000' });
  const retry = service.request('POST', PI, { key, baseUrl, body: { amount: 42 }, headers });
  // The worker starts once the retry holds the key (its in-flight lock in Redis), waiting on the job.
  const redis = service.redis();
  t.teardown(() => redis.disconnect());
  const entry = redisKey(service.prefix, scopeHash({ project, livemode: false }, 'order-2'));
  await until('the retry to hold the key', async () => ((await redis.get(entry))?.includes('"s":"lock"') ? true : undefined));
  await service.startWorker();
  const again = await retry;
  t.is(again.status, 200, again.text);
  t.is(again.headers.get('idempotent-replayed'), 'true', 'the object was made by the first request');
  const db = await service.db();
  t.is(await db.collection('payment_intents').countDocuments({ project }), 1);
});

test('a request whose job Redis lost while it waited is enqueued again once Redis is back, and answered 200, not after its timeout', async (t) => {
  // Not persistent: the restart comes back empty, as a failover to a replica that had nothing yet.
  const redis = await startRedisServer();
  t.teardown(() => redis.dispose());
  const { service, key, project } = await withService(t, {
    project: 'lost-job',
    workers: 0,
    redisUrl: redis.url,
    env: { WRITE_TIMEOUT_MS: '30000', CREATE_ADMISSION_WAIT_MS: '0' },
  });
  const headers = { 'Idempotency-Key': 'lost-with-redis' };
  const pending = service.request('POST', PI, { key, body: { amount: 43 }, headers });
  const queue = new Queue(QUEUES.writes, { connection: { url: redis.url, maxRetriesPerRequest: null }, prefix: service.prefix });
  t.teardown(() => queue.close());
  await until('the job to wait in the queue', async () => ((await queue.getWaitingCount()) === 1 ? true : undefined));

  const client = new Redis(redis.url, { maxRetriesPerRequest: null });
  t.teardown(() => client.disconnect());
  await client.set(`${service.prefix}:marker`, 'before');
  await redis.restart();
  t.is(await client.get(`${service.prefix}:marker`), null, 'Redis came back without its data');
  await service.startWorker();
  // Without the api enqueueing it again, nothing would run it: a 503 processing_timeout after 30 s.
  const res = await pending;
  t.is(res.status, 200, res.text);
  t.is(res.headers.get('idempotent-replayed'), null, 'its own answer');
  const again = await service.request('POST', PI, { key, body: { amount: 43 }, headers });
  t.is(again.status, 200);
  t.is(again.text, res.text);
  const db = await service.db();
  t.is(await db.collection('payment_intents').countDocuments({ project }), 1);
});
