/**
 * The service on a Redis Cluster (DESIGN section 19), on a loopback cluster of 3
 * masters and 3 replicas this file starts: every multi-key script, transaction and
 * pipeline of the service keeps to one slot (asked of the cluster itself, and run
 * there: a CROSSSLOT would fail it), and the real api and worker processes, with
 * `QUEUE_SHARDS=3`, create with idempotency keys, replay, confirm, refund and deliver
 * webhooks, their jobs spread over shards on more than one master, with no
 * CROSSSLOT in any log.
 */
import test from 'ava';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startRedisCluster, type RunningCluster } from '#scripts/lib/redis-cluster.mjs';
import { parseClusterNodes } from '../../common/config.js';
import { intentTokenKey, intentTokenReplacement } from '../../common/intent-tokens.js';
import { recordOperatorCall, redisOperatorHealth } from '../../common/operator-status.js';
import { queueNames, shardOf, PLAIN_LAYOUT } from '../../common/queue-shards.js';
import { createRedis, waitReady } from '../../common/redis.js';
import type { Redis } from 'ioredis';
import { INTENT_LOCK, intentLockKey, RecordLock } from '../../worker/record-lock.js';
import { endpointSlots } from '../../worker/webhooks/endpoint-slots.js';
import { firstAttemptKey, firstAttemptMarks } from '../../worker/webhooks/first-attempt.js';
import { PendingEvents } from '../../worker/webhooks/pending-events.js';
import { createLogger } from '../../common/logger.js';
import type { Collections } from '../../common/mongo.js';
import { Service, uniqueName } from '../helpers/service.js';
import { confirm, createIntent, phone, PI, waitForStatus } from '../helpers/payment-intent-lifecycle.js';
import { refund, waitForRefund } from '../helpers/refunds.js';
import { Receiver } from '../helpers/receiver.js';

let cluster: RunningCluster;
let dir: string;
let redis: Redis;

test.before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'redis-cluster-test-'));
  cluster = await startRedisCluster({ dir });
  redis = createRedis({ cluster: parseClusterNodes(cluster.nodesEnv) }, 'failFast', 'test-cluster');
  await waitReady(redis, 30_000);
});

