/**
 * No event is lost to a crash: a worker killed in the middle of a delivery, and an
 * event whose dispatch a crash never enqueued (the outbox), are both delivered.
 */
import test from 'ava';
import type { EventDoc, OutboxDoc } from '../../common/mongo.js';
import { newId, randomBase62 } from '../../common/ids.js';
import { buildEventJson } from '../../common/presenters.js';
import { verifyWebhook } from '../../common/webhooks/verify.js';
import { Service, uniqueName } from '../helpers/service.js';
import { createEndpoint, createPaymentIntent, waitForAttempts } from './fixtures.js';
import { Receiver, until } from './receiver.js';

let receiver: Receiver;

test.before(async () => {
  receiver = await Receiver.start();
});

test.after.always(async () => {
  await receiver?.close();
});

test('a worker killed mid-delivery: the event is still delivered, with the same webhook-id', async (t) => {
  const service = await Service.start({ workers: 1, env: { WEBHOOK_RETRY_SCHEDULE_MS: '200,400', WEBHOOK_JITTER: '0' } });
  t.teardown(() => service.stop());
  const project = uniqueName('killed');
  const key = await service.issueKey(project);
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

test('an event written but never dispatched (a crash before the enqueue) is picked up by the sweeper', async (t) => {
  const service = await Service.start({ workers: 1, env: { WEBHOOK_SWEEP_INTERVAL_MS: '300', WEBHOOK_SWEEP_AGE_MS: '1000' } });
  t.teardown(() => service.stop());
  const project = uniqueName('outbox');
  const key = await service.issueKey(project);
  const path = `/${project}`;
  const endpoint = await createEndpoint(service, key, receiver.url(path));

  // The state a crash between the event write and the dispatch enqueue leaves behind.
  const id = newId('event');
  const created = Math.floor(Date.now() / 1000);
  const event: EventDoc = {
    _id: id,
    project,
    livemode: false,
    type: 'payment_intent.created',
    created,
    json: buildEventJson({
      id,
      type: 'payment_intent.created',
      created,
      livemode: false,
      object: { id: `pi_${randomBase62(23)}`, object: 'payment_intent', amount: 700, currency: 'usd', status: 'new' },
    }),
  };
  const db = await service.db();
  await db.collection<EventDoc>('events').insertOne(event);
  await db.collection<OutboxDoc>('event_outbox').insertOne({
    _id: id, project, livemode: false, type: event.type, json: event.json, created_ms: Date.now() - 5000,
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
