/**
 * Admission control: while the writes queue holds a job that has waited longer
 * than the api's wait allows, a new create is refused at once (503
 * service_unavailable, Retry-After) and leaves nothing behind, except a keyed retry
 * of a create whose job is still queued; once the queue drains, creates are admitted
 * again.
 */
import test from 'ava';
import { Queue } from 'bullmq';
import { redisKey, scopeHash } from '../../common/idempotency.js';
import { QUEUES } from '../../common/jobs.js';
import { Service, uniqueName, until } from '../helpers/service.js';

const PI = '/v1/payment_intents';

test('a create the queue cannot serve in time is refused at once with 503 and Retry-After, and admitted once the backlog drains', async (t) => {
  // No worker: whatever is enqueued waits. The limit is half the wait: 1 s.
  const service = await Service.start({ workers: 0, env: { WRITE_TIMEOUT_MS: '2000' } });
  t.teardown(() => service.stop());
  const project = uniqueName('admission');
  const key = await service.issueKey(project);

  const stuck = await service.request('POST', PI, { key, body: { amount: 1 }, headers: { 'Idempotency-Key': 'stuck' } });
  t.is(stuck.status, 503, stuck.text);
  t.is(stuck.body.error.code, 'processing_timeout', 'the first create was accepted: it waits in the queue');

  const refused = await until('a create to be refused for the backlog', async () => {
    const res = await service.request('POST', PI, { key, body: { amount: 2 }, headers: { 'Idempotency-Key': 'later' } });
    if (res.status === 503 && res.body.error.code === 'service_unavailable') return res;
    if (res.status !== 503) throw new Error(`unexpected ${res.status}: ${res.text}`);
    return undefined;
  });
  t.is(refused.body.error.type, 'api_error');
  t.true(Number(refused.headers.get('retry-after')) >= 1);

  // A retry of the create that timed out adds nothing to the backlog: it is not refused,
  // it waits for its job, still queued, and times out again.
  const retried = await service.request('POST', PI, { key, body: { amount: 1 }, headers: { 'Idempotency-Key': 'stuck' } });
  t.is(retried.status, 503, retried.text);
  t.is(retried.body.error.code, 'processing_timeout', 'the retry attached to its queued job');

  // Refused: nothing enqueued, no key locked, so the same key is free for a retry.
  const third = await service.request('POST', PI, { key, body: { amount: 3 }, headers: { 'Idempotency-Key': 'third' } });
  t.is(third.status, 503, third.text);
  t.is(third.body.error.code, 'service_unavailable');
  const queue = new Queue(QUEUES.writes, { connection: { url: service.env.REDIS_URL }, prefix: service.prefix });
  t.teardown(() => queue.close());
  const waiting = await queue.getWaiting();
  t.false(waiting.some((job) => job.data.input.amount === 3), 'the refused create enqueued nothing');
  const redis = service.redis();
  t.teardown(() => redis.disconnect());
  t.is(await redis.exists(redisKey(service.prefix, scopeHash({ project, livemode: false }, 'third'))), 0, 'and locked no key');

  await service.startWorker();
  const later = await until('the refused create to be admitted', async () => {
    const res = await service.request('POST', PI, { key, body: { amount: 2 }, headers: { 'Idempotency-Key': 'later' } });
    return res.status === 200 ? res : undefined;
  });
  t.is(later.body.amount, 2);
  const first = await until('the first create to answer', async () => {
    const res = await service.request('POST', PI, { key, body: { amount: 1 }, headers: { 'Idempotency-Key': 'stuck' } });
    return res.status === 200 ? res : undefined;
  });
  t.is(first.body.amount, 1);
  const db = await service.db();
  t.is(await db.collection('payment_intents').countDocuments({ project }), 2, 'one object per key');
});

test("one scope's backlog does not refuse another scope's creates", async (t) => {
  // No worker: the flooding scope's creates wait, past the 1 s limit.
  const service = await Service.start({ workers: 0, env: { WRITE_TIMEOUT_MS: '2000' } });
  t.teardown(() => service.stop());
  const flooder = await service.issueKey(uniqueName('flooder'));
  const other = await service.issueKey(uniqueName('other'));
  await Promise.all(Array.from({ length: 4 }, (_, i) => service.request('POST', PI, { key: flooder, body: { amount: 1 + i } })));
  await until("the flooder's creates to be refused for its backlog", async () => {
    const res = await service.request('POST', PI, { key: flooder, body: { amount: 9 } });
    return res.status === 503 && res.body.error.code === 'service_unavailable' ? res : undefined;
  });
  // The other scope is admitted: its create is accepted and waits (no worker), not refused at once.
  const admitted = await service.request('POST', PI, { key: other, body: { amount: 5 }, headers: { 'Idempotency-Key': 'other-1' } });
  t.is(admitted.status, 503, admitted.text);
  t.is(admitted.body.error.code, 'processing_timeout', 'accepted and waited for, not refused for the other scope');
  await service.startWorker();
  const answered = await until('the other scope to be answered', async () => {
    const res = await service.request('POST', PI, { key: other, body: { amount: 5 }, headers: { 'Idempotency-Key': 'other-1' } });
    return res.status === 200 ? res : undefined;
  });
  t.is(answered.body.amount, 5);
});
