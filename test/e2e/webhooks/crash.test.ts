/**
 * No event is lost to a crash: a worker killed in the middle of a delivery (its first
 * attempt, made in place, or a retry, made by its job), and an event whose dispatch a
 * crash never enqueued (the outbox), are all delivered.
 */
import test from 'ava';
import { createdEventId, createdEventJson } from '../../../common/events.js';
import { IdGenerator, idTime, randomBase62, type IdKind } from '../../../common/ids.js';
import type { OutboxDoc, PaymentIntentDoc } from '../../../common/documents.js';
import { verifyWebhook } from '../../../common/webhooks/verify.js';
import { until, withService } from '../../helpers/service.js';
import { createEndpoint, createPaymentIntent, waitForAttempts } from '../../helpers/webhook-fixtures.js';
import { Receiver } from '../../helpers/receiver.js';

const ids = new IdGenerator(Date.now);
const newId = (kind: IdKind) => ids.next(kind);

let receiver: Receiver;

test.before(async () => {
  receiver = await Receiver.start();
});

test.after.always(async () => {
  await receiver?.close();
});

test('a worker killed mid-way through a first attempt made in place: the sweeper sends the event again, with the same webhook-id', async (t) => {
  // No job holds a first attempt made in place: its outbox entry is what brings it back.
  const { service, key, project } = await withService(t, {
    project: 'killed',
    workers: 1,
    env: { WEBHOOK_RETRY_SCHEDULE_MS: '200,400', WEBHOOK_JITTER: '0', WEBHOOK_SWEEP_INTERVAL_MS: '300', WEBHOOK_SWEEP_AGE_MS: '1000', WEBHOOK_TIMEOUT_MS: '3000' },
  });
  const path = `/${project}`;
  receiver.on(path, (n) => (n === 0 ? { hang: true } : { status: 200, body: 'finally' }));
  const endpoint = await createEndpoint(service, key, receiver.url(path));
  const { eventId } = await createPaymentIntent(service, key);

  const [inFlight] = await receiver.waitFor(path);
  await service.workers[0]!.stop('SIGKILL');
  await until('the dead worker to drop the connection', () => (inFlight!.closed ? true : undefined));
  await service.startWorker();

  const deliveries = await receiver.waitFor(path, 2, 60_000);
  const [attempt] = await waitForAttempts(service, key, endpoint.id, 1);
  t.true(deliveries.every((d) => d.headers['webhook-id'] === eventId), 'the same webhook-id every time');
  t.true(deliveries.every((d) => d.body.equals(inFlight!.body)), 'the same body every time');
  t.notThrows(() => verifyWebhook(endpoint.secret, deliveries[1]!.headers, deliveries[1]!.body));
  t.like(attempt, { event: eventId, succeeded: true, http_status: 200, response_body: 'finally' });
});

test('a worker killed mid-way through a retry: its delivery job is recovered as stalled and sent again, long before any sweep', async (t) => {
  // The default sweep only looks at entries 30 s old: a delivery within 20 s is the job's recovery.
  const { service, key, project } = await withService(t, { project: 'killed-retry', workers: 1, env: { WEBHOOK_RETRY_SCHEDULE_MS: '200,400', WEBHOOK_JITTER: '0' } });
  const path = `/${project}`;
  receiver.on(path, (n) => (n === 0 ? { status: 500, body: 'not yet' } : n === 1 ? { hang: true } : { status: 200, body: 'finally' }));
  const endpoint = await createEndpoint(service, key, receiver.url(path));
  const { eventId } = await createPaymentIntent(service, key);

  const [, inFlight] = await receiver.waitFor(path, 2);
  await service.workers[0]!.stop('SIGKILL');
  await until('the dead worker to drop the connection', () => (inFlight!.closed ? true : undefined));
  await service.startWorker();

  const deliveries = await receiver.waitFor(path, 3, 20_000);
  t.true(deliveries.every((d) => d.headers['webhook-id'] === eventId), 'the same webhook-id every time');
  t.notThrows(() => verifyWebhook(endpoint.secret, deliveries[2]!.headers, deliveries[2]!.body));
  const attempts = await waitForAttempts(service, key, endpoint.id, 2);
  t.like(attempts[0], { event: eventId, succeeded: true, http_status: 200, response_body: 'finally' });
  t.like(attempts[1], { event: eventId, attempt: 1, succeeded: false, http_status: 500 });
});

test('an event written but never dispatched (a crash before the enqueue) is picked up by the sweeper', async (t) => {
  const { service, key, project } = await withService(t, { project: 'outbox', workers: 1, env: { WEBHOOK_SWEEP_INTERVAL_MS: '300', WEBHOOK_SWEEP_AGE_MS: '1000' } });
  const path = `/${project}`;
  const endpoint = await createEndpoint(service, key, receiver.url(path));

  // The state a crash between the object write and the dispatch enqueue leaves behind.
  const objectId = newId('payment_intent');
  const created = Math.floor(Date.now() / 1000);
  const pi: PaymentIntentDoc = {
    _id: objectId, project, livemode: false, amount: 700, currency: 'usd', description: null, status: 'new',
    client_secret: `${objectId}_secret_${randomBase62(24)}`, automatic_operator: true, allowed_operators: ['wave'],
    selected_operator: null, metadata: [], created, expires_at: created + 86_400,
  };
  const id = createdEventId(objectId);
  const event = { json: createdEventJson(pi) };
  const db = await service.db();
  await db.collection<PaymentIntentDoc>('payment_intents').insertOne(pi);
  await db.collection<OutboxDoc>('event_outbox').insertOne({
    _id: id, project, livemode: false, type: 'payment_intent.created', json: event.json, created_ms: idTime(objectId),
  });

  const [delivery] = await receiver.waitFor(path);
  t.is(delivery!.headers['webhook-id'], id);
  t.is(delivery!.body.toString('utf8'), event.json);
  t.notThrows(() => verifyWebhook(endpoint.secret, delivery!.headers, delivery!.body));
  await until('the outbox entry to be removed', async () =>
    (await db.collection<OutboxDoc>('event_outbox').countDocuments({ _id: id })) === 0 ? true : undefined,
  );
  const [attempt] = await waitForAttempts(service, key, endpoint.id, 1);
  t.like(attempt, { event: id, attempt: 1, succeeded: true });
});
