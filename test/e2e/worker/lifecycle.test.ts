/**
 * Worker availability: with no worker the api answers 503 processing_timeout and
 * the create is not lost; a worker stopped with SIGTERM finishes its active jobs.
 */
import test from 'ava';
import { Queue } from 'bullmq';
import { QUEUES } from '../../../common/jobs.js';
import { sleep, withService } from '../../helpers/service.js';

test('with no worker: 503 processing_timeout; once a worker runs, the object exists exactly once', async (t) => {
  // Admission control off: with no worker the queue only grows, and every create must reach the wait.
  const { service, key, project } = await withService(t, { project: 'no-worker', workers: 0, env: { WRITE_TIMEOUT_MS: '800', CREATE_ADMISSION_WAIT_MS: '0' } });

  const keyed = await service.request('POST', '/v1/payment_intents', {
    key, body: { amount: 7 }, headers: { 'Idempotency-Key': 'wait-for-me' },
  });
  t.is(keyed.status, 503, keyed.text);
  t.is(keyed.body.error.code, 'processing_timeout');
  t.is(keyed.body.error.type, 'api_error');
  t.is(keyed.headers.get('retry-after'), '1');
  const unkeyed = await service.request('POST', '/v1/payment_intents', { key, body: { amount: 8 } });
  t.is(unkeyed.status, 503);

  // The retry while no worker runs waits on the same job, and times out again.
  const again = await service.request('POST', '/v1/payment_intents', {
    key, body: { amount: 7 }, headers: { 'Idempotency-Key': 'wait-for-me' },
  });
  t.is(again.status, 503, again.text);

  await service.startWorker();
  const db = await service.db();
  const deadline = Date.now() + 15_000;
  const queue = new Queue(QUEUES.writes, { connection: { url: service.env.REDIS_URL }, prefix: service.prefix });
  t.teardown(() => queue.close());
  // Both jobs done: the keyed result is recorded and cached.
  while ((await queue.getJobCountByTypes('waiting', 'active', 'delayed')) > 0 && Date.now() < deadline) await sleep(100);
  while ((await db.collection('payment_intents').countDocuments({ project })) < 2 && Date.now() < deadline) await sleep(100);

  const retried = await service.request('POST', '/v1/payment_intents', {
    key, body: { amount: 7 }, headers: { 'Idempotency-Key': 'wait-for-me' },
  });
  t.is(retried.status, 200, retried.text);
  t.is(retried.headers.get('idempotent-replayed'), 'true');
  t.is(await db.collection('payment_intents').countDocuments({ project, amount: 7 }), 1);
  t.is(await db.collection('payment_intents').countDocuments({ project, amount: 8 }), 1);
  t.is(await db.collection('payment_intents').countDocuments({ project }), 2);
});

test('SIGTERM to a worker with jobs in flight: it finishes them and exits 0; nothing is lost or duplicated', async (t) => {
  const { service, key, project } = await withService(t, {
    project: 'sigterm-worker', workers: 1, env: { WRITE_TIMEOUT_MS: '20000', WORKER_CONCURRENCY: '10' },
  });
  const queue = new Queue(QUEUES.writes, { connection: { url: service.env.REDIS_URL }, prefix: service.prefix });
  t.teardown(() => queue.close());

  const first = service.workers[0]!;
  const total = 150;
  // A request that gets no answer is kept as one, with its cause, for the assertion below.
  const responses = Promise.all(
    Array.from({ length: total }, (_, i) =>
      service
        .request('POST', '/v1/payment_intents', { key, body: { amount: i + 1 }, headers: { 'Idempotency-Key': `k-${i}` } })
        .catch((err: Error) => ({ status: 0, text: `${err.message}: ${String(err.cause)}`, body: {} as { id?: string } })),
    ),
  );
  // Stop the first worker as soon as it has active jobs; a second one takes the rest.
  const deadline = Date.now() + 30_000;
  let active = 0;
  while ((active = await queue.getActiveCount()) === 0 && Date.now() < deadline) await sleep(5);
  const stopped = first.stop('SIGTERM');
  t.true(active > 0, `jobs were active when SIGTERM was sent; the worker's last lines:\n${first.output.slice(-10).join('\n')}`);
  const replacement = service.startWorker();
  t.is(await stopped, 0);
  t.true(first.output.some((line) => line.includes('finishing active jobs')));
  await replacement;

  const results = await responses;
  t.deepEqual(results.filter((r) => r.status !== 200).map((r) => r.text), []);
  const ids = new Set(results.map((r) => r.body.id));
  t.is(ids.size, total);
  const db = await service.db();
  t.is(await db.collection('payment_intents').countDocuments({ project }), total);
  t.is(await queue.getFailedCount(), 0);
});
