/**
 * Group commit under a crash: a worker SIGKILLed while it holds a batch of creates
 * (real api and worker processes, Redis, FerretDB). Every job of the batch ends
 * with exactly one object, and each key's retry returns that object.
 */
import test from 'ava';
import { Queue } from 'bullmq';
import { QUEUES } from '../../common/jobs.js';
import { Service, uniqueName, until, type ApiResponse } from '../helpers/service.js';

const PI = '/v1/payment_intents';

async function retryUntilOk(service: Service, key: string, body: unknown, idempotencyKey: string): Promise<ApiResponse> {
  return until(`a 200 for ${idempotencyKey}`, async () => {
    const res = await service.request('POST', PI, { key, body, headers: { 'Idempotency-Key': idempotencyKey } });
    if (res.status === 200) return res;
    if (![409, 503].includes(res.status)) throw new Error(`unexpected ${res.status}: ${res.text}`);
    return undefined;
  }, 60_000);
}

test('a worker killed in the middle of a batch: every job of the batch ends with exactly one object', async (t) => {
  const batch = 40;
  // The batch waits 8 s for more documents, so the kill surely lands while it is held,
  // even on a loaded machine where the 40 requests take seconds to reach the worker.
  const service = await Service.start({
    workers: 1,
    env: { WORKER_CONCURRENCY: String(batch), CREATE_BATCH_MAX: '1000', CREATE_BATCH_WAIT_MS: '8000', WRITE_TIMEOUT_MS: '3000' },
  });
  t.teardown(() => service.stop());
  const project = uniqueName('batchkill');
  const key = await service.issueKey(project);
  const queue = new Queue(QUEUES.writes, { connection: { url: service.env.REDIS_URL }, prefix: service.prefix });
  t.teardown(() => queue.close());

  const bodies = Array.from({ length: batch }, (_, i) => ({ amount: 500 + i }));
  const first = Promise.all(bodies.map((body, i) => service.request('POST', PI, { key, body, headers: { 'Idempotency-Key': `bk-${i}` } })));
  await until('the whole batch active', async () => ((await queue.getJobCounts('active')).active === batch ? true : undefined));
  const db = await service.db();
  t.is(await db.collection('payment_intents').countDocuments({ project }), 0, 'the batch is still held, nothing stored yet');
  service.workers[0]!.kill('SIGKILL');
  await service.workers[0]!.exited;
  await service.startWorker({ CREATE_BATCH_WAIT_MS: '5' });
  const firstResults = await first;

  const final = await Promise.all(bodies.map((body, i) => retryUntilOk(service, key, body, `bk-${i}`)));
  const ids = final.map((r) => r.body.id as string);
  t.is(new Set(ids).size, batch, 'one object per key');
  final.forEach((r, i) => t.is(r.body.amount, bodies[i]!.amount));
  firstResults.forEach((r, i) => {
    if (r.status === 200) t.is(r.body.id, ids[i], 'a first answer that got through names the same object');
  });
  t.is(await db.collection('payment_intents').countDocuments({ project }), batch, 'no duplicate, none lost');
});

test('creates through a batching worker: each key is one object, replays are byte for byte', async (t) => {
  const service = await Service.start({ workers: 1, env: { CREATE_BATCH_MAX: '16', CREATE_BATCH_WAIT_MS: '20' } });
  t.teardown(() => service.stop());
  const project = uniqueName('batched');
  const key = await service.issueKey(project);
  const total = 60;
  const bodies = Array.from({ length: total }, (_, i) => ({ amount: 100 + i, metadata: { i: String(i) } }));
  const send = (i: number) => service.request('POST', PI, { key, body: bodies[i], headers: { 'Idempotency-Key': `b-${i}` } });
  const firsts = await Promise.all(bodies.map((_, i) => send(i)));
  for (const res of firsts) t.is(res.status, 200, res.text);
  const replays = await Promise.all(bodies.map((_, i) => send(i)));
  replays.forEach((res, i) => {
    t.is(res.text, firsts[i]!.text);
    t.is(res.headers.get('idempotent-replayed'), 'true');
  });
  const unkeyed = await Promise.all(bodies.map((body) => service.request('POST', PI, { key, body })));
  for (const res of unkeyed) t.is(res.status, 200, res.text);
  const db = await service.db();
  t.is(await db.collection('payment_intents').countDocuments({ project }), 2 * total);
});
