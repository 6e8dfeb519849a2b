/**
 * Security review H2: resend and recover cannot fill the shared Redis or make the
 * service an amplifier. An event pending for an endpoint is queued once however
 * often it is recovered; one recovery per endpoint at a time; a recovery queues at
 * most its cap and says when it left some; an endpoint's pending redeliveries are
 * capped; redeliveries run on a shorter schedule than first deliveries.
 */
import test from 'ava';
import { Queue } from 'bullmq';
import { QUEUES } from '../../../common/jobs.js';
import { mapLimit } from '../../helpers/payment-intent-lifecycle.js';
import { Receiver } from '../../helpers/receiver.js';
import { until, withService, type Service } from '../../helpers/service.js';
import { createEndpoint, createPaymentIntent } from '../../helpers/webhook-fixtures.js';
import { manage } from '../../helpers/webhook-management.js';

/** First deliveries: 6 attempts, ten minutes apart, so every chain stays pending during a test. */
const ENV = { WEBHOOK_RETRY_SCHEDULE_MS: '600000,600000,600000,600000,600000', WEBHOOK_JITTER: '0' };

/** An enabled endpoint at a receiver that always fails, with `count` events it never received. */
async function endpointWithMissedEvents(t: import('ava').ExecutionContext, service: Service, key: string, receiver: Receiver, count: number) {
  const path = `/fail-${Math.random().toString(36).slice(2)}`;
  receiver.on(path, () => ({ status: 500, body: 'down' }));
  const endpoint = await createEndpoint(service, key, receiver.url(path));
  const off = await manage(service, key, 'POST', endpoint.id, '', { body: { disabled: true } });
  t.is(off.status, 200, off.text);
  await mapLimit(Array.from({ length: count }), 8, () => createPaymentIntent(service, key));
  const on = await manage(service, key, 'POST', endpoint.id, '', { body: { disabled: false } });
  t.is(on.status, 200, on.text);
  return { endpoint, path };
}

async function redeliveryJobs(queue: Queue, endpointId: string) {
  const jobs = await queue.getJobs(['waiting', 'active', 'delayed', 'prioritized']);
  return jobs.filter((j) => j?.data?.endpointId === endpointId && j.data.redelivery === true);
}

/**
 * The bytes of this service's keys (`MEMORY USAGE` of each key under its prefix), and
 * the whole server's `used_memory`, which other test files share.
 */
async function redisFootprint(service: Service): Promise<{ keys: number; bytes: number; usedMemory: number }> {
  const redis = service.redis();
  try {
    let cursor = '0';
    let keys = 0;
    let bytes = 0;
    do {
      const [next, batch] = await redis.scan(cursor, 'MATCH', `${service.prefix}:*`, 'COUNT', 1000);
      cursor = next;
      for (const key of batch) {
        keys++;
        bytes += Number(await redis.memory('USAGE', key)) || 0;
      }
    } while (cursor !== '0');
    const usedMemory = Number(/used_memory:(\d+)/.exec(await redis.info('memory'))?.[1]);
    return { keys, bytes, usedMemory };
  } finally {
    redis.disconnect();
  }
}

