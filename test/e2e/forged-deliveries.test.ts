/**
 * A delivery job added by hand (through the dashboard, or by anyone who can write
 * to Redis) cannot make a receiver get a signed event the service did not record,
 * nor an event of another project or mode. Jobs carry ids only, and finished ones
 * do not pile up in Redis.
 */
import test from 'ava';
import { Queue } from 'bullmq';
import { Webhook } from 'standardwebhooks';
import { deliveryJobId } from '../../common/events.js';
import { JOBS, QUEUES } from '../../common/jobs.js';
import { Service, sleep, uniqueName, until } from '../helpers/service.js';
import { createEndpoint, createPaymentIntent, listAttempts, waitDispatched } from '../helpers/webhook-fixtures.js';
import { Receiver } from '../helpers/receiver.js';

let service: Service;
let receiver: Receiver;
let webhooks: Queue;

test.before(async () => {
  [service, receiver] = await Promise.all([Service.start({ env: { WEBHOOK_RETRY_SCHEDULE_MS: '200', WEBHOOK_JITTER: '0' } }), Receiver.start()]);
  webhooks = new Queue(QUEUES.webhooks, { connection: { url: service.env.REDIS_URL }, prefix: service.prefix });
});

test.after.always(async () => {
  await webhooks?.close();
  await Promise.all([service?.stop(), receiver?.close()]);
});

/** Adds a job as an attacker would: any data, any id. */
async function forge(data: Record<string, unknown>): Promise<string> {
  const job = await webhooks.add(JOBS.deliverWebhook, data, { jobId: uniqueName('forged') });
  return job.id as string;
}

async function finished(jobId: string): Promise<unknown> {
  for (let i = 0; i < 400; i++) {
    const state = await webhooks.getJobState(jobId);
    // Read after the state: a job read while active has no return value yet.
    if (state === 'completed' || state === 'failed') return (await webhooks.getJob(jobId))?.returnvalue;
    await sleep(50);
  }
  throw new Error(`${jobId} did not finish`);
}

test('a forged job with invented event JSON delivers nothing', async (t) => {
  const project = uniqueName('forge');
  const key = await service.issueKey(project);
  const path = `/${project}`;
  const endpoint = await createEndpoint(service, key, receiver.url(path));
  const fake = JSON.stringify({ id: 'evt_fake', object: 'event', type: 'payment_intent.succeeded', data: { object: { amount: 1_000_000 } } });
  const jobId = await forge({ eventId: 'evt_fake', endpointId: endpoint.id, json: fake });
  // The job is over: any request it made has been made.
  t.like(await finished(jobId), { delivered: false, skipped: 'event_missing' });
  t.is(receiver.received(path).length, 0, 'the receiver got nothing');
  t.deepEqual(await listAttempts(service, key, endpoint.id), [], 'and no attempt was made');
});

test('a forged job pairing a real event with an endpoint of another project or mode delivers nothing', async (t) => {
  const victim = uniqueName('victim');
  const other = uniqueName('other');
  const [victimKey, victimLive, otherKey] = await Promise.all([service.issueKey(victim), service.issueKey(victim, true), service.issueKey(other)]);
  const otherPath = `/${other}`;
  const livePath = `/${victim}-live`;
  const otherEndpoint = await createEndpoint(service, otherKey, receiver.url(otherPath));
  const liveEndpoint = await createEndpoint(service, victimLive, `https://hooks.example.invalid${livePath}`);
  const { eventId } = await createPaymentIntent(service, victimKey);
  for (const endpoint of [otherEndpoint, liveEndpoint]) {
    const jobId = await forge({ eventId, endpointId: endpoint.id });
    t.like(await finished(jobId), { delivered: false, skipped: 'scope_mismatch' });
  }
  t.is(receiver.received(otherPath).length, 0);
  t.deepEqual(await listAttempts(service, otherKey, otherEndpoint.id), []);
});

test('a forged job for a real event of the same scope sends the stored event, never the bytes it carries', async (t) => {
  const project = uniqueName('resend');
  const key = await service.issueKey(project);
  const path = `/${project}`;
  const endpoint = await createEndpoint(service, key, receiver.url(path));
  const { eventId } = await createPaymentIntent(service, key);
  const [real] = await receiver.waitFor(path, 1);
  const jobId = await forge({ eventId, endpointId: endpoint.id, json: JSON.stringify({ id: eventId, forged: true }) });
  await finished(jobId);
  const deliveries = await receiver.waitFor(path, 2);
  const again = deliveries[1]!;
  t.is(again.body.toString('utf8'), real!.body.toString('utf8'), 'the stored event, byte for byte');
  t.false(again.body.toString('utf8').includes('forged'));
  const event = new Webhook(endpoint.secret).verify(again.body.toString('utf8'), again.headers as Record<string, string>) as { id: string };
  t.is(event.id, eventId);
});

test('delivery jobs carry ids only, and finished ones are removed within an hour or past a count', async (t) => {
  const project = uniqueName('bounded');
  const key = await service.issueKey(project);
  const path = `/${project}`;
  // The first attempt is made in place; a failed one leaves the chain to a job.
  receiver.on(path, (n) => (n === 0 ? { status: 500, body: 'not yet' } : { status: 200, body: 'thanks' }));
  const endpoint = await createEndpoint(service, key, receiver.url(path));
  const { eventId } = await createPaymentIntent(service, key);
  await waitDispatched(service, eventId);
  await receiver.waitFor(path);
  const job = await until('the delivery job', () => webhooks.getJob(deliveryJobId(eventId, endpoint.id)));
  t.deepEqual(Object.keys(job.data).sort(), ['endpointId', 'eventId', 'prior']);
  t.like(job.data, { eventId, endpointId: endpoint.id, prior: 1 });
  const { removeOnComplete, removeOnFail } = job.opts as { removeOnComplete: { age: number; count: number }; removeOnFail: { age: number; count: number } };
  t.true(removeOnComplete.age <= 3600, `completed kept ${removeOnComplete.age} s`);
  t.true(removeOnComplete.count > 0 && removeOnComplete.count <= 100_000, `completed kept up to ${removeOnComplete.count}`);
  t.true(removeOnFail.count > 0 && removeOnFail.count <= 100_000, `failed kept up to ${removeOnFail.count}`);
});
