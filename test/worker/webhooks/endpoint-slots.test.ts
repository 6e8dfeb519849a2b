/**
 * Endpoint slots against a real Redis: a slot is a lease, kept while its holder
 * renews it, and free again within one lease once the holder can no longer renew
 * (a worker killed mid-POST).
 */
import test from 'ava';
import { Redis } from 'ioredis';
import { slotWaitMs } from '../../../worker/webhooks/deliver.js';
import { endpointSlots } from '../../../worker/webhooks/endpoint-slots.js';
import { stackUrls, uniqueName } from '../../helpers/service.js';

const LEASE_MS = 300;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
// Waiting past a lease or a forget time is what these tests are about.
/** Three leases: a slot still held then was renewed. */
const RENEWED_PAST_MS = LEASE_MS * 3;
/** Two leases: a slot not renewed has expired by then. */
const PAST_A_LEASE_MS = LEASE_MS * 2;
/** Past the waiters' forgetMs (400 ms in that test). */
const PAST_FORGET_MS = 600;

function connect(): Redis {
  return new Redis(stackUrls().redisUrl, { maxRetriesPerRequest: 1 });
}

test('a held slot outlives its lease while renewed; a holder that stops renewing loses it within a lease', async (t) => {
  const prefix = uniqueName('slots');
  const holderRedis = connect();
  const otherRedis = connect();
  t.teardown(() => {
    holderRedis.disconnect();
    otherRedis.disconnect();
  });
  await Promise.all([holderRedis.ping(), otherRedis.ping()]);
  const holder = endpointSlots(holderRedis, { prefix, limit: 1, leaseMs: LEASE_MS });
  const other = endpointSlots(otherRedis, { prefix, limit: 1, leaseMs: LEASE_MS });

  const slot = await holder.acquire('we_1');
  t.truthy(slot);
  await sleep(RENEWED_PAST_MS);
  t.is(await other.acquire('we_1'), null, 'renewed: still held after three leases');
  t.truthy(await other.acquire('we_2'), 'another endpoint has slots of its own');

  // The holder dies: its connection goes, and no renewal reaches Redis any more.
  holderRedis.disconnect();
  await sleep(PAST_A_LEASE_MS);
  const taken = await other.acquire('we_1');
  t.truthy(taken, 'free again once the lease ran out');
  await taken?.release();
  t.truthy(await other.acquire('we_1'), 'a release frees the slot at once');
});

test('release frees the slot and stops the renewal', async (t) => {
  const prefix = uniqueName('slots');
  const redis = connect();
  t.teardown(() => redis.disconnect());
  const slots = endpointSlots(redis, { prefix, limit: 2, leaseMs: LEASE_MS });
  const a = await slots.acquire('we_1');
  const b = await slots.acquire('we_1');
  t.truthy(a);
  t.truthy(b);
  t.is(await slots.acquire('we_1'), null, 'the limit holds');
  await a?.release();
  const c = await slots.acquire('we_1');
  t.truthy(c);
  await sleep(PAST_A_LEASE_MS);
  t.is(await redis.zcard(`${prefix}:webhook-slots:{we_1}`), 2, 'the two slots still held are renewed, the released one is gone');
});

test('a delivery that finds no slot is counted as waiting until it takes one; one never seen again is forgotten', async (t) => {
  const prefix = uniqueName('slots');
  const redis = connect();
  t.teardown(() => redis.disconnect());
  const slots = endpointSlots(redis, { prefix, limit: 1, leaseMs: 5000, forgetMs: 400 });
  t.is(await slots.waiting('we_1', 'job-a'), 0, 'a free slot: nobody waits, nothing counted');
  const held = await slots.acquire('we_1', 'job-a');
  t.truthy(held);
  t.is(await slots.waiting('we_1', 'job-b'), 1);
  t.is(await slots.waiting('we_1', 'job-c'), 2);
  t.is(await slots.waiting('we_1', 'job-b'), 2, 'a delivery that comes back is counted once');
  t.is(await slots.park('we_1', 'job-d'), 3, 'one that lost the race for the slot is counted too');
  t.is(await slots.waiting('we_2', 'job-e'), 0, 'another endpoint has its own slots and waiters');

  await held?.release();
  const next = await slots.acquire('we_1', 'job-b');
  t.truthy(next);
  t.deepEqual((await redis.zrange(`${prefix}:webhook-waiters:{we_1}`, '0', '-1')).sort(), ['job-c', 'job-d'], 'the one with a slot waits no more');

  await sleep(PAST_FORGET_MS);
  t.is(await slots.waiting('we_1', 'job-f'), 1, 'waiters not seen again within forgetMs are forgotten');
  await next?.release();
});

test('the wait of a delivery without a slot: 1 to 2 s, longer in proportion to the waiters, at most 30 to 60 s', (t) => {
  const low = () => 0;
  const high = () => 0.999999;
  t.is(slotWaitMs(1, low), 1000);
  t.is(slotWaitMs(1, high), 2000);
  t.is(slotWaitMs(50, low), 1000, 'a few dozen waiters come back within the first seconds');
  t.is(slotWaitMs(750, low), 10_000, 'a backlog comes back about 75 a second');
  t.is(slotWaitMs(750, high), 20_000);
  t.is(slotWaitMs(100_000, low), 30_000);
  t.is(slotWaitMs(100_000, high), 60_000);
});
