/**
 * Delivering again (DESIGN.md section 9), black-box: `recover` re-delivers what an
 * endpoint has not yet received, `resend` one event, and `test` sends a
 * `webhook_endpoint.test` event that is never stored. The retry schedule is an hour
 * long, so the original delivery chains never succeed by themselves during a test:
 * whatever arrives again was sent by the request under test.
 */
import test from 'ava';
import { QUEUES } from '../../../common/jobs.js';
import type { Received } from '../../helpers/receiver.js';
import { Receiver } from '../../helpers/receiver.js';
import { Service, uniqueName, until, untilIdle } from '../../helpers/service.js';
import { createEndpoint, createPaymentIntent, listAttempts, waitForAttempts } from '../../helpers/webhook-fixtures.js';
import { assertError, finishedChain, fireRetry, manage, retrieveEndpoint, verifiesWith, webhooksQueue } from '../../helpers/webhook-management.js';

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
const nowSeconds = () => Math.floor(Date.now() / 1000);
const idOf = (r: Received) => String(r.headers['webhook-id']);

function parsed(r: Received): { id: string; object: string; type: string; livemode: boolean; data: { object: Record<string, unknown> } } {
  return JSON.parse(r.body.toString('utf8'));
}

test('recover re-delivers exactly the events without a successful attempt, once', async (t) => {
  const project = uniqueName('recover');
  const [key, liveKey, otherKey] = await Promise.all([service.issueKey(project), service.issueKey(project, true), service.issueKey(uniqueName('other'))]);
  const path = `/${project}`;
  let failing = false;
  receiver.on(path, () => (failing ? { status: 500, body: 'down' } : { status: 200, body: 'ok' }));

  // Older than the endpoint: never its business, even when `since` reaches back further.
  const older = await createPaymentIntent(service, key);
  const endpoint = await createEndpoint(service, key, receiver.url(path));

  const delivered = [];
  for (let i = 0; i < 3; i++) delivered.push(await createPaymentIntent(service, key));
  await waitForAttempts(service, key, endpoint.id, 3);

  failing = true;
  const missed: string[] = [];
  for (let i = 0; i < 19; i++) missed.push((await createPaymentIntent(service, key)).eventId);
  // An event of the other home (a transition's event, in `events`), for an intent already delivered.
  const canceled = await service.request('POST', `/v1/payment_intents/${delivered[0]!.id}/cancel`, { key, body: {} });
  t.is(canceled.status, 200, canceled.text);
  const attempts = await waitForAttempts(service, key, endpoint.id, 23, 90_000);
  const cancelEvent = attempts.find((a) => !a.succeeded && !missed.includes(a.event))!.event;
  missed.push(cancelEvent);
  t.is(new Set(missed).size, 20);
  t.is(attempts.filter((a) => a.succeeded).length, 3);
  // Events of another project and of the other mode are not this endpoint's.
  await createPaymentIntent(service, otherKey);
  await createPaymentIntent(service, liveKey);

  failing = false;
  const firstBodies = new Map(receiver.received(path).map((r) => [idOf(r), r.body]));
  const seenBefore = receiver.received(path).length;
  t.is(seenBefore, 23);
  const since = nowSeconds() - 3600;
  const recovered = await manage(service, key, 'POST', endpoint.id, 'recover', { body: { since }, idempotencyKey: `recover-${project}` });
  t.is(recovered.status, 200, recovered.text);
  t.deepEqual(recovered.body, { object: 'recovery', queued: 20, has_more: false });

  const again = await until(
    'the 20 missed events to arrive again',
    () => {
      const later = receiver.received(path).slice(seenBefore);
      return later.length >= 20 ? later : undefined;
    },
    90_000,
  );
  t.deepEqual(again.map(idOf).sort(), [...missed].sort(), 'exactly the events without a success');
  for (const delivery of again) {
    t.deepEqual(verifiesWith(endpoint.secret, delivery), BOTH);
    t.true(delivery.body.equals(firstBodies.get(idOf(delivery))!), 'the same event bytes as the first attempt');
  }
  t.false(again.map(idOf).includes(older.eventId), 'an event older than the endpoint is not recovered');

  const all = await waitForAttempts(service, key, endpoint.id, 43);
  const successes = new Map<string, number>();
  for (const a of all.filter((a) => a.succeeded)) successes.set(a.event, (successes.get(a.event) ?? 0) + 1);
  t.is(successes.size, 23, 'every event of the endpoint is now delivered');
  t.true([...successes.values()].every((n) => n === 1), 'each exactly once');

  // Nothing is left to recover, and a replay of the first request queues nothing again.
  const second = await manage(service, key, 'POST', endpoint.id, 'recover', { body: { since } });
  t.deepEqual(second.body, { object: 'recovery', queued: 0, has_more: false });
  const replay = await manage(service, key, 'POST', endpoint.id, 'recover', { body: { since }, idempotencyKey: `recover-${project}` });
  t.is(replay.status, 200);
  t.is(replay.text, recovered.text, 'the first answer, byte for byte');
  t.is(replay.headers.get('idempotent-replayed'), 'true');
  await untilIdle(service, [QUEUES.writes, QUEUES.events, QUEUES.webhooks]); // a second redelivery would have been made by now
  t.is(receiver.received(path).length, seenBefore + 20, 'no event was delivered twice by recover');
  t.is((await listAttempts(service, key, endpoint.id)).length, 43);
});

