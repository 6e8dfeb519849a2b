/**
 * Idempotency keys on the changes of a webhook endpoint (DESIGN.md sections 4 and 9),
 * black-box: a replay returns the first answer byte for byte with
 * `Idempotent-Replayed: true` and does nothing again; a rotation's secret is shown
 * again only to the key that made it.
 */
import test from 'ava';
import type { ExecutionContext } from 'ava';
import { QUEUES } from '../../../common/jobs.js';
import { signWebhook } from '../../../common/webhooks/sign.js';
import { Receiver } from '../../helpers/receiver.js';
import type { ApiResponse } from '../../helpers/service.js';
import { Service, uniqueName, untilIdle } from '../../helpers/service.js';
import { createEndpoint, createPaymentIntent, listAttempts, waitForAttempts } from '../../helpers/webhook-fixtures.js';
import { assertError, manage, retrieveEndpoint, signaturesOf, WE } from '../../helpers/webhook-management.js';

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

function assertReplay(t: ExecutionContext, first: ApiResponse, replay: ApiResponse): void {
  t.is(first.headers.get('idempotent-replayed'), null, 'the first answer is not a replay');
  t.is(replay.status, first.status);
  t.is(replay.text, first.text, 'the first answer, byte for byte');
  t.is(replay.headers.get('idempotent-replayed'), 'true');
}

test('update: a replay returns the first answer, not the endpoint as it is now, and changes nothing again', async (t) => {
  const key = await service.issueKey(uniqueName('update'));
  const endpoint = await createEndpoint(service, key, 'https://hooks.example.test/update');
  const body = { description: 'first', metadata: { round: '1' } };
  const first = await manage(service, key, 'POST', endpoint.id, '', { body, idempotencyKey: 'update-1' });
  t.is(first.status, 200, first.text);
  const later = await manage(service, key, 'POST', endpoint.id, '', { body: { description: 'second', metadata: { round: '' } } });
  t.is(later.status, 200, later.text);

  const replay = await manage(service, key, 'POST', endpoint.id, '', { body, idempotencyKey: 'update-1' });
  assertReplay(t, first, replay);
  const now = (await retrieveEndpoint(service, key, endpoint.id)).body;
  t.is(now.description, 'second', 'the replay did not apply the update again');
  t.deepEqual(now.metadata, {});

  assertError(t, await manage(service, key, 'POST', endpoint.id, '', { body: { description: 'other' }, idempotencyKey: 'update-1' }), 400, 'idempotency_key_reused');
  const other = await createEndpoint(service, key, 'https://hooks.example.test/other');
  assertError(t, await manage(service, key, 'POST', other.id, '', { body, idempotencyKey: 'update-1' }), 400, 'idempotency_key_reused');
  t.is((await retrieveEndpoint(service, key, other.id)).body.description, null);
});

test('delete: a replay returns the first answer although the endpoint is gone', async (t) => {
  const key = await service.issueKey(uniqueName('delete'));
  const endpoint = await createEndpoint(service, key, 'https://hooks.example.test/delete');
  const first = await manage(service, key, 'DELETE', endpoint.id, '', { idempotencyKey: 'delete-1' });
  t.is(first.status, 200, first.text);
  t.deepEqual(first.body, { id: endpoint.id, object: 'webhook_endpoint', deleted: true });
  assertReplay(t, first, await manage(service, key, 'DELETE', endpoint.id, '', { idempotencyKey: 'delete-1' }));
  assertError(t, await manage(service, key, 'DELETE', endpoint.id), 404, 'resource_missing', 'id');
  assertError(t, await manage(service, key, 'DELETE', endpoint.id, '', { idempotencyKey: 'delete-2' }), 404, 'resource_missing', 'id');
});

