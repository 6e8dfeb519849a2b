/**
 * Secret rotation (DESIGN.md section 9), black-box: until the previous secret
 * expires every delivery carries two signatures (`v1,NEW v1,OLD`), so a receiver
 * holding either secret verifies it; afterwards only the new one does. Receivers are
 * checked with the service's own verifier and with the `standardwebhooks` package.
 */
import test from 'ava';
import type { WebhookEndpointDoc } from '../../../common/documents.js';
import { signWebhook } from '../../../common/webhooks/sign.js';
import type { Received } from '../../helpers/receiver.js';
import { Receiver } from '../../helpers/receiver.js';
import { Service, uniqueName, until } from '../../helpers/service.js';
import { createEndpoint, createPaymentIntent } from '../../helpers/webhook-fixtures.js';
import { fireRetry, manage, retrieveEndpoint, signaturesOf, verifiesWith, webhooksQueue } from '../../helpers/webhook-management.js';

let service: Service;
let receiver: Receiver;

test.before(async () => {
  [service, receiver] = await Promise.all([
    Service.start({ env: { WEBHOOK_RETRY_SCHEDULE_MS: '3600000', WEBHOOK_JITTER: '0' } }),
    Receiver.start(),
  ]);
});

test.after.always(async () => {
  await Promise.all([service?.stop(), receiver?.close()]);
});

const BOTH = { ours: true, standard: true };
const NEITHER = { ours: false, standard: false };

async function endpointDoc(id: string): Promise<WebhookEndpointDoc> {
  const doc = await (await service.db()).collection<WebhookEndpointDoc>('webhook_endpoints').findOne({ _id: id });
  if (!doc) throw new Error(`no endpoint ${id}`);
  return doc;
}

/** Creates `count` payment intents and returns their deliveries to `path`, in event order. */
async function deliveriesOf(key: string, path: string, count: number): Promise<Received[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) ids.push((await createPaymentIntent(service, key)).eventId);
  await until(`${count} deliveries to ${path}`, () => (ids.every((id) => receiver.received(path).some((r) => r.headers['webhook-id'] === id)) ? true : undefined));
  return ids.map((id) => receiver.received(path).find((r) => r.headers['webhook-id'] === id) as Received);
}

test('during the grace period a receiver holding only the old secret and one holding only the new one both verify every delivery', async (t) => {
  const project = uniqueName('grace');
  const key = await service.issueKey(project);
  const path = `/${project}`;
  const endpoint = await createEndpoint(service, key, receiver.url(path));
  const [before] = await deliveriesOf(key, path, 1);
  t.is(signaturesOf(before!).length, 1, 'one signature before any rotation');

  const rotated = await manage(service, key, 'POST', endpoint.id, 'rotate_secret', { body: {} });
  t.is(rotated.status, 200, rotated.text);
  const fresh = rotated.body.secret as string;
  t.regex(fresh, /^whsec_[A-Za-z0-9+/]+=*$/);
  t.not(fresh, endpoint.secret);
  const { secret: _shown, ...rest } = rotated.body as Record<string, unknown>;
  t.deepEqual(rest, (await retrieveEndpoint(service, key, endpoint.id)).body, 'the endpoint as stored, with its new secret');
  t.false('secret' in (await retrieveEndpoint(service, key, endpoint.id)).body, 'GET still never shows it');
  const doc = await endpointDoc(endpoint.id);
  const grace = (doc.previous_secret_expires_at as number) - Date.now();
  t.true(grace > 86_000_000 && grace <= 86_400_000, `the default grace period is a day (${grace} ms left)`);

  const during = await deliveriesOf(key, path, 3);
  for (const delivery of during) {
    t.is(signaturesOf(delivery).length, 2, 'two signatures');
    t.deepEqual(verifiesWith(endpoint.secret, delivery), BOTH, 'the old secret verifies');
    t.deepEqual(verifiesWith(fresh, delivery), BOTH, 'the new secret verifies');
    t.deepEqual(verifiesWith(`whsec_${Buffer.alloc(24, 7).toString('base64')}`, delivery), NEITHER, 'any other secret does not');
  }
  const [newer] = await deliveriesOf(key, path, 1);
  const signed = (secret: string) => signWebhook(secret, String(newer!.headers['webhook-id']), Number(newer!.headers['webhook-timestamp']), newer!.body);
  t.deepEqual(signaturesOf(newer!), [signed(fresh), signed(endpoint.secret)], 'v1,NEW v1,OLD');

  // A second rotation within the grace period: the secret it replaces is the one that keeps signing.
  const again = await manage(service, key, 'POST', endpoint.id, 'rotate_secret', { body: { expire_previous_in: 3600 } });
  t.is(again.status, 200, again.text);
  const third = again.body.secret as string;
  t.not(third, fresh);
  for (const delivery of await deliveriesOf(key, path, 2)) {
    t.is(signaturesOf(delivery).length, 2);
    t.deepEqual(verifiesWith(third, delivery), BOTH);
    t.deepEqual(verifiesWith(fresh, delivery), BOTH);
    t.deepEqual(verifiesWith(endpoint.secret, delivery), NEITHER, 'the first secret no longer signs');
  }
});