test.after.always(async () => {
  redis?.disconnect();
  await cluster?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

const slotOf = async (key: string) => Number(await redis.cluster('KEYSLOT', key));

test('the keys a script, a transaction or a pipeline takes together hash to one slot, and the queue shards to several masters', async (t) => {
  const prefix = 'q';
  const families: Array<[string, string[]]> = [
    ['an intent lock and its token', [intentLockKey(prefix, 'pi_1'), intentTokenKey(prefix, 'pi_1')]],
    ['an event\'s first attempts', [firstAttemptKey(prefix, 'evt_1', 'we_1'), firstAttemptKey(prefix, 'evt_1', 'we_2')]],
  ];
  for (const [what, keys] of families) {
    const slots = new Set(await Promise.all(keys.map(slotOf)));
    t.is(slots.size, 1, what);
  }
  // The shards of a queue are in slots of their own, served by more than one master.
  const names = queueNames('writes', { shards: 3, tagged: true });
  t.deepEqual(names, ['{writes-0}', '{writes-1}', '{writes-2}']);
  t.deepEqual(queueNames('writes', PLAIN_LAYOUT), ['writes'], 'one Redis keeps the plain name');
  t.deepEqual(queueNames('maintenance', { shards: 3, tagged: true }), ['{maintenance}'], 'housekeeping is one queue');
  const owners = new Set<string>();
  const slotsMap = await redis.cluster('SLOTS');
  for (const name of names) {
    const slot = await slotOf(`${prefix}:${name}:wait`);
    t.is(await slotOf(`${prefix}:${name}:meta`), slot, `every key of ${name} in one slot`);
    const range = slotsMap.find(([from, to]) => slot >= from && slot <= to);
    owners.add(String(range?.[2]?.[1]));
  }
  t.true(owners.size >= 2, `the shards are served by ${owners.size} masters`);
});

test('the record lock, endpoint slots, outbox sets, first-attempt marks and operator health run on the cluster', async (t) => {
  const prefix = uniqueName('ops');
  // The intent lock: taken while reading the token, renewed and released while replacing it.
  const lock = new RecordLock(redis, intentLockKey(prefix, 'pi_a'), INTENT_LOCK);
  await redis.set(intentTokenKey(prefix, 'pi_a'), 'token-1');
  t.is(await lock.acquire(intentTokenKey(prefix, 'pi_a')), 'token-1', 'the token read as the lock was taken');
  t.true(await lock.renew(intentTokenReplacement(prefix, 'pi_a'), 1000));
  await lock.release(intentTokenReplacement(prefix, 'pi_a'));
  t.not(await redis.get(intentTokenKey(prefix, 'pi_a')), 'token-1', 'the token was replaced by the release');
  t.is(await redis.get(intentLockKey(prefix, 'pi_a')), null, 'the lock is free');

  const slots = endpointSlots(redis, { prefix, limit: 1, leaseMs: 3000 });
  const slot = await slots.acquire('we_a', 'job-1');
  t.truthy(slot);
  t.is(await slots.acquire('we_a', 'job-2'), null, 'one slot only');
  t.is(await slots.waiting('we_a', 'job-2'), 1);
  await slot!.release();
  t.is(await slots.acquireFirst('we_a'), null, 'a first attempt does not pass the waiting job');
  const next = await slots.acquire('we_a', 'job-2');
  t.truthy(next, 'the waiting job takes the freed slot');
  await next!.release();

  const pending = new PendingEvents({ redis, prefix, collections: {} as Collections, logger: createLogger('silent', 'test') });
  await pending.expect('evt_a', ['we_1', 'we_2']);
  const sorted = (set: Set<string> | undefined) => [...(set ?? [])].sort();
  const before = await pending.dispatched('evt_a');
  t.deepEqual([sorted(before?.targets), sorted(before?.left)], [['we_1', 'we_2'], ['we_1', 'we_2']]);
  await pending.finished('evt_a', 'we_1');
  t.deepEqual(sorted((await pending.dispatched('evt_a'))?.left), ['we_2']);
  await pending.close();

  await redis.set(firstAttemptKey(prefix, 'evt_a', 'we_2'), 'done');
  t.deepEqual(await firstAttemptMarks(redis, prefix, 'evt_a', ['we_1', 'we_2']), [null, 'done']);

  const now = Date.now();
  for (let i = 0; i < 3; i++) await recordOperatorCall(redis, prefix, 'mtn_momo', false, now - i * 60_000);
  t.true(await redisOperatorHealth(redis, prefix, () => now).mostlyFailing('mtn_momo'), 'five minutes read in one pipeline');
});

/** Three projects whose writes go to the three shards. */
function projectsOnEveryShard(): string[] {
  const found = new Map<number, string>();
  while (found.size < 3) {
    const project = uniqueName('p');
    found.set(shardOf(project, 3), project);
  }
  return [...found.values()];
}

test('the api and the worker on the cluster with three queue shards: keyed creates and replays, payments, refunds and webhooks, no CROSSSLOT', async (t) => {
  const service = await Service.start({
    env: { REDIS_CLUSTER_NODES: cluster.nodesEnv, QUEUE_SHARDS: '3', RATE_LIMIT_PER_SECOND: '1000', SIMULATOR_APPROVAL_DELAY_MS: '200', SIMULATOR_PROCESSING_DELAY_MS: '200' },
  });
  const receiver = await Receiver.start();
  t.teardown(async () => {
    await service.stop();
    await receiver.close();
  });
  const projects = projectsOnEveryShard();
  for (const [n, project] of projects.entries()) {
    const key = await service.issueKey(project);
    const endpoint = await service.request('POST', '/v1/webhook_endpoints', { key, body: { url: receiver.url(`/hook-${n}`), enabled_events: ['payment_intent.succeeded'] } });
    t.is(endpoint.status, 200, endpoint.text);

    // Idempotency: the first request and its replay, the same bytes.
    const first = await service.request('POST', PI, { key, body: { amount: 5000, currency: 'xof' }, headers: { 'Idempotency-Key': `k-${n}` } });
    t.is(first.status, 200, first.text);
    const again = await service.request('POST', PI, { key, body: { amount: 5000, currency: 'xof' }, headers: { 'Idempotency-Key': `k-${n}` } });
    t.is(again.text, first.text);
    t.is(again.headers.get('idempotent-replayed'), 'true');

    // A payment through the simulator, then a partial refund.
    const paid = await confirm(service, key, first.body.id, { operator: 'mtn_momo', phone_number: phone('225', '000', n) });
    t.is(paid.status, 200, paid.text);
    await waitForStatus(service, key, first.body.id, 'succeeded');
    const made = await refund(service, key, { payment_intent: first.body.id, amount: 1000 });
    t.is(made.status, 200, made.text);
    t.is((await waitForRefund(service, key, made.body.id, 'succeeded')).amount, 1000);
    await receiver.waitFor(`/hook-${n}`, 1, 30_000);
    const other = await createIntent(service, key);
    t.regex(other.id, /^pi_/);
  }
  // Each shard of the writes queue took jobs, and no process met a CROSSSLOT.
  const probe = service.redis();
  t.teardown(() => probe.disconnect());
  for (const name of queueNames('writes', { shards: 3, tagged: true })) {
    t.true((await probe.xlen(`${service.prefix}:${name}:events`)) > 0, `${name} took jobs`);
  }
  t.deepEqual(service.logs().filter((line) => /CROSSSLOT|same slot/i.test(line)), []);
});