test('recover reaches back only to since: older failures stay as they are', async (t) => {
  const project = uniqueName('since');
  const key = await service.issueKey(project);
  const path = `/${project}`;
  let failing = true;
  receiver.on(path, () => (failing ? { status: 500 } : { status: 200 }));
  const endpoint = await createEndpoint(service, key, receiver.url(path));
  const old = await createPaymentIntent(service, key);
  await waitForAttempts(service, key, endpoint.id, 1);
  // `since` has whole seconds: the next one starts after the old event.
  const boundary = nowSeconds() + 1;
  await until('the next second', () => (nowSeconds() >= boundary ? true : undefined), 5000);
  const recent = await createPaymentIntent(service, key);
  await waitForAttempts(service, key, endpoint.id, 2);
  failing = false;

  const recovered = await manage(service, key, 'POST', endpoint.id, 'recover', { body: { since: boundary } });
  t.deepEqual(recovered.body, { object: 'recovery', queued: 1, has_more: false });
  const [, second] = await receiver.waitFor(path, 3).then((all) => all.slice(1));
  t.is(idOf(second!), recent.eventId);
  await untilIdle(service, [QUEUES.writes, QUEUES.events, QUEUES.webhooks]);
  t.is(receiver.received(path).length, 3);
  t.false(receiver.received(path).slice(2).map(idOf).includes(old.eventId));
});

test('resend delivers one past event again, with the same webhook-id and bytes, also to an endpoint created after it', async (t) => {
  const project = uniqueName('resend');
  const key = await service.issueKey(project);
  const path = `/${project}`;
  const endpoint = await createEndpoint(service, key, receiver.url(path));
  const { eventId } = await createPaymentIntent(service, key);
  const [first] = await receiver.waitFor(path);
  const later = await createEndpoint(service, key, receiver.url(`${path}/later`));

  const resent = await manage(service, key, 'POST', endpoint.id, 'resend', { body: { event: eventId } });
  t.is(resent.status, 200, resent.text);
  t.deepEqual(resent.body, { object: 'resend', event: eventId, webhook_endpoint: endpoint.id, queued: 1 });
  const [, again] = await receiver.waitFor(path, 2);
  t.is(idOf(again!), eventId);
  t.true(again!.body.equals(first!.body));
  t.deepEqual(verifiesWith(endpoint.secret, again!), BOTH);
  const attempts = await waitForAttempts(service, key, endpoint.id, 2);
  t.true(attempts.every((a) => a.event === eventId && a.succeeded));

  const toLater = await manage(service, key, 'POST', later.id, 'resend', { body: { event: eventId } });
  t.is(toLater.status, 200, toLater.text);
  const [delivered] = await receiver.waitFor(`${path}/later`);
  t.is(idOf(delivered!), eventId);
  t.true(delivered!.body.equals(first!.body));
  t.deepEqual(verifiesWith(later.secret, delivered!), BOTH);
  t.deepEqual(verifiesWith(endpoint.secret, delivered!), { ours: false, standard: false }, 'signed with that endpoint\'s own secret');
  await untilIdle(service, [QUEUES.writes, QUEUES.events, QUEUES.webhooks]);
  t.is(receiver.received(path).length, 2, 'the first endpoint got nothing from the second resend');
});

