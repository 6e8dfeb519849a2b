/**
 * MongoDB is the record of pending webhook work: an event's outbox entry stays until
 * its deliveries are finished, so a delivery whose job Redis lost (a restart from an
 * old snapshot) is found by the sweeper and delivered after all. Likewise for a
 * payment's operator steps, swept again as soon as Redis is back.
 */
import test from 'ava';
import { Queue } from 'bullmq';
import type { OutboxDoc } from '../../common/documents.js';
import { deliveryJobId } from '../../common/events.js';
import { JOBS, QUEUES } from '../../common/jobs.js';
import { verifyWebhook } from '../../common/webhooks/verify.js';
import { Service, serviceQueue, uniqueName, untilCompleted, untilIdle } from '../helpers/service.js';
import { createEndpoint, createPaymentIntent, waitForAttempts } from '../helpers/webhook-fixtures.js';
import { Receiver, until } from '../helpers/receiver.js';
import { startRedisServer } from '../helpers/redis-server.js';

/** Sweeps of a pending entry that must bring nothing to the endpoints the dispatch left out. */
const SWEEPS_SEEN = 3;

test('the sweeper re-enqueues a delivery whose job vanished from Redis, and the entry goes once it is delivered', async (t) => {
  const receiver = await Receiver.start();
  t.teardown(() => receiver.close());
  // The first attempt fails, and its retry is far off: only the sweeper can bring the event.
  const service = await Service.start({
    workers: 1,
    env: { WEBHOOK_RETRY_SCHEDULE_MS: '3600000', WEBHOOK_SWEEP_INTERVAL_MS: '300', WEBHOOK_SWEEP_AGE_MS: '1000' },
  });
  t.teardown(() => service.stop());
  const project = uniqueName('vanished');
  const key = await service.issueKey(project);
  const path = `/${project}`;
  receiver.on(path, (n) => (n === 0 ? { status: 500, body: 'not yet' } : { status: 200, body: 'thanks' }));
  const endpoint = await createEndpoint(service, key, receiver.url(path));
  const { eventId } = await createPaymentIntent(service, key);
  const [failed] = await waitForAttempts(service, key, endpoint.id, 1);
  t.like(failed, { event: eventId, succeeded: false, http_status: 500 });

  const db = await service.db();
  const outbox = db.collection<OutboxDoc>('event_outbox');
  t.is(await outbox.countDocuments({ _id: eventId }), 1, 'a delivery still to finish keeps its outbox entry');
  const webhooks = new Queue(QUEUES.webhooks, { connection: { url: service.env.REDIS_URL }, prefix: service.prefix });
  t.teardown(() => webhooks.close());
  const job = await until('the delivery job to wait for its retry', async () => {
    const found = await webhooks.getJob(deliveryJobId(eventId, endpoint.id));
    return found && (await found.getState()) === 'delayed' ? found : undefined;
  });
  // Redis loses the job. (No look at its state now: a sweep 300 ms apart may already
  // have put it back; its retry is an hour off, so the delivery below is the sweep's.)
  await job.remove();

  const [, delivery] = await receiver.waitFor(path, 2);
  t.is(delivery!.headers['webhook-id'], eventId);
  t.notThrows(() => verifyWebhook(endpoint.secret, delivery!.headers, delivery!.body));
  const attempts = await waitForAttempts(service, key, endpoint.id, 2);
  t.like(attempts[0], { event: eventId, succeeded: true, http_status: 200, response_body: 'thanks' });
  await until('the outbox entry to go once the delivery is finished', async () =>
    (await outbox.countDocuments({ _id: eventId })) === 0 ? true : undefined,
  );
  t.is(receiver.received(path).length, 2, 'delivered once more, not again and again');
});