test('rotate_secret: the secret is replayed only to the key that made it; another key rotates again', async (t) => {
  const project = uniqueName('rotate');
  const key = await service.issueKey(project);
  const path = `/${project}`;
  const created = await service.request('POST', WE, { key, body: { url: receiver.url(path) }, headers: { 'Idempotency-Key': 'create-1' } });
  t.is(created.status, 200, created.text);
  const original = created.body.secret as string;
  const id = created.body.id as string;

  const body = { expire_previous_in: 600 };
  const first = await manage(service, key, 'POST', id, 'rotate_secret', { body, idempotencyKey: 'rotate-a' });
  t.is(first.status, 200, first.text);
  const secretA = first.body.secret as string;
  t.not(secretA, original);
  assertReplay(t, first, await manage(service, key, 'POST', id, 'rotate_secret', { body, idempotencyKey: 'rotate-a' }));

  const second = await manage(service, key, 'POST', id, 'rotate_secret', { body, idempotencyKey: 'rotate-b' });
  t.is(second.status, 200, second.text);
  t.is(second.headers.get('idempotent-replayed'), null);
  const secretB = second.body.secret as string;
  t.not(secretB, secretA, 'another key gets a new secret, not the first one');
  t.not(secretB, original);
  const replayB = await manage(service, key, 'POST', id, 'rotate_secret', { body, idempotencyKey: 'rotate-b' });
  assertReplay(t, second, replayB);
  t.false(replayB.text.includes(secretA), 'the other key\'s secret is not in it');
  assertReplay(t, first, await manage(service, key, 'POST', id, 'rotate_secret', { body, idempotencyKey: 'rotate-a' }));

  // The create's replay keeps the secret it first showed, whatever rotated since.
  const createReplay = await service.request('POST', WE, { key, body: { url: receiver.url(path) }, headers: { 'Idempotency-Key': 'create-1' } });
  assertReplay(t, created, createReplay);
  t.false((await retrieveEndpoint(service, key, id)).text.includes('whsec_'));

  // Replays rotated nothing: a delivery is signed with B, and A beside it (its grace period).
  const { eventId } = await createPaymentIntent(service, key);
  const [delivery] = await receiver.waitFor(path);
  t.is(delivery!.headers['webhook-id'], eventId);
  const ts = Number(delivery!.headers['webhook-timestamp']);
  t.deepEqual(signaturesOf(delivery!), [signWebhook(secretB, eventId, ts, delivery!.body), signWebhook(secretA, eventId, ts, delivery!.body)]);
});

test('resend: a replay queues nothing again', async (t) => {
  const project = uniqueName('resend');
  const key = await service.issueKey(project);
  const path = `/${project}`;
  const endpoint = await createEndpoint(service, key, receiver.url(path));
  const { eventId } = await createPaymentIntent(service, key);
  await receiver.waitFor(path);

  const first = await manage(service, key, 'POST', endpoint.id, 'resend', { body: { event: eventId }, idempotencyKey: 'resend-1' });
  t.is(first.status, 200, first.text);
  await receiver.waitFor(path, 2);
  assertReplay(t, first, await manage(service, key, 'POST', endpoint.id, 'resend', { body: { event: eventId }, idempotencyKey: 'resend-1' }));
  await untilIdle(service, [QUEUES.writes, QUEUES.events, QUEUES.webhooks]); // a second resend would have been made by now
  t.is(receiver.received(path).length, 2);
  t.is((await listAttempts(service, key, endpoint.id)).length, 2);
});

test('recover: a replay queues nothing again', async (t) => {
  const project = uniqueName('recover');
  const key = await service.issueKey(project);
  const path = `/${project}`;
  let failing = true;
  receiver.on(path, () => (failing ? { status: 500 } : { status: 200 }));
  const endpoint = await createEndpoint(service, key, receiver.url(path));
  const { eventId } = await createPaymentIntent(service, key);
  await waitForAttempts(service, key, endpoint.id, 1);
  failing = false;

  const body = { since: Math.floor(Date.now() / 1000) - 600 };
  const first = await manage(service, key, 'POST', endpoint.id, 'recover', { body, idempotencyKey: 'recover-1' });
  t.is(first.status, 200, first.text);
  t.deepEqual(first.body, { object: 'recovery', queued: 1, has_more: false });
  const [, again] = await receiver.waitFor(path, 2);
  t.is(again!.headers['webhook-id'], eventId);
  await waitForAttempts(service, key, endpoint.id, 2);
  assertReplay(t, first, await manage(service, key, 'POST', endpoint.id, 'recover', { body, idempotencyKey: 'recover-1' }));
  await untilIdle(service, [QUEUES.writes, QUEUES.events, QUEUES.webhooks]);
  t.is(receiver.received(path).length, 2);
});

test('test: a replay answers with the first attempt and sends nothing again', async (t) => {
  const project = uniqueName('test');
  const key = await service.issueKey(project);
  const path = `/${project}`;
  const endpoint = await createEndpoint(service, key, receiver.url(path));
  const first = await manage(service, key, 'POST', endpoint.id, 'test', { idempotencyKey: 'test-1' });
  t.is(first.status, 200, first.text);
  t.is(first.body.object, 'webhook_attempt');
  assertReplay(t, first, await manage(service, key, 'POST', endpoint.id, 'test', { idempotencyKey: 'test-1' }));
  // An explicit empty body is the same request as none.
  assertReplay(t, first, await manage(service, key, 'POST', endpoint.id, 'test', { body: {}, idempotencyKey: 'test-1' }));
  await untilIdle(service, [QUEUES.writes, QUEUES.events, QUEUES.webhooks]);
  t.is(receiver.received(path).length, 1, 'one test event');
  t.deepEqual((await listAttempts(service, key, endpoint.id)).map((a) => a.id), [first.body.id]);

  const another = await manage(service, key, 'POST', endpoint.id, 'test', { idempotencyKey: 'test-2' });
  t.is(another.status, 200);
  t.not(another.body.id, first.body.id);
  t.not(another.body.event, first.body.event, 'another test is another event');
  t.is(receiver.received(path).length, 2);
});
