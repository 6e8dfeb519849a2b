/**
 * Retries, attempts and endpoint health end to end, with the schedule shortened
 * through the environment (200 ms, 400 ms, 800 ms, no jitter).
 */
import test from 'ava';
import { verifyWebhook } from '../../../common/webhooks/verify.js';
import { Service, uniqueName, until } from '../../helpers/service.js';
import { createEndpoint, createPaymentIntent, listAttempts, waitDispatched, waitForAttempts } from '../../helpers/webhook-fixtures.js';
import { Receiver } from '../../helpers/receiver.js';

let service: Service;
let receiver: Receiver;

test.before(async () => {
  [service, receiver] = await Promise.all([
    Service.start({
      env: {
        WEBHOOK_RETRY_SCHEDULE_MS: '200,400,800',
        WEBHOOK_JITTER: '0',
        WEBHOOK_TIMEOUT_MS: '3000',
        WEBHOOK_RETRY_AFTER_MIN_MS: '0',
      },
    }),
    Receiver.start(),
  ]);
});

test.after.always(async () => {
  await Promise.all([service?.stop(), receiver?.close()]);
});

test('a receiver that answers 500 twice then 200 is delivered on the third attempt, and all three are recorded', async (t) => {
  const project = uniqueName('retry');
  const key = await service.issueKey(project);
  const path = `/${project}`;
  receiver.on(path, (n) => (n < 2 ? { status: 500, body: `boom ${n}` } : { status: 200, body: 'thanks' }));
  const endpoint = await createEndpoint(service, key, receiver.url(path));
  const { eventId } = await createPaymentIntent(service, key);

  const deliveries = await receiver.waitFor(path, 3);
  const attempts = await waitForAttempts(service, key, endpoint.id, 3);
  t.deepEqual(deliveries.map((d) => d.headers['webhook-id']), [eventId, eventId, eventId], 'the same webhook-id on every attempt');
  t.true(deliveries.every((d) => d.body.equals(deliveries[0]!.body)), 'the same body on every attempt');
  for (const d of deliveries) t.notThrows(() => verifyWebhook(endpoint.secret, d.headers, d.body), 'each attempt is signed');

  t.deepEqual(
    attempts.map((a) => [a.attempt, a.succeeded, a.http_status, a.error, a.response_body]),
    [
      [3, true, 200, null, 'thanks'],
      [2, false, 500, 'http_error', 'boom 1'],
      [1, false, 500, 'http_error', 'boom 0'],
    ],
    'newest first',
  );
  t.true(attempts.every((a) => a.event === eventId && a.webhook_endpoint === endpoint.id && a.duration_ms >= 0 && a.created > 0));
  await waitDispatched(service, eventId); // its delivery finished: a delivered event is not sent again
  t.is(receiver.received(path).length, 3);

  const page1 = await listAttempts(service, key, endpoint.id, 'limit=2');
  const page2 = await listAttempts(service, key, endpoint.id, `limit=2&starting_after=${page1[1]!.id}`);
  t.deepEqual([...page1, ...page2].map((a) => a.attempt), [3, 2, 1], 'attempts page with the usual cursors');
  const back = await listAttempts(service, key, endpoint.id, `ending_before=${page2[0]!.id}`);
  t.deepEqual(back.map((a) => a.attempt), [3, 2]);

  const stranger = await service.issueKey(uniqueName('stranger'));
  const hidden = await service.request('GET', `/v1/webhook_endpoints/${endpoint.id}/attempts`, { key: stranger });
  t.is(hidden.status, 404);
});