test('the sweeper drives only the deliveries the dispatch chose: an endpoint disabled then, enabled since, gets nothing; a resend that arrived finishes its delivery', async (t) => {
  const receiver = await Receiver.start();
  t.teardown(() => receiver.close());
  // Failed first attempts are retried only in an hour: what arrives sooner is the sweeper's doing.
  const service = await Service.start({
    workers: 1,
    env: { WEBHOOK_RETRY_SCHEDULE_MS: '3600000', WEBHOOK_SWEEP_INTERVAL_MS: '300', WEBHOOK_SWEEP_AGE_MS: '500' },
  });
  t.teardown(() => service.stop());
  const project = uniqueName('chosen');
  const key = await service.issueKey(project);
  // `failing` keeps the event's outbox entry pending, so the sweeper keeps looking at it.
  receiver.on(`/${project}/failing`, (n) => (n === 0 ? { status: 500, body: 'down' } : { status: 200, body: 'back' }));
  const failing = await createEndpoint(service, key, receiver.url(`/${project}/failing`));
  await createEndpoint(service, key, receiver.url(`/${project}/working`));
  const paused = await createEndpoint(service, key, receiver.url(`/${project}/paused`));
  const disable = await service.request('POST', `/v1/webhook_endpoints/${paused.id}`, { key, body: { disabled: true } });
  t.is(disable.status, 200, disable.text);

  const { eventId } = await createPaymentIntent(service, key);
  await waitForAttempts(service, key, failing.id, 1);
  await receiver.waitFor(`/${project}/working`, 1);
  const enabledAt = Date.now();
  const enable = await service.request('POST', `/v1/webhook_endpoints/${paused.id}`, { key, body: { disabled: false } });
  t.is(enable.status, 200, enable.text);

  // Several sweeps that saw the pending entry since the endpoint came back, and
  // whatever they enqueued run: a wrong delivery would have been made by then.
  const db = await service.db();
  const outbox = db.collection<OutboxDoc>('event_outbox');
  const maintenance = serviceQueue(service, QUEUES.maintenance);
  t.teardown(() => maintenance.close());
  await untilCompleted(maintenance, JOBS.sweepEvents, SWEEPS_SEEN, enabledAt, { where: (job) => (job.returnvalue as { pending: number }).pending >= 1 });
  await untilIdle(service, [QUEUES.webhooks]);
  t.is(await outbox.countDocuments({ _id: eventId }), 1, 'still pending: one delivery has not arrived');
  t.is(receiver.received(`/${project}/paused`).length, 0, 'disabled when the event was dispatched: not sent since');
  t.is(receiver.received(`/${project}/working`).length, 1, 'delivered once, not again by the sweeper');

  // A resend reaches the failing endpoint: its delivery is finished, and with it the event's.
  const resend = await service.request('POST', `/v1/webhook_endpoints/${failing.id}/resend`, { key, body: { event: eventId } });
  t.is(resend.status, 200, resend.text);
  await receiver.waitFor(`/${project}/failing`, 2);
  await until('the outbox entry to go once the resend arrived, without the retry an hour off', async () =>
    (await outbox.countDocuments({ _id: eventId })) === 0 ? true : undefined,
  );
  t.is(receiver.received(`/${project}/failing`).length, 2);
  t.is(receiver.received(`/${project}/paused`).length, 0);
});

test('the intents sweeper re-enqueues an operator answer and an expiry whose delayed jobs vanished from Redis', async (t) => {
  // The payer's answer is far off, and the sweep frequent: only the sweep can bring a lost one back.
  const service = await Service.start({
    workers: 1,
    env: { SIMULATOR_APPROVAL_DELAY_MS: '4000', SIMULATOR_PROCESSING_DELAY_MS: '100', INTENTS_SWEEP_INTERVAL_MS: '500' },
  });
  t.teardown(() => service.stop());
  const key = await service.issueKey(uniqueName('intents'));
  const created = await service.request('POST', '/v1/payment_intents', { key, body: { amount: 700, currency: 'xof' } });
  t.is(created.status, 200, created.text);
  const pi = created.body.id as string;
  const confirmed = await service.request('POST', `/v1/payment_intents/${pi}/confirm`, { key, body: { operator: 'mtn_momo', phone_number: '+2250500000000' } });
  t.is(confirmed.status, 200, confirmed.text);
  t.is(confirmed.body.status, 'requires_action');

  const intents = new Queue(QUEUES.intents, { connection: { url: service.env.REDIS_URL }, prefix: service.prefix });
  t.teardown(() => intents.close());
  const payerJob = `outcome-${pi}-1-payer`;
  const job = await until('the payer step to wait in Redis', async () => {
    const found = await intents.getJob(payerJob);
    return found && (await found.getState()) === 'delayed' ? found : undefined;
  });
  // Redis loses every delayed job of the intent (as a restart from an old snapshot would).
  const lostAt = Date.now();
  await job.remove();
  const expiry = (await intents.getJobs(['delayed'])).filter((j) => j.id === `expire-${pi}`);
  t.true(expiry.length >= 1, 'the expiry waits as a delayed job, not a scan');
  for (const j of expiry) await j.remove();

  // The sweep runs every 500 ms: the job it puts back is a new one, added after the loss.
  const back = await until('the sweeper to put the payer step back', async () => {
    const found = await intents.getJob(payerJob);
    return found && found.timestamp >= lostAt ? found : undefined;
  });
  t.true(back.timestamp > job.timestamp, 'a new job under the same id');
  await until('the intent to be paid after all', async () => {
    const res = await service.request('GET', `/v1/payment_intents/${pi}`, { key });
    return res.body.status === 'succeeded' ? true : undefined;
  }, 30_000);
  // The event follows its transition's update: listed a moment after the status.
  const types = await until('the succeeded event to be listed', async () => {
    const events = await service.request('GET', '/v1/events?limit=10', { key });
    const listed = (events.body.data as Array<{ type: string; data: { object: { id: string } } }>).filter((e) => e.data.object.id === pi).map((e) => e.type);
    return listed.includes('payment_intent.succeeded') ? listed : undefined;
  });
  t.deepEqual(types, ['payment_intent.succeeded', 'payment_intent.processing', 'payment_intent.requires_action', 'payment_intent.created'], 'each step once');
});