test('after a short grace period only the new secret verifies, retries of earlier events included', async (t) => {
  const project = uniqueName('expiry');
  const key = await service.issueKey(project);
  const queue = webhooksQueue(t, service);
  const path = `/${project}`;
  // The first delivery fails: an event whose first attempt is inside the grace period and its retry after it.
  receiver.on(path, (n) => (n === 0 ? { status: 500 } : { status: 200 }));
  const endpoint = await createEndpoint(service, key, receiver.url(path));

  const rotated = await manage(service, key, 'POST', endpoint.id, 'rotate_secret', { body: { expire_previous_in: 2 } });
  t.is(rotated.status, 200, rotated.text);
  const fresh = rotated.body.secret as string;
  const expiresAt = (await endpointDoc(endpoint.id)).previous_secret_expires_at as number;
  t.true(expiresAt > Date.now() - 10_000 && expiresAt <= Date.now() + 2000);

  const early = await createPaymentIntent(service, key);
  const [first] = await receiver.waitFor(path);
  t.is(first!.headers['webhook-id'], early.eventId);
  const deliveries = [first!, ...(await deliveriesOf(key, path, 1))];
  for (const delivery of deliveries) {
    // Signed while the previous secret was still live (its timestamp says when, to the second).
    if ((Number(delivery.headers['webhook-timestamp']) + 1) * 1000 <= expiresAt) {
      t.is(signaturesOf(delivery).length, 2);
      t.deepEqual(verifiesWith(endpoint.secret, delivery), BOTH);
    }
    t.deepEqual(verifiesWith(fresh, delivery), BOTH);
  }

  await until('the grace period to be over', () => (Date.now() > expiresAt + 1000 ? true : undefined), 10_000);
  await fireRetry(queue, early.eventId, endpoint.id);
  const retried = await receiver.waitFor(path, 3).then((all) => all.filter((r) => r.headers['webhook-id'] === early.eventId));
  const after = [retried[1]!, ...(await deliveriesOf(key, path, 2))];
  for (const delivery of after) {
    t.is(signaturesOf(delivery).length, 1, 'one signature once the previous secret expired');
    t.deepEqual(verifiesWith(fresh, delivery), BOTH, 'the new secret verifies');
    t.deepEqual(verifiesWith(endpoint.secret, delivery), NEITHER, 'the old secret does not');
  }
});

test('expire_previous_in=0 cuts over at once: the next delivery verifies with the new secret only', async (t) => {
  const project = uniqueName('cutover');
  const key = await service.issueKey(project);
  const path = `/${project}`;
  const endpoint = await createEndpoint(service, key, receiver.url(path));
  const rotated = await manage(service, key, 'POST', endpoint.id, 'rotate_secret', { body: { expire_previous_in: 0 } });
  t.is(rotated.status, 200, rotated.text);
  const fresh = rotated.body.secret as string;
  t.not(fresh, endpoint.secret);
  t.is((await endpointDoc(endpoint.id)).previous_secret, null, 'the old secret is not kept');

  for (const delivery of await deliveriesOf(key, path, 2)) {
    t.is(signaturesOf(delivery).length, 1);
    t.deepEqual(verifiesWith(fresh, delivery), BOTH);
    t.deepEqual(verifiesWith(endpoint.secret, delivery), NEITHER);
  }
  // The test event is signed the same way.
  const tested = await manage(service, key, 'POST', endpoint.id, 'test');
  t.is(tested.status, 200, tested.text);
  const sent = receiver.received(path).find((r) => r.headers['webhook-id'] === tested.body.event);
  t.truthy(sent);
  t.deepEqual(verifiesWith(fresh, sent!), BOTH);
  t.deepEqual(verifiesWith(endpoint.secret, sent!), NEITHER);
});