test('a receiver that never succeeds gets the first attempt and every scheduled retry, then no more', async (t) => {
  const project = uniqueName('exhaust');
  const key = await service.issueKey(project);
  const path = `/${project}`;
  receiver.on(path, () => ({ status: 502 }));
  const endpoint = await createEndpoint(service, key, receiver.url(path));
  const { eventId } = await createPaymentIntent(service, key);
  const attempts = await waitForAttempts(service, key, endpoint.id, 4);
  await waitDispatched(service, eventId); // the schedule used up: the delivery is over
  t.is(receiver.received(path).length, 4, 'one attempt and three retries');
  t.deepEqual(attempts.map((a) => a.attempt), [4, 3, 2, 1]);
  const fetched = await service.request('GET', `/v1/webhook_endpoints/${endpoint.id}`, { key });
  t.is(fetched.body.status, 'enabled', 'a few failures do not disable an endpoint');
});

test('a 429 with Retry-After is retried no sooner than it asks', async (t) => {
  const project = uniqueName('retryafter');
  const key = await service.issueKey(project);
  const path = `/${project}`;
  receiver.on(path, (n) => (n === 0 ? { status: 429, headers: { 'Retry-After': '2' } } : { status: 200 }));
  const endpoint = await createEndpoint(service, key, receiver.url(path));
  await createPaymentIntent(service, key);
  await receiver.waitFor(path, 2);
  const [second, first] = await waitForAttempts(service, key, endpoint.id, 2);
  t.like(first, { attempt: 1, http_status: 429, error: 'http_error' });
  t.like(second, { attempt: 2, succeeded: true });
  // The schedule alone would have retried after 200 ms.
  t.true(second!.created - first!.created >= 2, `retried ${second!.created - first!.created} s later`);
});

test('a 410 Gone disables the endpoint at once: no retry, and no further deliveries', async (t) => {
  const project = uniqueName('gone');
  const key = await service.issueKey(project);
  const path = `/${project}`;
  receiver.on(path, () => ({ status: 410, body: 'gone' }));
  const endpoint = await createEndpoint(service, key, receiver.url(path));
  const first = await createPaymentIntent(service, key);
  const [attempt] = await waitForAttempts(service, key, endpoint.id, 1);
  t.like(attempt, { attempt: 1, http_status: 410, error: 'http_error', succeeded: false });
  const disabled = await until('the endpoint to be disabled', async () => {
    const res = await service.request('GET', `/v1/webhook_endpoints/${endpoint.id}`, { key });
    return res.body.status === 'disabled' ? res.body : undefined;
  });
  t.is(disabled.status, 'disabled');

  const later = await createPaymentIntent(service, key);
  // Both events' deliveries are over (the first gave up on the 410): nothing is left to arrive.
  await waitDispatched(service, first.eventId);
  await waitDispatched(service, later.eventId);
  t.is(receiver.received(path).length, 1);
  t.is((await listAttempts(service, key, endpoint.id)).length, 1);
});

test('a receiver that hangs past the timeout is a failed attempt, and does not hold up other deliveries', async (t) => {
  const project = uniqueName('hang');
  const key = await service.issueKey(project);
  const hanging = Array.from({ length: 5 }, (_, i) => `/${project}/hang${i}`);
  for (const path of hanging) receiver.on(path, () => ({ hang: true }));
  const endpoints = await Promise.all(hanging.map((path) => createEndpoint(service, key, receiver.url(path))));
  await createPaymentIntent(service, key);
  const held = await Promise.all(hanging.map((path) => receiver.waitFor(path).then((r) => r[0]!)));

  const otherProject = uniqueName('prompt');
  const otherKey = await service.issueKey(otherProject);
  await createEndpoint(service, otherKey, receiver.url(`/${otherProject}`));
  await createPaymentIntent(service, otherKey);
  await receiver.waitFor(`/${otherProject}`);
  t.true(held.every((r) => !r.closed), 'delivered while five requests were still hanging');

  const [attempt] = await waitForAttempts(service, key, endpoints[0]!.id, 1);
  t.like(attempt, { attempt: 1, succeeded: false, http_status: null, error: 'timeout', response_body: null });
  t.true(attempt!.duration_ms >= 2900, `gave up after ${attempt!.duration_ms} ms`);
  t.true(held[0]!.closed, 'the connection was closed on timeout');
});
