/**
 * Webhook delivery end to end: real api and worker processes, a real local receiver.
 * Who receives an event, what a delivery looks like, and that receivers can trust it.
 */
import test from 'ava';
import { Webhook } from 'standardwebhooks';
import { QUEUES } from '../../../common/jobs.js';
import type { WebhookEndpointDoc } from '../../../common/documents.js';
import { verifyWebhook, WebhookVerificationError } from '../../../common/webhooks/verify.js';
import { deliveryJobId } from '../../../common/events.js';
import { Service, serviceQueue, uniqueName, untilIdle } from '../../helpers/service.js';
import { createEndpoint, createPaymentIntent, listAttempts, waitDispatched } from '../../helpers/webhook-fixtures.js';
import { Receiver } from '../../helpers/receiver.js';

let service: Service;
let receiver: Receiver;

test.before(async () => {
  [service, receiver] = await Promise.all([Service.start({ env: { WEBHOOK_RETRY_SCHEDULE_MS: '200,400', WEBHOOK_JITTER: '0' } }), Receiver.start()]);
});

test.after.always(async () => {
  await Promise.all([service?.stop(), receiver?.close()]);
});

test('one create gives one delivery to each matching endpoint and none to the others', async (t) => {
  const project = uniqueName('fanout');
  const [key, liveKey, otherKey] = await Promise.all([
    service.issueKey(project),
    service.issueKey(project, true),
    service.issueKey(uniqueName('other')),
  ]);
  const path = (name: string) => `/${project}/${name}`;
  const all = await createEndpoint(service, key, receiver.url(path('all')));
  await createEndpoint(service, key, receiver.url(path('typed')), ['payment_intent.created']);
  const disabled = await createEndpoint(service, key, receiver.url(path('disabled')));
  const otherProject = await createEndpoint(service, otherKey, receiver.url(path('other-project')));
  const otherMode = await createEndpoint(service, liveKey, `https://hooks.example.invalid/${project}`);
  const db = await service.db();
  await db.collection<WebhookEndpointDoc>('webhook_endpoints').updateOne({ _id: disabled.id }, { $set: { status: 'disabled' } });

  const { eventId } = await createPaymentIntent(service, key);
  await waitDispatched(service, eventId);
  await Promise.all([receiver.waitFor(path('all')), receiver.waitFor(path('typed'))]);

  const queue = serviceQueue(service, QUEUES.webhooks);
  t.teardown(() => queue.close());
  for (const endpoint of [disabled, otherProject, otherMode]) {
    t.is(await queue.getJob(deliveryJobId(eventId, endpoint.id)), undefined, `no delivery job for ${endpoint.url}`);
  }
  // The event's dispatch finished above with no job for these, and every job that could
  // make an attempt in place has run: no stray delivery is left to come.
  await untilIdle(service, [QUEUES.writes, QUEUES.events, QUEUES.webhooks]);
  t.is(receiver.received(path('all')).length, 1);
  t.is(receiver.received(path('typed')).length, 1);
  for (const name of ['disabled', 'other-project']) t.is(receiver.received(path(name)).length, 0, name);
  t.is((await listAttempts(service, liveKey, otherMode.id)).length, 0);
  t.is((await listAttempts(service, otherKey, otherProject.id)).length, 0);
  const [attempt] = await listAttempts(service, key, all.id);
  t.like(attempt, { event: eventId, webhook_endpoint: all.id, attempt: 1, succeeded: true, http_status: 200, error: null, response_body: 'ok' });
});

