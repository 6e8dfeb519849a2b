/**
 * Bad input to the changes of a webhook endpoint (DESIGN.md sections 4 and 9),
 * black-box: the rules of create for an update (live-mode URL rules included), the
 * ranges of `expire_previous_in` and `since`, unknown fields, unknown endpoints. A
 * refused request leaves nothing behind: the endpoint is as it was, nothing is sent,
 * no job is enqueued and its idempotency key stays free.
 */
import test from 'ava';
import { Queue } from 'bullmq';
import type { WebhookEndpointDoc } from '../../../common/documents.js';
import { QUEUES } from '../../../common/jobs.js';
import { Receiver } from '../../helpers/receiver.js';
import { Service, uniqueName, untilIdle } from '../../helpers/service.js';
import { createEndpoint, createPaymentIntent, listAttempts } from '../../helpers/webhook-fixtures.js';
import { assertError, manage, retrieveEndpoint, WE } from '../../helpers/webhook-management.js';

let service: Service;
let receiver: Receiver;

test.before(async () => {
  [service, receiver] = await Promise.all([Service.start(), Receiver.start()]);
});

test.after.always(async () => {
  await Promise.all([service?.stop(), receiver?.close()]);
});

const DAY = 86_400;
const nowSeconds = () => Math.floor(Date.now() / 1000);

type Method = 'POST' | 'DELETE';
/** [what, method, action, body (a function: `since` is relative to now), code, param, live mode] */
type Case = [string, Method, string, () => unknown, string, string, boolean?];

const cases: Case[] = [
  ['an update to an ftp url', 'POST', '', () => ({ url: 'ftp://hooks.example.test/x' }), 'url_invalid', 'url'],
  ['an update to a relative url', 'POST', '', () => ({ url: '/hook' }), 'url_invalid', 'url'],
  ['an update to an empty url', 'POST', '', () => ({ url: '' }), 'url_invalid', 'url'],
  ['an update to a url with credentials', 'POST', '', () => ({ url: 'https://user:pw@hooks.example.test/x' }), 'url_invalid', 'url'],
  ['an update to a url over 2048 characters', 'POST', '', () => ({ url: `https://hooks.example.test/${'a'.repeat(2030)}` }), 'url_invalid', 'url'],
  ['an update to a url with a space', 'POST', '', () => ({ url: 'https://hooks.example.test/a b' }), 'url_invalid', 'url'],
  ['an update to a url that is not a string', 'POST', '', () => ({ url: 42 }), 'parameter_invalid_string', 'url'],
  ['an update to http in live mode', 'POST', '', () => ({ url: 'http://hooks.example.test/x' }), 'url_invalid', 'url', true],
  ['an update to 127.0.0.1 in live mode', 'POST', '', () => ({ url: 'https://127.0.0.1/x' }), 'url_invalid', 'url', true],
  ['an update to localhost in live mode', 'POST', '', () => ({ url: 'https://localhost/x' }), 'url_invalid', 'url', true],
  ['an update to a private address in live mode', 'POST', '', () => ({ url: 'https://192.168.1.1/x' }), 'url_invalid', 'url', true],
  ['an update to empty enabled_events', 'POST', '', () => ({ enabled_events: [] }), 'parameter_invalid_empty', 'enabled_events'],
  ['an update to an unknown event type', 'POST', '', () => ({ enabled_events: ['*', 'charge.succeeded'] }), 'event_type_invalid', 'enabled_events[1]'],
  ['an update subscribing to webhook_endpoint.test', 'POST', '', () => ({ enabled_events: ['webhook_endpoint.test'] }), 'event_type_invalid', 'enabled_events[0]'],
  ['an update with disabled not a boolean', 'POST', '', () => ({ disabled: 'yes' }), 'parameter_invalid_boolean', 'disabled'],
  ['an update with metadata not an object', 'POST', '', () => ({ metadata: 'x' }), 'metadata_invalid', 'metadata'],
  ['an update with a metadata value not a string', 'POST', '', () => ({ metadata: { n: 5 } }), 'metadata_invalid', 'metadata[n]'],
  ['an update of the secret', 'POST', '', () => ({ secret: 'whsec_AAAA' }), 'parameter_unknown', 'secret'],
  ['an update of the status', 'POST', '', () => ({ status: 'disabled' }), 'parameter_unknown', 'status'],
  ['a rotation with expire_previous_in below 0', 'POST', 'rotate_secret', () => ({ expire_previous_in: -1 }), 'parameter_out_of_range', 'expire_previous_in'],
  ['a rotation with expire_previous_in above 86400', 'POST', 'rotate_secret', () => ({ expire_previous_in: DAY + 1 }), 'parameter_out_of_range', 'expire_previous_in'],
  ['a rotation with a fractional expire_previous_in', 'POST', 'rotate_secret', () => ({ expire_previous_in: 1.5 }), 'parameter_invalid_integer', 'expire_previous_in'],
  ['a rotation with expire_previous_in as a JSON string', 'POST', 'rotate_secret', () => ({ expire_previous_in: '60' }), 'parameter_invalid_integer', 'expire_previous_in'],
  ['a rotation with an unknown field', 'POST', 'rotate_secret', () => ({ secret: 'whsec_AAAA' }), 'parameter_unknown', 'secret'],
  ['a resend without an event', 'POST', 'resend', () => ({}), 'parameter_missing', 'event'],
  ['a resend with an event that is not a string', 'POST', 'resend', () => ({ event: 7 }), 'parameter_invalid_string', 'event'],
  ['a resend with an unknown field', 'POST', 'resend', () => ({ event: 'evt_x', to: 'all' }), 'parameter_unknown', 'to'],
  ['a recover without since', 'POST', 'recover', () => ({}), 'parameter_missing', 'since'],
  ['a recover since more than 7 days ago', 'POST', 'recover', () => ({ since: nowSeconds() - 7 * DAY - 120 }), 'parameter_out_of_range', 'since'],
  ['a recover since an hour from now', 'POST', 'recover', () => ({ since: nowSeconds() + 3600 }), 'parameter_out_of_range', 'since'],
  ['a recover since that is not an integer', 'POST', 'recover', () => ({ since: 'yesterday' }), 'parameter_invalid_integer', 'since'],
  ['a recover with an unknown field', 'POST', 'recover', () => ({ since: nowSeconds(), until: nowSeconds() }), 'parameter_unknown', 'until'],
  ['a test with a field', 'POST', 'test', () => ({ type: 'payment_intent.created' }), 'parameter_unknown', 'type'],
  ['a delete with a field', 'DELETE', '', () => ({ force: true }), 'parameter_unknown', 'force'],
];

