// The test stack itself: `npm test` provides a reachable Redis and a
// MongoDB-compatible server, and the private redis-server helper can stop,
// restart (same port, data kept when persistent) and flush.

import test from 'ava';
import { Redis } from 'ioredis';
import { MongoClient } from 'mongodb';

import { startRedisServer } from './helpers/redis-server.js';

function requiredEnv(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run the tests with \`npm test\``);
  return value;
}

test('REDIS_URL points to a reachable Redis', async (t) => {
  const redis = new Redis(requiredEnv('REDIS_URL'), { lazyConnect: true, maxRetriesPerRequest: 1 });
  t.teardown(() => redis.disconnect());
  await redis.connect();
  t.is(await redis.ping(), 'PONG');
  const key = `stack-test:${process.pid}:${Date.now()}`;
  await redis.set(key, 'value', 'EX', 60);
  t.is(await redis.get(key), 'value');
  await redis.del(key);
});

test('MONGODB_URL points to a reachable MongoDB-compatible server', async (t) => {
  const client = new MongoClient(requiredEnv('MONGODB_URL'), { serverSelectionTimeoutMS: 10_000 });
  t.teardown(() => client.close());
  await client.connect();
  const db = client.db(`stack_test_${process.pid}`);
  t.teardown(() => db.dropDatabase().then(() => undefined));
  const pong = await db.command({ ping: 1 });
  t.is(pong.ok, 1);
  const collection = db.collection<{ _id: string; n: number; tags: string[] }>('docs');
  await collection.insertOne({ _id: 'a', n: 1, tags: ['x', 'y'] });
  t.deepEqual(await collection.findOne({ _id: 'a' }), { _id: 'a', n: 1, tags: ['x', 'y'] });
  await collection.updateOne({ _id: 'a' }, { $inc: { n: 1 } });
  t.is((await collection.findOne({ _id: 'a' }))?.n, 2);
});

test('redis-server helper: stop, restart on the same port, data kept when persistent', async (t) => {
  const server = await startRedisServer({ persistent: true });
  t.teardown(() => server.dispose());
  const { port, url } = server;
  t.regex(url, /^redis:\/\/127\.0\.0\.1:\d+$/);

  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => 100 });
  redis.on('error', () => {}); // connection errors while the server is down are expected
  t.teardown(() => redis.disconnect());
  await redis.connect();
  await redis.set('k', 'v');

  await server.stop();
  t.false(server.running);
  await t.throwsAsync(redis.get('k'));

  await server.restart();
  t.true(server.running);
  t.is(server.port, port);
  t.is(server.url, url);
  t.is(await redis.get('k'), 'v');

  await server.flushAll();
  t.is(await redis.get('k'), null);
});

test('redis-server helper: non-persistent restart starts empty', async (t) => {
  const server = await startRedisServer();
  t.teardown(() => server.dispose());
  const redis = new Redis(server.url, { lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => 100 });
  redis.on('error', () => {}); // expected during the restart
  t.teardown(() => redis.disconnect());
  await redis.connect();
  await redis.set('k', 'v');
  await server.restart();
  t.is(await redis.get('k'), null);
});