test('a redelivery that reaches the endpoint ends the event\'s first chain: its pending retry sends nothing', async (t) => {
  const project = uniqueName('ends-retry');
  const key = await service.issueKey(project);
  const path = `/${project}`;
  let failing = true;
  const accepted: string[] = [];
  receiver.on(path, (_n, received) => {
    if (failing) return { status: 500, body: 'down' };
    accepted.push(idOf(received));
    return { status: 200, body: 'ok' };
  });
  const endpoint = await createEndpoint(service, key, receiver.url(path));
  const resentOne = await createPaymentIntent(service, key);
  const leftAlone = await createPaymentIntent(service, key);
  await waitForAttempts(service, key, endpoint.id, 2);
  failing = false;

  const resent = await manage(service, key, 'POST', endpoint.id, 'resend', { body: { event: resentOne.eventId } });
  t.is(resent.status, 200, resent.text);
  await until('the resend to arrive', () => (accepted.includes(resentOne.eventId) ? true : undefined));
  // The worker notes the redelivery once the endpoint's 200 is back: waited on, not raced.
  const redis = service.redis();
  try {
    await until('the redelivery noted', async () => ((await redis.exists(`${service.prefix}:redelivered:${resentOne.eventId}:${endpoint.id}`)) === 1 ? true : undefined));
  } finally {
    redis.disconnect();
  }

  // Both first chains retry now: the resent event's is over, the other delivers.
  const queue = webhooksQueue(t, service);
  await fireRetry(queue, resentOne.eventId, endpoint.id);
  await fireRetry(queue, leftAlone.eventId, endpoint.id);
  t.like(await finishedChain(queue, resentOne.eventId, endpoint.id), { state: 'completed', returnvalue: { delivered: false, skipped: 'redelivered' } });
  t.like(await finishedChain(queue, leftAlone.eventId, endpoint.id), { state: 'completed', returnvalue: { delivered: true } });
  const delivered = (eventId: string) => accepted.filter((id) => id === eventId).length;
  t.is(delivered(resentOne.eventId), 1, 'the resent event reached the endpoint once');
  t.is(delivered(leftAlone.eventId), 1);
});

test('resend of an event of another project or mode, or of no event, answers 404 and sends nothing', async (t) => {
  const project = uniqueName('resend404');
  const [key, liveKey, otherKey] = await Promise.all([service.issueKey(project), service.issueKey(project, true), service.issueKey(uniqueName('elsewhere'))]);
  const path = `/${project}`;
  const endpoint = await createEndpoint(service, key, receiver.url(path));
  const theirs = await createPaymentIntent(service, otherKey);
  const live = await createPaymentIntent(service, liveKey);
  const unknown = `evt_${theirs.eventId.slice(4, -4)}zzzz`;

  for (const event of [theirs.eventId, live.eventId, unknown, theirs.id]) {
    const res = await manage(service, key, 'POST', endpoint.id, 'resend', { body: { event }, idempotencyKey: `resend-${event}` });
    assertError(t, res, 404, 'resource_missing', 'event');
  }
  await untilIdle(service, [QUEUES.writes, QUEUES.events, QUEUES.webhooks]);
  t.is(receiver.received(path).length, 0);
  t.deepEqual(await listAttempts(service, key, endpoint.id), []);
  const records = await (await service.db()).collection('idempotency_records').countDocuments({ project });
  t.is(records, 0, 'a refused resend is not recorded for its key');
});