test('ten recovers of an endpoint with 100 undelivered events queue 100 chains, on the short schedule; one recovery at a time', async (t) => {
  t.timeout(180_000);
  const receiver = await Receiver.start();
  t.teardown(() => receiver.close());
  const { service, key } = await withService(t, { env: ENV });
  const queue = new Queue(QUEUES.webhooks, { connection: { url: service.env.REDIS_URL }, prefix: service.prefix });
  t.teardown(() => queue.close());
  const { endpoint, path } = await endpointWithMissedEvents(t, service, key, receiver, 100);
  t.is(receiver.received(path).length, 0, 'the endpoint received none of them');

  const before = await redisFootprint(service);
  const since = Math.floor(Date.now() / 1000) - 3600;
  const recover = () => manage(service, key, 'POST', endpoint.id, 'recover', { body: { since } });
  const answers = [...(await Promise.all(Array.from({ length: 5 }, recover)))];
  for (let i = 0; i < 5; i++) answers.push(await recover());
  for (const a of answers) {
    t.true(a.status === 200 || a.status === 409, a.text);
    if (a.status === 409) t.is(a.body.error.code, 'webhook_recovery_in_progress');
  }
  const queued = answers.filter((a) => a.status === 200).reduce((sum, a) => sum + (a.body.queued as number), 0);
  t.log(`ten recover calls: ${JSON.stringify(answers.map((a) => (a.status === 200 ? a.body.queued : a.status)))}`);
  t.is(queued, 100, 'each missed event queued once in all');

  // Every chain's first attempt is made (and fails): then the chains wait, delayed.
  await receiver.waitFor(path, 100, 60_000);
  const jobs = await until('the chains to wait for their retries', async () => {
    const found = await redeliveryJobs(queue, endpoint.id);
    return found.length === 100 && found.every((j) => j.attemptsMade >= 1) ? found : undefined;
  });
  t.is(receiver.received(path).length, 100, 'the receiver got each event once, not once per recover');
  t.is(new Set(jobs.map((j) => j.data.eventId)).size, 100, 'one chain per event');
  t.true(jobs.every((j) => j.opts.attempts === 4), 'a redelivery has 4 attempts, a first delivery 6');
  const after = await redisFootprint(service);
  t.log(
    `Redis, this service's keys: ${before.keys} keys / ${before.bytes} B -> ${after.keys} keys / ${after.bytes} B ` +
      `(+${after.bytes - before.bytes} B for ten recovers of 100 events); server used_memory ${before.usedMemory} -> ${after.usedMemory}`,
  );
  t.true(after.bytes - before.bytes < 1024 * 1024, 'bounded: about what 100 chains take, not 1,000');

  // While a recovery of the endpoint runs, another is refused at once.
  const redis = service.redis();
  t.teardown(() => redis.disconnect());
  await redis.set(`${service.prefix}:webhook-recovery:${endpoint.id}`, 'another-request', 'PX', 30_000);
  const busy = await recover();
  t.is(busy.status, 409, busy.text);
  t.is(busy.body.error.code, 'webhook_recovery_in_progress');
  t.truthy(busy.headers.get('retry-after'));

  // A resend of a pending event queues nothing more.
  const resent = await manage(service, key, 'POST', endpoint.id, 'resend', { body: { event: jobs[0]!.data.eventId } });
  t.is(resent.status, 200, resent.text);
  t.is((await redeliveryJobs(queue, endpoint.id)).length, 100);
});

test("a recovery queues at most its cap and says so; past the endpoint's cap of pending redeliveries, resend and recover are refused", async (t) => {
  t.timeout(180_000);
  const receiver = await Receiver.start();
  t.teardown(() => receiver.close());
  const { service, key } = await withService(t, { env: { ...ENV, WEBHOOK_RECOVER_MAX: '20', WEBHOOK_ENDPOINT_REDELIVERY_LIMIT: '30' } });
  const queue = new Queue(QUEUES.webhooks, { connection: { url: service.env.REDIS_URL }, prefix: service.prefix });
  t.teardown(() => queue.close());
  const { endpoint } = await endpointWithMissedEvents(t, service, key, receiver, 40);
  const since = Math.floor(Date.now() / 1000) - 3600;
  const recover = () => manage(service, key, 'POST', endpoint.id, 'recover', { body: { since } });

  const first = await recover();
  t.deepEqual(first.body, { object: 'recovery', queued: 20, has_more: true }, 'the cap, and more left');
  const second = await recover();
  t.deepEqual(second.body, { object: 'recovery', queued: 10, has_more: true }, "the next ones, up to the endpoint's room");
  const third = await recover();
  t.is(third.status, 400, third.text);
  t.is(third.body.error.code, 'webhook_redelivery_limit');
  t.is((await redeliveryJobs(queue, endpoint.id)).length, 30, 'no more than the cap queued');

  const events = await service.request('GET', '/v1/events?limit=100', { key });
  const pendingIds = new Set((await redeliveryJobs(queue, endpoint.id)).map((j) => j.data.eventId as string));
  const notPending = (events.body.data as Array<{ id: string }>).find((e) => !pendingIds.has(e.id));
  t.truthy(notPending);
  const resent = await manage(service, key, 'POST', endpoint.id, 'resend', { body: { event: notPending!.id } });
  t.is(resent.status, 400, resent.text);
  t.is(resent.body.error.code, 'webhook_redelivery_limit');
  t.is((await redeliveryJobs(queue, endpoint.id)).length, 30);
});
