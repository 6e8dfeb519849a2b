/**
 * The service's one Redis lock (common/redis-lock.ts) against the test stack's Redis,
 * in the shapes its users take: a record lock that waits (worker/record-lock.ts), an
 * idempotency key's in-flight entry taken in one try (api/idempotency/store.ts), and
 * an endpoint's recovery lock (api/webhook-recoveries.ts). And that no other product
 * file keeps a lock script of its own.
 */
import test from 'ava';
import { Redis } from 'ioredis';
import { LockTimeout, TokenLock, withTokenLock } from '../../common/redis-lock.js';
import { WebhookRecoveryLocks } from '../../api/webhook-recoveries.js';
import { readSource, sourceFiles } from '../helpers/sources.js';
import { stackUrls, uniqueName, until } from '../helpers/service.js';

let redis: Redis;

test.before(() => {
  redis = new Redis(stackUrls().redisUrl);
});

test.after.always(() => {
  redis.disconnect();
});

test('one try with a value of its own: a second holder is refused, and a release frees only its own entry', async (t) => {
  const key = uniqueName('in-flight');
  const entry = (token: string) => JSON.stringify({ s: 'lock', t: token });
  const first = new TokenLock(redis, key, { ttlMs: 5_000, waitMs: 0, heartbeat: false, value: entry });
  t.true((await first.tryAcquire()).taken);
  t.like(JSON.parse((await redis.get(key)) as string), { s: 'lock' });
  const second = new TokenLock(redis, key, { ttlMs: 5_000, waitMs: 0, heartbeat: false, value: entry });
  t.false((await second.tryAcquire()).taken);
  await t.throwsAsync(second.acquire(), { instanceOf: LockTimeout }, 'no wait: refused at once');
  // The worker's answer replaced the entry: a release leaves it.
  await redis.set(key, '{"s":"done"}', 'PX', 5_000);
  await first.release();
  t.is(await redis.get(key), '{"s":"done"}');
  await redis.del(key);
});

test('a waiting holder takes the lock once the first releases it, and reads a key in the same round trip', async (t) => {
  const key = uniqueName('wait');
  const token = `${key}:token`;
  await redis.set(token, 'T1', 'PX', 5_000);
  let release: () => void = () => undefined;
  const entered: string[] = [];
  const first = withTokenLock(redis, key, { ttlMs: 5_000, waitMs: 10_000 }, async () => {
    entered.push('first');
    await new Promise<void>((resolve) => (release = resolve));
  });
  await until('the first holds the lock', async () => ((await redis.exists(key)) === 1 && entered.length === 1 ? true : undefined));
  t.false((await new TokenLock(redis, key, { ttlMs: 5_000, waitMs: 0 }).tryAcquire()).taken, 'held: another is refused');
  const second = new TokenLock(redis, key, { ttlMs: 5_000, waitMs: 10_000 });
  let settled = false;
  const taken = second.acquire(token).finally(() => (settled = true));
  // The second is waiting while the first holds: its tries are refused until the release.
  t.false((await new TokenLock(redis, key, { ttlMs: 5_000, waitMs: 0 }).tryAcquire()).taken);
  t.false(settled, 'not taken while the first holds it');
  release();
  await first;
  t.is(await taken, 'T1');
  t.true(await second.renew());
  await second.release();
  t.is(await redis.exists(key), 0);
});

test("an endpoint's recovery lock is held by one request at a time, and freed by its holder", async (t) => {
  const locks = new WebhookRecoveryLocks(redis, { prefix: uniqueName('recover'), leaseMs: 5_000 });
  const held = await locks.take('we_1', 'req_a');
  t.truthy(held);
  t.is(await locks.take('we_1', 'req_b'), null);
  t.truthy(await locks.take('we_2', 'req_b'), 'another endpoint is free');
  await held?.release();
  t.truthy(await locks.take('we_1', 'req_b'));
});

test('the lock scripts live in common/redis-lock.ts alone: no other product file deletes a key after comparing its holder', (t) => {
  const scripts = sourceFiles().filter((file) => /redis\.call\(\s*'del'/i.test(readSource(file)));
  t.deepEqual(scripts, ['common/redis-lock.ts']);
});
