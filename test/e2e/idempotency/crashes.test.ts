/**
 * The guarantees of idempotency keys under crashes and outages: a killed api, a
 * killed worker, a Redis that loses its data, and keys that expire.
 */
import test from 'ava';
import { Queue } from 'bullmq';
import { idempotentJobId, scopeHash } from '../../../common/idempotency.js';
import { QUEUES } from '../../../common/jobs.js';
import { listAllEvents } from '../../helpers/payment-intent-lifecycle.js';
import { startRedisServer } from '../../helpers/redis-server.js';
import { sleep, until, withService, type ApiResponse, type Service } from '../../helpers/service.js';

const PI = '/v1/payment_intents';

/** Retries with the same key until a 200, as a client following the README would. */
async function retryUntilOk(service: Service, key: string, body: unknown, idempotencyKey: string): Promise<ApiResponse> {
  return until(`a 200 for ${idempotencyKey}`, async () => {
    const res = await service.request('POST', PI, { key, body, headers: { 'Idempotency-Key': idempotencyKey } });
    if (res.status === 200) return res;
    if (![409, 503].includes(res.status)) throw new Error(`unexpected ${res.status}: ${res.text}`);
    return undefined;
  });
}

test('the api is SIGKILLed right after enqueueing: a retry on a new api process returns the one object', async (t) => {
  const { service, key, project } = await withService(t, { project: 'apikill', workers: 0 });
  const queue = new Queue(QUEUES.writes, { connection: { url: service.env.REDIS_URL }, prefix: service.prefix });
  t.teardown(() => queue.close());

  const pending = service.request('POST', PI, { key, body: { amount: 77 }, headers: { 'Idempotency-Key': 'crash-api' } }).catch((err: Error) => err);
  await until('the job to be enqueued', async () => ((await queue.getWaitingCount()) > 0 ? true : undefined));
  service.api.kill('SIGKILL');
  t.true((await pending) instanceof Error, 'the client lost its connection');
  await service.api.exited;

  await Promise.all([service.startApi(), service.startWorker()]);
  const retried = await retryUntilOk(service, key, { amount: 77 }, 'crash-api');
  t.is(retried.body.amount, 77);
  const db = await service.db();
  t.is(await db.collection('payment_intents').countDocuments({ project }), 1);
  const again = await service.request('POST', PI, { key, body: { amount: 77 }, headers: { 'Idempotency-Key': 'crash-api' } });
  t.is(again.text, retried.text);
  t.is(again.headers.get('idempotent-replayed'), 'true');
});

test('a worker is SIGKILLed with jobs in flight: they are recovered as stalled, each key has exactly one object', async (t) => {
  const { service, key, project } = await withService(t, { project: 'workerkill', workers: 1, env: { WORKER_CONCURRENCY: '10', WRITE_TIMEOUT_MS: '3000' } });
  const queue = new Queue(QUEUES.writes, { connection: { url: service.env.REDIS_URL }, prefix: service.prefix });
  t.teardown(() => queue.close());

  const total = 200;
  const bodies = Array.from({ length: total }, (_, i) => ({ amount: 1000 + i }));
  const first = Promise.all(
    bodies.map((body, i) => service.request('POST', PI, { key, body, headers: { 'Idempotency-Key': `wk-${i}` } })),
  );
  // Kill while some jobs are active and others still wait, so some are surely mid-job.
  // The worker is frozen while its jobs are counted: a loaded machine could otherwise
  // let it finish them all between the count and the kill.
  const doomed = service.workers[0]!;
  await until('active and waiting jobs', async () => {
    doomed.kill('SIGSTOP');
    const counts = await queue.getJobCounts('active', 'waiting');
    if ((counts.active ?? 0) > 0 && (counts.waiting ?? 0) > 0) return true;
    doomed.kill('SIGCONT');
    return undefined;
  });
  doomed.kill('SIGKILL');
  await doomed.exited;
  // The hardest case for the replacement: the dead worker's locks have expired and
  // its jobs are already marked as possibly stalled (as BullMQ's own check marks every
  // active job), so the replacement's very first check, as it starts, recovers them.
  // A worker that attached its listeners after that check lost these reports.
  const r = service.redis();
  t.teardown(() => r.disconnect());
  const queueKey = `${service.prefix}:${QUEUES.writes}`;
  const orphans = await r.lrange(`${queueKey}:active`, 0, -1);
  t.true(orphans.length > 0, 'the killed worker left active jobs');
  await until('the killed worker\'s locks to expire', async () => ((await r.exists(...orphans.map((id) => `${queueKey}:${id}:lock`))) === 0 ? true : undefined));
  await r.sadd(`${queueKey}:stalled`, ...orphans);
  const replacement = await service.startWorker();
  const firstResults = await first;

  const final = await Promise.all(bodies.map((body, i) => retryUntilOk(service, key, body, `wk-${i}`)));
  const ids = final.map((r) => r.body.id as string);
  t.is(new Set(ids).size, total, 'one object per key');
  firstResults.forEach((r, i) => {
    if (r.status === 200) t.is(r.body.id, ids[i], 'the retry returns the object of the first answer');
  });
  const db = await service.db();
  t.is(await db.collection('payment_intents').countDocuments({ project }), total);
  const createdEvents = await listAllEvents(service, key, 'payment_intent.created');
  t.deepEqual(createdEvents.map((e) => e.data.object.id).sort(), [...ids].sort(), 'each object has its created event, once');
  const createJobIds = new Set(bodies.map((_, i) => idempotentJobId(scopeHash({ project, livemode: false }, `wk-${i}`))));
  const reported = () =>
    new Set(
      replacement.output
        .filter((line) => line.includes('job stalled') && line.includes(`"queue":"${QUEUES.writes}"`))
        .map((line) => (JSON.parse(line) as { job_id?: string }).job_id ?? ''),
    );
  await until('every orphaned create job to be reported stalled', () => (orphans.every((id) => reported().has(id)) ? true : undefined)).catch(() => undefined);
  t.deepEqual([...reported()].sort(), [...orphans].sort(), 'the replacement reports each job the killed worker held, and no other');
  t.true(orphans.every((id) => createJobIds.has(id)), 'the orphans are this test\'s create jobs');
});

