/**
 * Api and worker processes survive a Redis or MongoDB restart by themselves:
 * 503 with Retry-After while a dependency is down, and back to work after, with no
 * process restarted. Nothing is lost or duplicated across the outage.
 */
import test from 'ava';
import { startFerretDBServer } from '../helpers/ferretdb-server.js';
import { startRedisServer } from '../helpers/redis-server.js';
import { until, withService } from '../helpers/service.js';

const PI = '/v1/payment_intents';

test('Redis down: 503 service_unavailable with Retry-After, not ready; back up: the same processes work again', async (t) => {
  const redis = await startRedisServer({ persistent: true });
  t.teardown(() => redis.dispose());
  const { service, key, project } = await withService(t, { project: 'redis-out', workers: 1, redisUrl: redis.url });
  t.is((await service.request('POST', PI, { key, body: { amount: 1 } })).status, 200);

  await redis.stop();
  const down = await service.request('POST', PI, { key, body: { amount: 2 }, headers: { 'Idempotency-Key': 'during-outage' } });
  t.is(down.status, 503, down.text);
  t.is(down.body.error.code, 'service_unavailable');
  t.is(down.body.error.type, 'api_error');
  t.truthy(down.headers.get('retry-after'));
  const ready = await service.request('GET', '/readyz');
  t.is(ready.status, 503);
  t.is(ready.body.checks.redis, 'unavailable');
  // Reads need MongoDB only.
  t.is((await service.request('GET', PI, { key })).status, 200);

  await redis.restart();
  const after = await until('a create after Redis is back', async () => {
    const res = await service.request('POST', PI, { key, body: { amount: 2 }, headers: { 'Idempotency-Key': 'during-outage' } });
    return res.status === 200 ? res : undefined;
  });
  t.is(after.body.amount, 2);
  t.true(service.api.running && service.workers.every((w) => w.running), 'no process died');
  const db = await service.db();
  t.is(await db.collection('payment_intents').countDocuments({ project }), 2);
});

test('MongoDB down: reads answer 503, a create waits and completes once MongoDB is back, exactly once', async (t) => {
  const mongo = await startFerretDBServer();
  t.teardown(() => mongo.dispose());
  const { service, key, project } = await withService(t, { project: 'mongo-out', workers: 1, env: { MONGODB_URL: mongo.url, WRITE_TIMEOUT_MS: '1500' } });
  t.is((await service.request('POST', PI, { key, body: { amount: 1 } })).status, 200);

  await mongo.stop();
  const list = await service.request('GET', PI, { key });
  t.is(list.status, 503, list.text);
  t.is(list.body.error.code, 'service_unavailable');
  t.truthy(list.headers.get('retry-after'));
  t.is((await service.request('GET', '/readyz')).body.checks.mongodb, 'unavailable');
  const create = await service.request('POST', PI, { key, body: { amount: 2 }, headers: { 'Idempotency-Key': 'mongo-outage' } });
  t.is(create.status, 503, create.text);

  await mongo.restart();
  const after = await until('the create to complete after MongoDB is back', async () => {
    const res = await service.request('POST', PI, { key, body: { amount: 2 }, headers: { 'Idempotency-Key': 'mongo-outage' } });
    return res.status === 200 ? res : undefined;
  }, 60_000);
  t.is(after.body.amount, 2);
  t.true(service.api.running && service.workers.every((w) => w.running), 'no process died');
  const db = await service.db();
  t.is(await db.collection('payment_intents').countDocuments({ project }), 2);
  t.is((await service.request('GET', '/readyz')).status, 200);
});
