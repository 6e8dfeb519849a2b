/**
 * MongoDB is the record of pending webhook work: an event's outbox entry stays until
 * its deliveries are finished, so a delivery whose job Redis lost (a restart from an
 * old snapshot) is found by the sweeper and delivered after all.
 */
import test from 'ava';
import { Queue } from 'bullmq';
import type { OutboxDoc } from '../../common/documents.js';
import { deliveryJobId } from '../../common/events.js';
import { QUEUES } from '../../common/jobs.js';
import { verifyWebhook } from '../../common/webhooks/verify.js';
import { Service, uniqueName } from '../helpers/service.js';
import { createEndpoint, createPaymentIntent, waitForAttempts } from '../helpers/webhook-fixtures.js';
import { Receiver, until } from '../helpers/receiver.js';

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
  await job.remove();
  t.is(await webhooks.getJobState(deliveryJobId(eventId, endpoint.id)), 'unknown', 'Redis has lost the job');

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