test('a delivery is the event JSON, signed: webhook-id is the event id, and one changed byte fails verification', async (t) => {
  const project = uniqueName('signed');
  const key = await service.issueKey(project);
  const endpoint = await createEndpoint(service, key, receiver.url(`/${project}`));
  const { id: piId, eventId } = await createPaymentIntent(service, key, 4242);
  const [delivery] = await receiver.waitFor(`/${project}`);
  const { headers, body } = delivery!;

  t.is(headers['webhook-id'], eventId);
  t.regex(headers['webhook-timestamp'] as string, /^\d+$/);
  t.true(Math.abs(Number(headers['webhook-timestamp']) - Date.now() / 1000) < 300);
  t.regex(headers['webhook-signature'] as string, /^v1,[A-Za-z0-9+/]{43}=$/);
  t.is(headers['content-type'], 'application/json');
  t.regex(headers['user-agent'] as string, /payments-service/);
  t.is(delivery!.method, 'POST');

  const event = verifyWebhook<{ id: string; type: string; data: { object: { id: string; amount: number; client_secret: string } } }>(endpoint.secret, headers, body);
  t.like(event, { id: eventId, object: 'event', type: 'payment_intent.created', livemode: false, data: { object: { id: piId, amount: 4242 } } });
  t.true(event.data.object.client_secret.startsWith(`${piId}_secret_`), 'the intent as a secret key reads it (DESIGN.md section 8)');
  const stored = await service.request('GET', `/v1/events/${eventId}`, { key });
  t.is(body.toString('utf8'), stored.text, 'the body is the event exactly as the API shows it');

  for (let i = 0; i < body.length; i += Math.max(1, Math.floor(body.length / 7))) {
    const tampered = Buffer.from(body);
    tampered[i] = (tampered[i] as number) ^ 0x20;
    t.throws(() => verifyWebhook(endpoint.secret, headers, tampered), { instanceOf: WebhookVerificationError }, `byte ${i}`);
  }
});

test('the standardwebhooks package verifies a captured delivery', async (t) => {
  const project = uniqueName('interop');
  const key = await service.issueKey(project);
  const endpoint = await createEndpoint(service, key, receiver.url(`/${project}`));
  const { eventId } = await createPaymentIntent(service, key);
  const [delivery] = await receiver.waitFor(`/${project}`);
  const headers = Object.fromEntries(Object.entries(delivery!.headers).map(([k, v]) => [k, String(v)]));
  const event = new Webhook(endpoint.secret).verify(delivery!.body, headers) as { id: string };
  t.is(event.id, eventId);
  const tampered = Buffer.from(delivery!.body.toString('utf8').replace('"amount":1000', '"amount":1001'), 'utf8');
  t.throws(() => new Webhook(endpoint.secret).verify(tampered, headers));
});

test('an endpoint created after an event was dispatched does not receive it', async (t) => {
  const project = uniqueName('later');
  const key = await service.issueKey(project);
  await createEndpoint(service, key, receiver.url(`/${project}/early`));
  const first = await createPaymentIntent(service, key);
  await waitDispatched(service, first.eventId);
  await createEndpoint(service, key, receiver.url(`/${project}/late`));
  const second = await createPaymentIntent(service, key);
  const late = await receiver.waitFor(`/${project}/late`);
  const early = await receiver.waitFor(`/${project}/early`, 2);
  await waitDispatched(service, second.eventId); // every delivery of the second event is over
  t.deepEqual(receiver.received(`/${project}/late`).map((r) => r.headers['webhook-id']), [second.eventId]);
  t.deepEqual(new Set(early.map((r) => r.headers['webhook-id'])), new Set([first.eventId, second.eventId]));
  t.is(late.length, 1);
});

test('events are listed and shown in the scope of the key, filtered by type', async (t) => {
  const project = uniqueName('events');
  const [key, otherKey] = await Promise.all([service.issueKey(project), service.issueKey(uniqueName('events'))]);
  const created = [];
  for (let i = 0; i < 3; i++) created.push(await createPaymentIntent(service, key, 100 + i));
  const list = await service.request('GET', '/v1/events?limit=2&type=payment_intent.created', { key });
  t.is(list.status, 200);
  t.like(list.body, { object: 'list', url: '/v1/events', has_more: true });
  t.deepEqual(list.body.data.map((e: { id: string }) => e.id), [created[2]!.eventId, created[1]!.eventId]);
  const none = await service.request('GET', '/v1/events', { key: otherKey });
  t.deepEqual(none.body.data, []);
  t.is((await service.request('GET', `/v1/events/${created[0]!.eventId}`, { key: otherKey })).status, 404);
});