for (const [what, method, action, body, code, param, live] of cases) {
  test(`refuses ${what}: 400 ${code}, and leaves the endpoint as it was`, async (t) => {
    const project = uniqueName('bad');
    const key = await service.issueKey(project, Boolean(live));
    const path = `/${project}`;
    const endpoint = await createEndpoint(service, key, live ? `https://hooks.example.test${path}` : receiver.url(path));
    const before = (await retrieveEndpoint(service, key, endpoint.id)).text;
    const res = await manage(service, key, method, endpoint.id, action, { body: body(), idempotencyKey: `bad-${project}` });
    assertError(t, res, 400, code, param);
    t.is(res.body.error.type, 'invalid_request_error');
    t.is(res.body.error.request_id, res.headers.get('request-id'));
    t.is((await retrieveEndpoint(service, key, endpoint.id)).text, before);
    const doc = await (await service.db()).collection<WebhookEndpointDoc>('webhook_endpoints').findOne({ _id: endpoint.id });
    t.is(doc?.secret, endpoint.secret);
    t.is(await (await service.db()).collection('idempotency_records').countDocuments({ project }), 0, 'nothing recorded for the key');
  });
}

test('an unknown endpoint id is 404 resource_missing on every change', async (t) => {
  const key = await service.issueKey(uniqueName('unknown'));
  const { eventId } = await createPaymentIntent(service, key);
  const requests: Array<[Method, string, unknown]> = [
    ['POST', '', { description: 'x' }],
    ['DELETE', '', undefined],
    ['POST', 'rotate_secret', {}],
    ['POST', 'resend', { event: eventId }],
    ['POST', 'recover', { since: nowSeconds() - 60 }],
    ['POST', 'test', undefined],
  ];
  for (const id of ['we_00000000000000000000000000', 'nonsense']) {
    for (const [method, action, body] of requests) {
      assertError(t, await manage(service, key, method, id, action, { body, idempotencyKey: `unknown-${id}-${action}-${method}` }), 404, 'resource_missing', 'id');
    }
  }
});

