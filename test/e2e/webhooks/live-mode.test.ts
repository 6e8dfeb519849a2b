/**
 * Live-mode endpoint safety: a loopback endpoint is refused at creation, and a name
 * that resolves to a loopback or private address is refused at delivery, when the
 * connection is made, so the receiver is never reached.
 */
import { lookup } from 'node:dns/promises';
import { hostname } from 'node:os';
import test from 'ava';
import { isForbiddenAddress } from '../../../common/net.js';
import { Service, uniqueName } from '../../helpers/service.js';
import { createEndpoint, createPaymentIntent, waitDispatched, waitForAttempts } from '../../helpers/webhook-fixtures.js';
import { Receiver } from '../../helpers/receiver.js';

let service: Service;
let receiver: Receiver;

test.before(async () => {
  [service, receiver] = await Promise.all([
    Service.start({ env: { WEBHOOK_RETRY_SCHEDULE_MS: '200', WEBHOOK_JITTER: '0' } }),
    Receiver.start(),
  ]);
});

test.after.always(async () => {
  await Promise.all([service?.stop(), receiver?.close()]);
});

test('a live-mode endpoint pointing at 127.0.0.1 is refused at creation', async (t) => {
  const key = await service.issueKey(uniqueName('livecreate'), true);
  for (const url of [`https://127.0.0.1:${receiver.port}/`, `https://[::1]:${receiver.port}/`, `https://localhost:${receiver.port}/`]) {
    const res = await service.request('POST', '/v1/webhook_endpoints', { key, body: { url } });
    t.is(res.status, 400, url);
    t.like(res.body.error, { code: 'url_invalid', param: 'url' }, url);
  }
  const list = await service.request('GET', '/v1/webhook_endpoints', { key });
  t.deepEqual(list.body.data, [], 'nothing was created');
});

test('a live-mode endpoint whose name resolves to a loopback address is refused at delivery, and never reached', async (t) => {
  const name = hostname();
  const addresses = await lookup(name, { all: true });
  t.true(addresses.length > 0 && addresses.every((a) => isForbiddenAddress(a.address)), `${name} must resolve to a local address on this machine`);

  const project = uniqueName('livedeliver');
  const key = await service.issueKey(project, true);
  const path = `/${project}`;
  const endpoint = await createEndpoint(service, key, `https://${name}:${receiver.port}${path}`);
  t.is(endpoint.livemode, true);
  const { eventId } = await createPaymentIntent(service, key);

  const attempts = await waitForAttempts(service, key, endpoint.id, 2);
  for (const attempt of attempts) {
    t.like(attempt, { event: eventId, succeeded: false, http_status: null, error: 'address_refused', response_body: null });
  }
  await waitDispatched(service, eventId); // the schedule used up: the delivery is over
  t.is(receiver.received(path).length, 0, 'no request reached the receiver');
  t.false(receiver.requests.some((r) => r.headers['webhook-id'] === eventId));
});

test('in test mode the same local receiver is delivered to', async (t) => {
  const project = uniqueName('testmode');
  const key = await service.issueKey(project);
  const path = `/${project}`;
  await createEndpoint(service, key, `http://${hostname()}:${receiver.port}${path}`);
  const { eventId } = await createPaymentIntent(service, key);
  const [delivery] = await receiver.waitFor(path);
  t.is(delivery!.headers['webhook-id'], eventId);
});
