/**
 * Test-mode SSRF: by default a test-mode endpoint can neither be created for a
 * loopback or private address nor delivered to one (a name resolving to one is
 * refused at connection time), so `GET …/attempts` never shows an internal answer.
 * The operator's opt-in, WEBHOOK_ALLOW_PRIVATE_TARGETS=true, lets test mode reach
 * them; live mode never does.
 */
import { lookup } from 'node:dns/promises';
import { hostname } from 'node:os';
import test from 'ava';
import { isForbiddenAddress } from '../../common/net.js';
import { Service, uniqueName } from '../helpers/service.js';
import { createEndpoint, createPaymentIntent, waitDispatched, waitForAttempts } from '../helpers/webhook-fixtures.js';
import { Receiver } from '../helpers/receiver.js';

let guarded: Service;
let open: Service;
let receiver: Receiver;

const fastRetries = { WEBHOOK_RETRY_SCHEDULE_MS: '200', WEBHOOK_JITTER: '0' };

test.before(async () => {
  [guarded, open, receiver] = await Promise.all([
    Service.start({ env: { ...fastRetries, WEBHOOK_ALLOW_PRIVATE_TARGETS: 'false' } }),
    Service.start({ env: { ...fastRetries, WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' } }),
    Receiver.start(),
  ]);
});

test.after.always(async () => {
  await Promise.all([guarded?.stop(), open?.stop(), receiver?.close()]);
});

/** 127.0.0.1 (the receiver) written in every form that embeds it. */
function loopbackUrls(path: string): string[] {
  const port = receiver.port;
  return [
    `http://127.0.0.1:${port}${path}`,
    `http://localhost:${port}${path}`,
    `http://[::ffff:127.0.0.1]:${port}${path}`,
    `http://[::127.0.0.1]:${port}${path}`,
    `http://[64:ff9b::7f00:1]:${port}${path}`,
    `http://[64:ff9b:1::7f00:1]:${port}${path}`,
    `http://[2002:7f00:1::]:${port}${path}`,
    `http://169.254.169.254${path}`,
  ];
}

test('flag off: a test-mode endpoint naming 127.0.0.1 in any form is refused at creation', async (t) => {
  const key = await guarded.issueKey(uniqueName('ssrf'));
  for (const url of loopbackUrls('/scan')) {
    const res = await guarded.request('POST', '/v1/webhook_endpoints', { key, body: { url } });
    t.is(res.status, 400, url);
    t.like(res.body.error, { code: 'url_invalid', param: 'url' }, url);
  }
  const list = await guarded.request('GET', '/v1/webhook_endpoints', { key });
  t.deepEqual(list.body.data, [], 'nothing was created');
});

test('flag off: a test-mode endpoint whose name resolves to loopback is refused at delivery, and its answer never read', async (t) => {
  const name = hostname();
  const addresses = await lookup(name, { all: true });
  t.true(addresses.length > 0 && addresses.every((a) => isForbiddenAddress(a.address)), `${name} must resolve to a local address on this machine`);
  const project = uniqueName('ssrfdns');
  const key = await guarded.issueKey(project);
  const path = `/${project}`;
  receiver.on(path, () => ({ status: 200, body: 'internal secret' }));
  const endpoint = await createEndpoint(guarded, key, `http://${name}:${receiver.port}${path}`);
  const { eventId } = await createPaymentIntent(guarded, key);

  const attempts = await waitForAttempts(guarded, key, endpoint.id, 1);
  for (const attempt of attempts) {
    t.like(attempt, { event: eventId, succeeded: false, http_status: null, error: 'address_refused', response_body: null });
  }
  await waitDispatched(guarded, eventId); // its retry too: the delivery is over
  t.is(receiver.received(path).length, 0, 'no request reached the receiver');
});

test('flag on: test mode reaches 127.0.0.1 in every routable form', async (t) => {
  const project = uniqueName('allowed');
  const key = await open.issueKey(project);
  // The forms the machine can actually connect to: IPv4, and IPv4-mapped over a dual-stack socket.
  const reachable = [`http://127.0.0.1:${receiver.port}/${project}/v4`, `http://[::ffff:127.0.0.1]:${receiver.port}/${project}/mapped`];
  for (const url of reachable) await createEndpoint(open, key, url);
  for (const url of loopbackUrls(`/${project}/other`)) {
    const res = await open.request('POST', '/v1/webhook_endpoints', { key, body: { url } });
    t.is(res.status, 200, url);
  }
  const { eventId } = await createPaymentIntent(open, key);
  for (const suffix of ['v4', 'mapped']) {
    const [delivery] = await receiver.waitFor(`/${project}/${suffix}`);
    t.is(delivery!.headers['webhook-id'], eventId, suffix);
  }
});

test('flag on: live mode still refuses loopback at creation', async (t) => {
  const key = await open.issueKey(uniqueName('live'), true);
  for (const url of loopbackUrls('/live').map((u) => u.replace('http:', 'https:'))) {
    const res = await open.request('POST', '/v1/webhook_endpoints', { key, body: { url } });
    t.is(res.status, 400, url);
    t.is(res.body.error.code, 'url_invalid', url);
  }
});