test('test sends webhook_endpoint.test with the endpoint, to this endpoint only, answers with the attempt, and is never listed', async (t) => {
  const project = uniqueName('test');
  const key = await service.issueKey(project);
  const path = `/${project}`;
  receiver.on(path, () => ({ status: 200, body: 'got it' }));
  const created = await service.request('POST', '/v1/webhook_endpoints', {
    key,
    body: { url: receiver.url(path), description: 'the one', metadata: { team: 'payments' } },
  });
  t.is(created.status, 200, created.text);
  const endpoint = created.body as { id: string; secret: string };
  const bystander = await createEndpoint(service, key, receiver.url(`${path}/all`));

  const res = await manage(service, key, 'POST', endpoint.id, 'test');
  t.is(res.status, 200, res.text);
  const attempt = res.body;
  t.like(attempt, {
    object: 'webhook_attempt',
    webhook_endpoint: endpoint.id,
    attempt: 1,
    succeeded: true,
    http_status: 200,
    error: null,
    response_body: 'got it',
    livemode: false,
  });
  t.regex(attempt.id, /^[a-z]+_/);
  t.regex(attempt.event, /^evt_/);
  t.true(Number.isInteger(attempt.created) && attempt.duration_ms >= 0);

  const received = receiver.received(path);
  t.is(received.length, 1, 'one request, already made when the answer came');
  t.is(idOf(received[0]!), attempt.event);
  t.deepEqual(verifiesWith(endpoint.secret, received[0]!), BOTH);
  const event = parsed(received[0]!);
  t.like(event, { id: attempt.event, object: 'event', type: 'webhook_endpoint.test', livemode: false });
  t.deepEqual(event.data.object, (await retrieveEndpoint(service, key, endpoint.id)).body, 'the endpoint as GET shows it');
  t.false('secret' in event.data.object, 'without its secret');
  t.false(received[0]!.body.toString('utf8').includes(endpoint.secret));

  const events = await service.request('GET', '/v1/events?limit=100', { key });
  t.is(events.status, 200);
  t.deepEqual(events.body.data, [], 'not listed');
  assertError(t, await service.request('GET', `/v1/events/${attempt.event}`, { key }), 404, 'resource_missing', 'id');
  await untilIdle(service, [QUEUES.writes, QUEUES.events, QUEUES.webhooks]);
  t.is(receiver.received(`${path}/all`).length, 0, 'an endpoint subscribed to * does not get it');
  t.deepEqual(await listAttempts(service, key, bystander.id), []);
  t.deepEqual((await listAttempts(service, key, endpoint.id)).map((a) => a.id), [attempt.id], 'the attempt is the endpoint\'s');
});

test('a test whose receiver fails answers with the failed attempt', async (t) => {
  const project = uniqueName('testfail');
  const key = await service.issueKey(project);
  const path = `/${project}`;
  receiver.on(path, () => ({ status: 500, body: 'not today' }));
  const endpoint = await createEndpoint(service, key, receiver.url(path));
  const res = await manage(service, key, 'POST', endpoint.id, 'test');
  t.is(res.status, 200, res.text);
  t.like(res.body, { object: 'webhook_attempt', webhook_endpoint: endpoint.id, succeeded: false, http_status: 500, error: 'http_error', response_body: 'not today' });
  t.is(receiver.received(path).length, 1);
  t.is((await retrieveEndpoint(service, key, endpoint.id)).body.status, 'enabled');
});
