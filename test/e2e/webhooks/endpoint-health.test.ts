/**
 * Endpoint health: an endpoint that only fails for `WEBHOOK_DISABLE_AFTER_MS`
 * (5 days by default, 1 s here) is disabled, a success ends a run of failures, and
 * a disabled endpoint gets no further attempts, not even pending retries.
 */
import test from 'ava';
import type { WebhookEndpointDoc } from '../../../common/documents.js';
import { deliveryJobId } from '../../../common/events.js';
import { QUEUES } from '../../../common/jobs.js';
import { Service, serviceQueue, uniqueName, until } from '../../helpers/service.js';
import { createEndpoint, createPaymentIntent, listAttempts, waitForAttempts } from '../../helpers/webhook-fixtures.js';
import { Receiver } from '../../helpers/receiver.js';

let service: Service;
let receiver: Receiver;

test.before(async () => {
  [service, receiver] = await Promise.all([
    Service.start({ env: { WEBHOOK_RETRY_SCHEDULE_MS: '1500,1500,1500,1500', WEBHOOK_JITTER: '0', WEBHOOK_DISABLE_AFTER_MS: '1000' } }),
    Receiver.start(),
  ]);
});

test.after.always(async () => {
  await Promise.all([service?.stop(), receiver?.close()]);
});

/** The delivery job's final state: once there, it makes no further attempt. */
async function deliveryFinished(eventId: string, endpointId: string): Promise<string> {
  const webhooks = serviceQueue(service, QUEUES.webhooks);
  try {
    return await until('the delivery job to finish', async () => {
      const state = await webhooks.getJobState(deliveryJobId(eventId, endpointId));
      return state === 'completed' || state === 'failed' ? state : undefined;
    });
  } finally {
    await webhooks.close();
  }
}

async function endpointDoc(id: string): Promise<WebhookEndpointDoc | null> {
  return (await service.db()).collection<WebhookEndpointDoc>('webhook_endpoints').findOne({ _id: id });
}

test('an endpoint whose deliveries have all failed for the disable period is disabled and gets no more attempts', async (t) => {
  const project = uniqueName('failing');
  const key = await service.issueKey(project);
  const path = `/${project}`;
  receiver.on(path, () => ({ status: 500 }));
  const endpoint = await createEndpoint(service, key, receiver.url(path));
  const { eventId } = await createPaymentIntent(service, key);

  const disabled = await until('the endpoint to be disabled', async () => {
    const res = await service.request('GET', `/v1/webhook_endpoints/${endpoint.id}`, { key });
    return res.body.status === 'disabled' ? res.body : undefined;
  });
  t.is(disabled.status, 'disabled');
  const doc = await endpointDoc(endpoint.id);
  t.is(doc?.disabled_reason, 'failing');
  t.is(typeof doc?.failing_since, 'number');
  const attempts = (await listAttempts(service, key, endpoint.id)).length;
  t.is(attempts, 2, 'disabled on the first failure past the period');
  t.is(await deliveryFinished(eventId, endpoint.id), 'failed', 'the delivery gave up: no retry is left');
  t.is(receiver.received(path).length, attempts, 'no attempt after disabling');
});

test('a success ends the run of failures', async (t) => {
  const project = uniqueName('recovers');
  const key = await service.issueKey(project);
  const path = `/${project}`;
  receiver.on(path, (n) => (n === 0 ? { status: 503 } : { status: 204 }));
  const endpoint = await createEndpoint(service, key, receiver.url(path));
  await createPaymentIntent(service, key);
  await waitForAttempts(service, key, endpoint.id, 1);
  await until('the failure to be noted', async () => ((await endpointDoc(endpoint.id))?.failing_since ? true : undefined));
  const [success] = await waitForAttempts(service, key, endpoint.id, 2);
  t.like(success, { succeeded: true, http_status: 204 });
  await until('the run of failures to end', async () => ((await endpointDoc(endpoint.id))?.failing_since === null ? true : undefined));
  t.is((await endpointDoc(endpoint.id))?.status, 'enabled');
});

test('an endpoint disabled while a retry is pending gets no further attempt', async (t) => {
  const project = uniqueName('pending');
  const key = await service.issueKey(project);
  const path = `/${project}`;
  receiver.on(path, () => ({ status: 500 }));
  const endpoint = await createEndpoint(service, key, receiver.url(path));
  const { eventId } = await createPaymentIntent(service, key);
  await waitForAttempts(service, key, endpoint.id, 1);
  const db = await service.db();
  await db.collection<WebhookEndpointDoc>('webhook_endpoints').updateOne({ _id: endpoint.id }, { $set: { status: 'disabled', disabled_reason: 'test' } });
  t.is(await deliveryFinished(eventId, endpoint.id), 'completed', 'the pending retry ran, found the endpoint disabled and ended');
  t.is(receiver.received(path).length, 1);
  t.is((await listAttempts(service, key, endpoint.id)).length, 1);
});