test('an operator step lost with Redis is re-driven once Redis is back, in seconds, not at the next scheduled sweep', async (t) => {
  // Persistent: Redis comes back with its data but the lost job, as from a snapshot
  // taken before the step was scheduled. The scheduled sweep is a minute apart.
  const redis = await startRedisServer({ persistent: true });
  t.teardown(() => redis.dispose());
  const service = await Service.start({ workers: 1, redisUrl: redis.url, env: { SIMULATOR_APPROVAL_DELAY_MS: '1000', SIMULATOR_PROCESSING_DELAY_MS: '100' } });
  t.teardown(() => service.stop());
  const key = await service.issueKey(uniqueName('reconnect'));
  const created = await service.request('POST', '/v1/payment_intents', { key, body: { amount: 700, currency: 'xof' } });
  t.is(created.status, 200, created.text);
  const pi = created.body.id as string;
  const confirmed = await service.request('POST', `/v1/payment_intents/${pi}/confirm`, { key, body: { operator: 'mtn_momo', phone_number: '+2250500000000' } });
  t.is(confirmed.status, 200, confirmed.text);
  t.is(confirmed.body.status, 'requires_action');

  const intents = new Queue(QUEUES.intents, { connection: { url: redis.url, maxRetriesPerRequest: null }, prefix: service.prefix });
  t.teardown(() => intents.close());
  const job = await until('the payer step to wait in Redis', async () => {
    const found = await intents.getJob(`outcome-${pi}-1-payer`);
    return found && (await found.getState()) === 'delayed' ? found : undefined;
  });
  await job.remove();
  await redis.restart();
  const backMs = Date.now();

  await until('the intent to be paid after all', async () => {
    const res = await service.request('GET', `/v1/payment_intents/${pi}`, { key });
    return res.body?.status === 'succeeded' ? true : undefined;
  }, 20_000);
  const tookMs = Date.now() - backMs;
  t.log(`paid ${tookMs} ms after Redis came back`);
  t.true(tookMs < 10_000, `paid ${tookMs} ms after Redis came back`);
});

test('a final transition whose event Redis lost with its job is recorded once Redis is back', async (t) => {
  const redis = await startRedisServer({ persistent: true });
  t.teardown(() => redis.dispose());
  const service = await Service.start({ workers: 1, redisUrl: redis.url, env: { SIMULATOR_APPROVAL_DELAY_MS: '100', SIMULATOR_PROCESSING_DELAY_MS: '100' } });
  t.teardown(() => service.stop());
  const key = await service.issueKey(uniqueName('lost-event'));
  const created = await service.request('POST', '/v1/payment_intents', { key, body: { amount: 700, currency: 'xof' } });
  t.is(created.status, 200, created.text);
  const pi = created.body.id as string;
  const confirmed = await service.request('POST', `/v1/payment_intents/${pi}/confirm`, { key, body: { operator: 'mtn_momo', phone_number: '+2250500000000' } });
  t.is(confirmed.status, 200, confirmed.text);
  const db = await service.db();
  const succeededEvents = () => db.collection<{ _id: string; json: string }>('events').find({ object_id: pi, type: 'payment_intent.succeeded' }).toArray();
  const [recorded] = await until('the payment to succeed, its event recorded', async () => {
    const found = await succeededEvents();
    return found.length > 0 ? found : undefined;
  }, 20_000);

  // The state a job leaves when it applied the transition and Redis lost it before it
  // recorded the event: the intent succeeded, its newest history entry holding the
  // event, and no event document, no outbox entry. No later transition will record it.
  const intent = await db.collection<{ _id: string; history: Array<{ evt: { id: string; json?: string } | null }> }>('payment_intents').findOne({ _id: pi });
  const newest = intent!.history.at(-1)!.evt!;
  t.is(newest.id, recorded!._id, 'the event is the newest entry of the history');
  t.truthy(newest.json, 'with its JSON: the only copy once the document is gone');
  await db.collection<{ _id: string }>('events').deleteOne({ _id: recorded!._id });
  await db.collection<{ _id: string }>('event_outbox').deleteOne({ _id: recorded!._id });

  await redis.restart();
  const backMs = Date.now();
  const again = await until('the event to be recorded again', async () => {
    const found = await succeededEvents();
    return found.length > 0 ? found : undefined;
  }, 20_000);
  t.log(`recorded ${Date.now() - backMs} ms after Redis came back`);
  t.is(again.length, 1, 'once');
  t.is(again[0]!._id, recorded!._id, 'the same event: its id and');
  t.is(again[0]!.json, recorded!.json, 'its body, byte for byte');
  const listed = await service.request('GET', '/v1/events?type=payment_intent.succeeded&limit=10', { key });
  t.deepEqual((listed.body.data as Array<{ id: string }>).map((e) => e.id), [recorded!._id], 'listed once');
});