test('refused changes leave no trace: no job, no delivery, no attempt, and their keys work afterwards', async (t) => {
  const project = uniqueName('trace');
  const key = await service.issueKey(project);
  const path = `/${project}`;
  const endpoint = await createEndpoint(service, key, receiver.url(path));
  const { eventId } = await createPaymentIntent(service, key);
  await receiver.waitFor(path);
  const before = (await retrieveEndpoint(service, key, endpoint.id)).text;

  const refused: Array<[string, unknown, unknown]> = [
    ['', { url: 'ftp://x.test/' }, { description: 'fine' }],
    ['rotate_secret', { expire_previous_in: DAY + 1 }, { expire_previous_in: 0 }],
    ['resend', { event: eventId, extra: 1 }, { event: eventId }],
    ['recover', { since: nowSeconds() - 8 * DAY }, { since: nowSeconds() - 60 }],
    ['test', { x: 1 }, {}],
  ];
  for (const [action, bad] of refused) {
    const res = await manage(service, key, 'POST', endpoint.id, action, { body: bad, idempotencyKey: `trace-${action}` });
    t.is(res.status, 400, `${action}: ${res.text}`);
  }
  const missingEvent = await manage(service, key, 'POST', endpoint.id, 'resend', { body: { event: 'evt_00000000000000000000000000' }, idempotencyKey: 'trace-missing' });
  assertError(t, missingEvent, 404, 'resource_missing', 'event');

  const queue = new Queue(QUEUES.writes, { connection: { url: service.env.REDIS_URL }, prefix: service.prefix });
  t.teardown(() => queue.close());
  const jobs = await queue.getJobs(['waiting', 'active', 'completed', 'failed', 'delayed', 'prioritized']);
  t.deepEqual(jobs.filter((job) => job.data?.project === project && job.data?.target === endpoint.id), [], 'no job was enqueued');
  await untilIdle(service, [QUEUES.writes, QUEUES.events, QUEUES.webhooks]);
  t.is(receiver.received(path).length, 1, 'nothing was sent');
  t.is((await listAttempts(service, key, endpoint.id)).length, 1);
  t.is((await retrieveEndpoint(service, key, endpoint.id)).text, before);
  t.is(await (await service.db()).collection('idempotency_records').countDocuments({ project }), 0);

  // The keys of refused requests are free: the same key with a good body is processed, not "reused".
  for (const [action, , good] of refused) {
    const res = await manage(service, key, 'POST', endpoint.id, action, { body: good, idempotencyKey: `trace-${action}` });
    t.is(res.status, 200, `${action}: ${res.text}`);
    t.is(res.headers.get('idempotent-replayed'), null);
  }
  const resent = await manage(service, key, 'POST', endpoint.id, 'resend', { body: { event: eventId }, idempotencyKey: 'trace-missing' });
  t.is(resent.status, 200, resent.text);
});

test('metadata merged past 50 keys is refused and leaves the endpoint as it was', async (t) => {
  const key = await service.issueKey(uniqueName('meta'));
  const metadata = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, 'v']));
  const created = await service.request('POST', WE, { key, body: { url: 'https://hooks.example.test/meta', metadata } });
  t.is(created.status, 200, created.text);
  const id = created.body.id as string;
  const before = (await retrieveEndpoint(service, key, id)).text;

  assertError(t, await manage(service, key, 'POST', id, '', { body: { metadata: { extra: 'one too many' } } }), 400, 'metadata_invalid', 'metadata');
  t.is((await retrieveEndpoint(service, key, id)).text, before);
  // Replacing one key, or removing one and adding another, stays within the limit.
  const swapped = await manage(service, key, 'POST', id, '', { body: { metadata: { k0: '', extra: 'fits' } } });
  t.is(swapped.status, 200, swapped.text);
  t.is(Object.keys(swapped.body.metadata).length, 50);
  t.is(swapped.body.metadata.extra, 'fits');
  t.false('k0' in swapped.body.metadata);
});