test('Redis loses its data (FLUSHALL, then a restart without persistence): a retry replays from MongoDB, no duplicate', async (t) => {
  const redis = await startRedisServer({ persistent: false });
  t.teardown(() => redis.dispose());
  const { service, key, project } = await withService(t, { project: 'flush', workers: 1, redisUrl: redis.url });
  const headers = { 'Idempotency-Key': 'survive-redis' };

  const first = await service.request('POST', PI, { key, body: { amount: 31 }, headers });
  t.is(first.status, 200);

  await redis.flushAll();
  const afterFlush = await service.request('POST', PI, { key, body: { amount: 31 }, headers });
  t.is(afterFlush.status, 200, afterFlush.text);
  t.is(afterFlush.text, first.text);
  t.is(afterFlush.headers.get('idempotent-replayed'), 'true');
  const reused = await service.request('POST', PI, { key, body: { amount: 32 }, headers });
  t.is(reused.body.error?.code, 'idempotency_key_reused');

  await redis.flushAll();
  await redis.restart();
  const afterRestart = await until('the api to reconnect', async () => {
    const res = await service.request('POST', PI, { key, body: { amount: 31 }, headers });
    return res.status === 200 ? res : undefined;
  });
  t.is(afterRestart.text, first.text);
  const db = await service.db();
  t.is(await db.collection('payment_intents').countDocuments({ project }), 1);

  // The processes reconnected by themselves: a new create goes through the queue again.
  const fresh = await until('a new create after the restart', async () => {
    const res = await service.request('POST', PI, { key, body: { amount: 33 }, headers: { 'Idempotency-Key': 'after-restart' } });
    return res.status === 200 ? res : undefined;
  });
  t.is(fresh.body.amount, 33);
  t.is(await db.collection('payment_intents').countDocuments({ project }), 2);
});

/** Past the key's time to live by this: the expiry is the point of the test. */
const PAST_TTL_MS = 300;

test('an expired key creates a new object, and the cleanup job removes expired records', async (t) => {
  // Long enough that the replay comes before the expiry on a loaded machine too:
  // the record's clock starts when the worker makes it, before the first answer.
  const ttlMs = 5000;
  const { service, key, project } = await withService(t, { project: 'expiry', workers: 1, env: { IDEMPOTENCY_TTL_MS: String(ttlMs), IDEMPOTENCY_SWEEP_MS: '300' } });
  const headers = { 'Idempotency-Key': 'short-lived' };
  const first = await service.request('POST', PI, { key, body: { amount: 5 }, headers });
  t.is(first.status, 200);
  const answeredAt = Date.now();
  const replay = await service.request('POST', PI, { key, body: { amount: 5 }, headers });
  t.is(replay.headers.get('idempotent-replayed'), 'true');

  await sleep(answeredAt + ttlMs + PAST_TTL_MS - Date.now());
  const second = await service.request('POST', PI, { key, body: { amount: 5 }, headers });
  t.is(second.status, 200, second.text);
  t.is(second.headers.get('idempotent-replayed'), null);
  t.not(second.body.id, first.body.id);

  const db = await service.db();
  t.is(await db.collection('payment_intents').countDocuments({ project }), 2);
  t.is(await db.collection('payment_intents').countDocuments({ project, idem: { $exists: true } }), 1, 'the expired key was freed, the new one holds it');
  await until('the sweeper to delete the expired record', async () =>
    (await db.collection('payment_intents').countDocuments({ project, idem: { $exists: true } })) === 0 ? true : undefined,
  );
  t.is(await db.collection('payment_intents').countDocuments({ project }), 2, 'the sweeper frees the key and keeps both objects');
});
