/**
 * The HTTP contract of DESIGN.md section 4, black-box: a real api process and two
 * real workers over Redis and FerretDB.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import test from 'ava';
import { Queue } from 'bullmq';
import { QUEUES } from '../../common/jobs.js';
import { DECLINE_CODES } from '../../common/lifecycle.js';
import { Service, sleep, uniqueName, type ApiResponse } from '../helpers/service.js';

let service: Service;

test.before(async () => {
  service = await Service.start({ workers: 2 });
});

test.after.always(async () => {
  await service?.stop();
});

const PI = '/v1/payment_intents';
const WE = '/v1/webhook_endpoints';

function assertError(t: import('ava').ExecutionContext, res: ApiResponse, status: number, code: string, param?: string) {
  t.is(res.status, status, res.text);
  const error = res.body?.error;
  t.truthy(error, `no error envelope in ${res.text}`);
  t.is(error.code, code, res.text);
  t.is(error.param, param, `param of ${res.text}`);
  t.is(typeof error.message, 'string');
  t.is(error.request_id, res.headers.get('request-id'));
  t.regex(error.request_id, /^req_[0-9A-Za-z]{26}$/);
  t.regex(error.doc_url, new RegExp(`^http://127\\.0\\.0\\.1:\\d+/docs/errors#${code}$`));
  t.deepEqual(Object.keys(res.body), ['error']);
  t.false(res.text.includes('    at '), 'no stack trace');
}

async function countIn(collection: string, project: string): Promise<number> {
  const db = await service.db();
  return db.collection(collection).countDocuments({ project });
}

test('creates a payment intent with every field defaulted as the contract says', async (t) => {
  const key = await service.issueKey('defaults');
  const before = Math.floor(Date.now() / 1000);
  const res = await service.request('POST', PI, { key, body: { amount: 1000 } });
  t.is(res.status, 200, res.text);
  const pi = res.body;
  t.regex(pi.id, /^pi_[0-9A-Za-z]{26}$/);
  t.deepEqual(Object.keys(pi), [
    'id', 'object', 'amount', 'amount_received', 'amount_refunded', 'currency', 'description', 'status', 'client_secret', 'automatic_operator',
    'allowed_operators', 'selected_operator', 'next_action', 'last_payment_error', 'payment_details', 'canceled_at',
    'cancellation_reason', 'metadata', 'livemode', 'created', 'expires_at',
  ]);
  t.like(pi, {
    object: 'payment_intent', amount: 1000, currency: 'xof', description: null, status: 'new',
    automatic_operator: true, selected_operator: null, next_action: null, last_payment_error: null, payment_details: null,
    canceled_at: null, cancellation_reason: null, livemode: false,
  });
  t.deepEqual(pi.allowed_operators, ['mtn_momo', 'orange_money', 'moov_money', 'wave', 'airtel_money', 'mpesa']);
  t.deepEqual(pi.metadata, {});
  t.true(pi.client_secret.startsWith(`${pi.id}_secret_`));
  t.true(pi.created >= before - 1 && pi.created <= before + 5);
  t.is(pi.expires_at, pi.created + 86400);
  t.regex(res.headers.get('request-id') ?? '', /^req_/);
});

test('creates a payment intent with every field given, and retrieves it as created, client secret included', async (t) => {
  const key = await service.issueKey('full');
  const expires = Math.floor(Date.now() / 1000) + 3600;
  const body: Record<string, unknown> = {
    amount: 999999999999, currency: 'XOF', description: '💳'.repeat(1000), allowed_operators: ['wave', 'mpesa'],
    selected_operator: 'mpesa', expires_at: expires,
    // JSON.parse, because a `__proto__` key in an object literal sets the prototype instead.
    metadata: JSON.parse('{"a.b":"dot","$dollar":"sign","__proto__":"proto","ключ":"значение"}'),
  };
  const res = await service.request('POST', PI, { key, body });
  t.is(res.status, 200, res.text);
  t.like(res.body, {
    amount: 999999999999, currency: 'xof', automatic_operator: false, selected_operator: 'mpesa', expires_at: expires,
  });
  t.deepEqual(res.body.allowed_operators, ['wave', 'mpesa']);
  t.is([...res.body.description].length, 1000);
  t.true(res.text.includes('"metadata":{"a.b":"dot","$dollar":"sign","__proto__":"proto","ключ":"значение"}'));

  const got = await service.request('GET', `${PI}/${res.body.id}`, { key });
  t.is(got.status, 200, got.text);
  t.deepEqual(got.body, res.body);
  t.true(got.text.includes('"__proto__":"proto"'));
});

test('creates, retrieves and lists webhook endpoints; the secret is only in the create response', async (t) => {
  const key = await service.issueKey('hooks');
  const res = await service.request('POST', WE, {
    key,
    body: { url: 'http://127.0.0.1:9/hook', enabled_events: ['payment_intent.created'], description: 'orders', metadata: { team: 'x' } },
  });
  t.is(res.status, 200, res.text);
  t.regex(res.body.id, /^we_[0-9A-Za-z]{26}$/);
  t.like(res.body, { object: 'webhook_endpoint', url: 'http://127.0.0.1:9/hook', status: 'enabled', livemode: false, description: 'orders' });
  t.deepEqual(res.body.enabled_events, ['payment_intent.created']);
  t.deepEqual(res.body.metadata, { team: 'x' });
  t.regex(res.body.secret, /^whsec_[A-Za-z0-9+/]+=*$/);

  const defaults = await service.request('POST', WE, { key, body: { url: 'https://example.test/h' } });
  t.deepEqual(defaults.body.enabled_events, ['*']);
  t.is(defaults.body.description, null);

  const got = await service.request('GET', `${WE}/${res.body.id}`, { key });
  t.is(got.status, 200);
  t.is(got.body.secret, undefined);
  const { secret: _s, ...rest } = res.body;
  t.deepEqual(got.body, rest);

  const list = await service.request('GET', WE, { key });
  t.is(list.status, 200);
  t.deepEqual(list.body.data.map((e: { id: string }) => e.id), [defaults.body.id, res.body.id]);
  t.false(list.text.includes('whsec_'));
  t.deepEqual(Object.keys(list.body), ['object', 'url', 'has_more', 'data']);
  t.like(list.body, { object: 'list', url: WE, has_more: false });
});

test('answers 401 before anything else: no key, an unknown key (by Bearer or Basic), even with a broken body', async (t) => {
  assertError(t, await service.request('GET', PI), 401, 'api_key_missing');
  assertError(t, await service.request('GET', PI, { headers: { Authorization: 'Token sk_test_x' } }), 401, 'api_key_missing');
  // Basic foo:bar: the key "foo", as `curl -u foo:bar` would send it (DESIGN.md section 13).
  assertError(t, await service.request('GET', PI, { headers: { Authorization: 'Basic Zm9vOmJhcg==' } }), 401, 'api_key_invalid');
  assertError(t, await service.request('GET', PI, { key: `sk_test_${'x'.repeat(40)}` }), 401, 'api_key_invalid');
  assertError(t, await service.request('GET', PI, { key: 'nonsense' }), 401, 'api_key_invalid');
  assertError(
    t,
    await service.request('POST', PI, { rawBody: '{broken', headers: { 'Content-Type': 'application/json' } }),
    401,
    'api_key_missing',
  );
});

test('routes: unknown path is 404 route_not_found, a wrong method is 405 with Allow', async (t) => {
  const key = await service.issueKey('routes');
  assertError(t, await service.request('GET', '/v1/nothing_here', { key }), 404, 'route_not_found');
  assertError(t, await service.request('GET', '/nope'), 404, 'route_not_found');
  // Paths match exactly: another case or a trailing slash is another path.
  assertError(t, await service.request('GET', '/v1/Payment_Intents', { key }), 404, 'route_not_found');
  assertError(t, await service.request('GET', '/V1/events', { key }), 404, 'route_not_found');
  assertError(t, await service.request('GET', `${PI}/`, { key }), 404, 'route_not_found');
  assertError(t, await service.request('POST', `${PI}/`, { key, body: { amount: 5 } }), 404, 'route_not_found');
  const res = await service.request('DELETE', PI, { key });
  assertError(t, res, 405, 'method_not_allowed');
  t.deepEqual(res.headers.get('allow')?.split(/, */).sort(), ['GET', 'HEAD', 'POST']);
  const one = await service.request('DELETE', `${PI}/pi_x`, { key });
  assertError(t, one, 405, 'method_not_allowed');
  t.deepEqual(one.headers.get('allow')?.split(/, */).sort(), ['GET', 'HEAD', 'POST']);
});

test('request bodies: content type, size, JSON shape', async (t) => {
  const key = await service.issueKey('bodies');
  assertError(t, await service.request('POST', PI, { key, rawBody: 'amount=5', headers: { 'Content-Type': 'text/plain' } }), 415, 'content_type_invalid');
  assertError(t, await service.request('POST', PI, { key, rawBody: '{"amount":5}' }), 415, 'content_type_invalid');
  assertError(t, await service.request('POST', PI, { key, rawBody: '{"amount":', headers: { 'Content-Type': 'application/json' } }), 400, 'invalid_json');
  assertError(t, await service.request('POST', PI, { key, rawBody: '[1,2]', headers: { 'Content-Type': 'application/json' } }), 400, 'invalid_json');
  assertError(t, await service.request('POST', PI, { key, rawBody: 'null', headers: { 'Content-Type': 'application/json' } }), 400, 'invalid_json');
  // A float is not an integer, even a whole one written as a float.
  for (const amount of ['5000.0', '5e3', '5.0E+3']) {
    assertError(t, await service.request('POST', PI, { key, rawBody: `{"amount":${amount}}`, headers: { 'Content-Type': 'application/json' } }), 400, 'parameter_invalid_integer', 'amount');
  }
  assertError(t, await service.request('POST', PI, { key, rawBody: '{"amount":50.5}', headers: { 'Content-Type': 'application/json' } }), 400, 'parameter_invalid_integer', 'amount');
  // White space alone is no JSON value; bytes that are not UTF-8 are not JSON text.
  assertError(t, await service.request('POST', PI, { key, rawBody: ' \n\t ', headers: { 'Content-Type': 'application/json' } }), 400, 'invalid_json');
  const notUtf8 = Buffer.concat([Buffer.from('{"amount":5,"description":"caf'), Buffer.from([0xe9]), Buffer.from('"}')]);
  const refused = await service.request('POST', PI, { key, rawBody: notUtf8, headers: { 'Content-Type': 'application/json' } });
  assertError(t, refused, 400, 'invalid_json');
  t.regex(refused.body.error.message, /UTF-8/);
  const big = JSON.stringify({ amount: 5, description: 'x'.repeat(70 * 1024) });
  assertError(t, await service.request('POST', PI, { key, rawBody: big, headers: { 'Content-Type': 'application/json' } }), 413, 'body_too_large');
  // An empty body is {}: amount is then missing.
  assertError(t, await service.request('POST', PI, { key, headers: { 'Content-Type': 'application/json' } }), 400, 'parameter_missing', 'amount');
  assertError(t, await service.request('POST', PI, { key }), 400, 'parameter_missing', 'amount');
  t.is(await countIn('payment_intents', 'bodies'), 0);
});

const badPaymentIntents: Array<[string, Record<string, unknown>, string, string | undefined]> = [
  ['a string amount', { amount: '100' }, 'parameter_invalid_integer', 'amount'],
  ['a float amount', { amount: 1.5 }, 'parameter_invalid_integer', 'amount'],
  ['a boolean amount', { amount: true }, 'parameter_invalid_integer', 'amount'],
  ['amount 0', { amount: 0 }, 'amount_too_small', 'amount'],
  ['amount 10^12', { amount: 1_000_000_000_000 }, 'amount_too_large', 'amount'],
  ['an unknown field', { amount: 5, colour: 'red' }, 'parameter_unknown', 'colour'],
  ['an unknown currency', { amount: 5, currency: 'xyz' }, 'currency_invalid', 'currency'],
  ['a numeric currency', { amount: 5, currency: 840 }, 'parameter_invalid_string', 'currency'],
  ['a description over 1000 characters', { amount: 5, description: 'x'.repeat(1001) }, 'parameter_invalid_string', 'description'],
  ['a NUL in the description', { amount: 5, description: 'a\u0000b' }, 'parameter_invalid_string', 'description'],
  ['a lone surrogate in the description', { amount: 5, description: 'a\ud800b' }, 'parameter_invalid_string', 'description'],
  ['a lone surrogate in a metadata value', { amount: 5, metadata: { color: 'x\udc00' } }, 'metadata_invalid', 'metadata[color]'],
  ['51 metadata keys', { amount: 5, metadata: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, 'v'])) }, 'metadata_invalid', 'metadata'],
  ['a 41-character metadata key', { amount: 5, metadata: { ['k'.repeat(41)]: 'v' } }, 'metadata_invalid', `metadata[${'k'.repeat(41)}]`],
  ['a 501-character metadata value', { amount: 5, metadata: { color: 'x'.repeat(501) } }, 'metadata_invalid', 'metadata[color]'],
  ['a non-string metadata value', { amount: 5, metadata: { color: 5 } }, 'metadata_invalid', 'metadata[color]'],
  ['metadata that is an array', { amount: 5, metadata: ['a'] }, 'metadata_invalid', 'metadata'],
  ['empty allowed_operators', { amount: 5, allowed_operators: [] }, 'parameter_invalid_empty', 'allowed_operators'],
  ['an unknown operator', { amount: 5, allowed_operators: ['wave', 'paypal'] }, 'operator_invalid', 'allowed_operators[1]'],
  ['a repeated operator', { amount: 5, allowed_operators: ['wave', 'wave'] }, 'parameter_invalid', 'allowed_operators[1]'],
  ['a selected operator outside the allowed ones', { amount: 5, allowed_operators: ['wave'], selected_operator: 'mpesa' }, 'operator_invalid', 'selected_operator'],
  ['automatic_operator with a selected operator', { amount: 5, selected_operator: 'wave', automatic_operator: true }, 'parameter_conflict', 'automatic_operator'],
  ['a string automatic_operator', { amount: 5, automatic_operator: 'yes' }, 'parameter_invalid_boolean', 'automatic_operator'],
  ['expires_at in 30 seconds', { amount: 5, expires_at: Math.floor(Date.now() / 1000) + 30 }, 'parameter_out_of_range', 'expires_at'],
  ['expires_at in 31 days', { amount: 5, expires_at: Math.floor(Date.now() / 1000) + 31 * 86400 }, 'parameter_out_of_range', 'expires_at'],
  ['a string expires_at', { amount: 5, expires_at: 'tomorrow' }, 'parameter_invalid_integer', 'expires_at'],
];

for (const [what, body, code, param] of badPaymentIntents) {
  test(`refuses a payment intent with ${what}: 400 ${code}`, async (t) => {
    const key = await service.issueKey('badpi');
    assertError(t, await service.request('POST', PI, { key, body }), 400, code, param);
  });
}

const badEndpoints: Array<[string, Record<string, unknown>, string, string | undefined, boolean?]> = [
  ['no url', {}, 'parameter_missing', 'url'],
  ['an ftp url', { url: 'ftp://example.test/x' }, 'url_invalid', 'url'],
  ['a relative url', { url: '/hook' }, 'url_invalid', 'url'],
  ['credentials in the url', { url: 'https://user:pw@example.test/x' }, 'url_invalid', 'url'],
  ['an empty user part in the url', { url: 'https://:@example.test/x' }, 'url_invalid', 'url'],
  ['a bare @ before the host', { url: 'https://@example.test/x' }, 'url_invalid', 'url'],
  ['a url with no host', { url: 'http:///x' }, 'url_invalid', 'url'],
  ['a url over 2048 characters', { url: `https://example.test/${'a'.repeat(2040)}` }, 'url_invalid', 'url'],
  ['empty enabled_events', { url: 'https://example.test/x', enabled_events: [] }, 'parameter_invalid_empty', 'enabled_events'],
  ['an unknown event type', { url: 'https://example.test/x', enabled_events: ['charge.succeeded'] }, 'event_type_invalid', 'enabled_events[0]'],
  ['an unknown field', { url: 'https://example.test/x', secret: 'mine' }, 'parameter_unknown', 'secret'],
  ['http in live mode', { url: 'http://example.test/x' }, 'url_invalid', 'url', true],
  ['127.0.0.1 in live mode', { url: 'https://127.0.0.1/x' }, 'url_invalid', 'url', true],
  ['localhost in live mode', { url: 'https://localhost/x' }, 'url_invalid', 'url', true],
  ['a private address in live mode', { url: 'https://10.1.2.3/x' }, 'url_invalid', 'url', true],
  ['a link-local address in live mode', { url: 'https://[fe80::1]/x' }, 'url_invalid', 'url', true],
];

for (const [what, body, code, param, live] of badEndpoints) {
  test(`refuses a webhook endpoint with ${what}: 400 ${code}`, async (t) => {
    const key = await service.issueKey('badwe', Boolean(live));
    assertError(t, await service.request('POST', WE, { key, body }), 400, code, param);
  });
}

test('bad input leaves no trace: no object, no idempotency record, no job', async (t) => {
  const project = uniqueName('trace');
  const key = await service.issueKey(project);
  const queue = new Queue(QUEUES.writes, { connection: { url: service.env.REDIS_URL }, prefix: service.prefix });
  t.teardown(() => queue.close());
  for (const [, body] of badPaymentIntents) {
    await service.request('POST', PI, { key, body, headers: { 'Idempotency-Key': `bad-${Math.random()}` } });
  }
  for (const [, body, , , live] of badEndpoints) {
    if (!live) await service.request('POST', WE, { key, body, headers: { 'Idempotency-Key': `bad-${Math.random()}` } });
  }
  const jobs = await queue.getJobs(['waiting', 'active', 'completed', 'failed', 'delayed', 'prioritized']);
  t.is(await countIn('payment_intents', project), 0);
  t.is(await countIn('webhook_endpoints', project), 0);
  t.is(await countIn('event_outbox', project), 0);
  t.true(jobs.length > 0, 'the other tests created jobs in this queue');
  t.deepEqual(jobs.filter((job) => job.data?.project === project), []);
  const redis = service.redis();
  t.teardown(() => redis.disconnect());
  // The epoch key is global; a per-key entry would be a trace.
  t.deepEqual((await redis.keys(`${service.prefix}:idem:*`)).filter((k) => !k.endsWith(':idem:epoch')), []);
});

test('a query parameter on a create is 400 parameter_unknown', async (t) => {
  const key = await service.issueKey('postquery');
  assertError(t, await service.request('POST', `${PI}?amount=5`, { key, body: { amount: 5 } }), 400, 'parameter_unknown', 'amount');
  t.is(await countIn('payment_intents', 'postquery'), 0);
});

test('retrieve: an unknown id, a malformed id and another project\'s id are all 404 resource_missing', async (t) => {
  const mine = await service.issueKey('retr-a');
  const theirs = await service.issueKey('retr-b');
  const created = await service.request('POST', PI, { key: theirs, body: { amount: 5 } });
  assertError(t, await service.request('GET', `${PI}/${created.body.id}`, { key: mine }), 404, 'resource_missing', 'id');
  assertError(t, await service.request('GET', `${PI}/pi_00000000000000000000000000`, { key: mine }), 404, 'resource_missing', 'id');
  assertError(t, await service.request('GET', `${PI}/nonsense`, { key: mine }), 404, 'resource_missing', 'id');
  assertError(t, await service.request('GET', `${WE}/we_00000000000000000000000000`, { key: mine }), 404, 'resource_missing', 'id');
  assertError(t, await service.request('GET', `${PI}/${created.body.id}?expand=x`, { key: theirs }), 400, 'parameter_unknown', 'expand');
});

test('list query parameters are checked', async (t) => {
  const key = await service.issueKey('listq');
  assertError(t, await service.request('GET', `${PI}?limit=0`, { key }), 400, 'parameter_invalid_integer', 'limit');
  assertError(t, await service.request('GET', `${PI}?limit=101`, { key }), 400, 'parameter_invalid_integer', 'limit');
  assertError(t, await service.request('GET', `${PI}?limit=`, { key }), 400, 'parameter_invalid_integer', 'limit');
  assertError(t, await service.request('GET', `${PI}?limit=ten`, { key }), 400, 'parameter_invalid_integer', 'limit');
  assertError(t, await service.request('GET', `${PI}?limit=1&limit=2`, { key }), 400, 'parameter_invalid', 'limit');
  assertError(t, await service.request('GET', `${PI}?page=2`, { key }), 400, 'parameter_unknown', 'page');
  assertError(t, await service.request('GET', `${PI}?starting_after=pi_00000000000000000000000000`, { key }), 400, 'resource_missing', 'starting_after');
  assertError(t, await service.request('GET', `${PI}?ending_before=pi_00000000000000000000000000`, { key }), 400, 'resource_missing', 'ending_before');
  const one = await service.request('POST', PI, { key, body: { amount: 5 } });
  assertError(t, await service.request('GET', `${PI}?starting_after=${one.body.id}&ending_before=${one.body.id}`, { key }), 400, 'parameter_conflict', 'ending_before');
  // A webhook endpoint id is not a cursor for payment intents.
  const we = await service.request('POST', WE, { key, body: { url: 'https://example.test/x' } });
  assertError(t, await service.request('GET', `${PI}?starting_after=${we.body.id}`, { key }), 400, 'resource_missing', 'starting_after');
  const ok = await service.request('GET', `${PI}?limit=100`, { key });
  t.is(ok.status, 200);
  t.is(ok.body.data.length, 1);
});

test('projects and modes are isolated: each key sees only its own objects', async (t) => {
  const aTest = await service.issueKey('iso-a', false);
  const aLive = await service.issueKey('iso-a', true);
  const bTest = await service.issueKey('iso-b', false);
  const made = {
    aTest: (await service.request('POST', PI, { key: aTest, body: { amount: 1 } })).body,
    aLive: (await service.request('POST', PI, { key: aLive, body: { amount: 2 } })).body,
    bTest: (await service.request('POST', PI, { key: bTest, body: { amount: 3 } })).body,
  };
  t.false(made.aTest.livemode);
  t.true(made.aLive.livemode);
  for (const [name, key] of Object.entries({ aTest, aLive, bTest })) {
    const list = await service.request('GET', PI, { key });
    t.deepEqual(list.body.data.map((p: { id: string }) => p.id), [made[name as keyof typeof made].id], name);
    for (const [other, pi] of Object.entries(made)) {
      if (other === name) continue;
      const res = await service.request('GET', `${PI}/${pi.id}`, { key });
      t.is(res.status, 404, `${name} must not see ${other}`);
    }
  }
});

test('ending_before pages towards newer objects, still listed newest first', async (t) => {
  const key = await service.issueKey('ending');
  const ids: string[] = [];
  for (let i = 0; i < 7; i++) ids.push((await service.request('POST', PI, { key, body: { amount: i + 1 } })).body.id);
  const newestFirst = [...ids].reverse();
  const page = await service.request('GET', `${PI}?limit=3&ending_before=${ids[1]}`, { key });
  t.deepEqual(page.body.data.map((p: { id: string }) => p.id), [ids[4], ids[3], ids[2]]);
  t.true(page.body.has_more);
  const last = await service.request('GET', `${PI}?limit=3&ending_before=${ids[4]}`, { key });
  t.deepEqual(last.body.data.map((p: { id: string }) => p.id), [ids[6], ids[5]]);
  t.false(last.body.has_more);
  const after = await service.request('GET', `${PI}?limit=3&starting_after=${ids[4]}`, { key });
  t.deepEqual(after.body.data.map((p: { id: string }) => p.id), newestFirst.slice(3, 6));
  t.true(after.body.has_more);
});

test('admin API: issues, lists and revokes keys; a revoked key is refused at once by every api process', async (t) => {
  const admin = { Authorization: `Bearer ${service.adminToken}` };
  const missing = await service.request('GET', '/admin/v1/api_keys');
  assertError(t, missing, 401, 'api_key_missing');
  t.regex(missing.body.error.message, /admin token/, 'the admin API asks for its own credential, not an sk_ key');
  t.notRegex(missing.body.error.message, /sk_/);
  assertError(t, await service.request('GET', '/admin/v1/api_keys', { headers: { Authorization: 'Bearer wrong-token-wrong-token' } }), 401, 'api_key_invalid');
  assertError(t, await service.request('POST', '/admin/v1/api_keys', { headers: admin, body: { project: 'Bad Name' } }), 400, 'parameter_invalid', 'project');
  assertError(t, await service.request('POST', '/admin/v1/api_keys', { headers: admin, body: {} }), 400, 'parameter_missing', 'project');

  const issued = await service.request('POST', '/admin/v1/api_keys', { headers: admin, body: { project: 'revoke-me', livemode: true } });
  t.is(issued.status, 200, issued.text);
  t.like(issued.body, { object: 'api_key', project: 'revoke-me', livemode: true, revoked_at: null });
  t.regex(issued.body.secret, /^sk_live_[0-9A-Za-z]{32,}$/);
  t.is(issued.body.last4, issued.body.secret.slice(-4));
  const secret = issued.body.secret as string;

  const listed = await service.request('GET', '/admin/v1/api_keys?project=revoke-me', { headers: admin });
  t.deepEqual(listed.body.data.map((k: { id: string }) => k.id), [issued.body.id]);
  t.false(listed.text.includes(secret));
  t.is(listed.body.data[0].secret, undefined);

  // A second api process caches the key, then the CLI (a third process) revokes it.
  const other = await service.startExtraApi();
  t.is((await service.request('GET', PI, { key: secret, baseUrl: other.baseUrl })).status, 200);
  t.is((await service.request('GET', PI, { key: secret })).status, 200);
  const cli = spawn(process.execPath, [path.resolve('dist/api/cli.js'), 'keys', 'revoke', issued.body.id, '--json'], {
    env: { PATH: process.env.PATH ?? '', ...service.env },
  });
  let out = '';
  cli.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const code = await new Promise<number | null>((resolve) => cli.on('exit', resolve));
  t.is(code, 0, out);
  t.is(typeof JSON.parse(out).revoked_at, 'number');
  assertError(t, await service.request('GET', PI, { key: secret, baseUrl: other.baseUrl }), 401, 'api_key_invalid');
  assertError(t, await service.request('GET', PI, { key: secret }), 401, 'api_key_invalid');

  const afterList = await service.request('GET', '/admin/v1/api_keys?project=revoke-me', { headers: admin });
  t.is(typeof afterList.body.data[0].revoked_at, 'number');
  const unknown = await service.request('DELETE', '/admin/v1/api_keys/key_00000000000000000000000000', { headers: admin });
  assertError(t, unknown, 404, 'resource_missing', 'id');
});

test('admin API: a form body as on every POST; unknown query parameters and DELETE bodies are refused', async (t) => {
  const admin = { Authorization: `Bearer ${service.adminToken}` };
  const form = { ...admin, 'Content-Type': 'application/x-www-form-urlencoded' };
  const issued = await service.request('POST', '/admin/v1/api_keys', { headers: form, rawBody: 'project=by-form&livemode=true' });
  t.is(issued.status, 200, issued.text);
  t.like(issued.body, { object: 'api_key', project: 'by-form', livemode: true });
  t.is((await service.request('POST', '/admin/v1/api_keys', { headers: form, rawBody: 'project=by-form' })).body.livemode, false);
  assertError(t, await service.request('POST', '/admin/v1/api_keys', { headers: form, rawBody: 'project=by-form&livemode=yes' }), 400, 'parameter_invalid_boolean', 'livemode');
  assertError(t, await service.request('POST', '/admin/v1/api_keys', { headers: form, rawBody: 'project=' }), 400, 'parameter_invalid_string', 'project');
  assertError(t, await service.request('POST', '/admin/v1/api_keys', { headers: { ...admin, 'Content-Type': 'text/plain' }, rawBody: 'project=x' }), 415, 'content_type_invalid');
  assertError(t, await service.request('POST', '/admin/v1/api_keys?foo=1', { headers: admin, body: { project: 'by-query' } }), 400, 'parameter_unknown', 'foo');
  assertError(t, await service.request('DELETE', `/admin/v1/api_keys/${issued.body.id}?foo=1`, { headers: admin }), 400, 'parameter_unknown', 'foo');
  assertError(t, await service.request('DELETE', `/admin/v1/api_keys/${issued.body.id}`, { headers: admin, body: { foo: 1 } }), 400, 'parameter_unknown', 'foo');
  const listed = await service.request('GET', '/admin/v1/api_keys?project=by-query', { headers: admin });
  t.deepEqual(listed.body.data, [], 'a refused create issued nothing');
  const revoked = await service.request('DELETE', `/admin/v1/api_keys/${issued.body.id}`, { headers: admin });
  t.is(typeof revoked.body.revoked_at, 'number');
});

test('admin API and dashboard answer 404 when no ADMIN_TOKEN is configured', async (t) => {
  const other = await service.startExtraApi({ ADMIN_TOKEN: '' });
  const res = await service.request('GET', '/admin/v1/api_keys', { baseUrl: other.baseUrl, headers: { Authorization: 'Bearer anything-at-all' } });
  t.is(res.status, 404);
  t.is(res.body.error.code, 'route_not_found');
});

test('ops endpoints need no key and carry a Request-Id; /docs/errors lists every code and every operator decline code', async (t) => {
  const health = await service.request('GET', '/healthz');
  t.is(health.status, 200);
  t.regex(health.headers.get('request-id') ?? '', /^req_/);
  const ready = await service.request('GET', '/readyz');
  t.is(ready.status, 200);
  t.deepEqual(ready.body.checks, { redis: 'ok', mongodb: 'ok' });
  const docs = await service.request('GET', '/docs/errors');
  t.is(docs.status, 200);
  t.regex(docs.headers.get('content-type') ?? '', /text\/html/);
  for (const code of ['parameter_missing', 'idempotency_key_reused', 'processing_timeout', 'route_not_found', 'rate_limit', 'metadata_invalid']) {
    t.true(docs.text.includes(`id="${code}"`), code);
  }
  // DESIGN.md section 7: the normalised operator decline codes are listed there too.
  for (const code of Object.keys(DECLINE_CODES)) t.true(docs.text.includes(`id="${code}"`), code);
  t.true(docs.text.includes('id="operator_decline_code"'));
});

test('the CLI issues a key that works against the api', async (t) => {
  const cli = spawn(process.execPath, [path.resolve('dist/api/cli.js'), 'keys', 'create', '--project', 'from-cli', '--json'], {
    env: { PATH: process.env.PATH ?? '', ...service.env },
  });
  let out = '';
  cli.stdout.on('data', (d: Buffer) => (out += d.toString()));
  t.is(await new Promise<number | null>((resolve) => cli.on('exit', resolve)), 0);
  const issued = JSON.parse(out);
  t.like(issued, { object: 'api_key', project: 'from-cli', livemode: false });
  const res = await service.request('POST', PI, { key: issued.secret, body: { amount: 42 } });
  t.is(res.status, 200);
  const db = await service.db();
  const stored = await db.collection('api_keys').findOne({ _id: issued.id });
  t.truthy(stored);
  t.false(JSON.stringify(stored).includes(issued.secret), 'the key is stored hashed');
});

/** The rate limit's window is one second, sliding: the point of the next test. */
const LATE_IN_THE_SECOND_MS = 700; // the first burst late in a clock second
const WITHIN_THE_WINDOW_MS = 500; // the second burst early in the next clock second, within the window
const PAST_THE_WINDOW_MS = 1100; // the window of both bursts gone
const ROUNDS_TO_FIT_A_WINDOW = 5; // a busy machine gets this many tries to send both bursts within one window

test('the rate limit holds in any one second, across a clock second too, and lets the limit through again a second later', async (t) => {
  const other = await service.startExtraApi({ RATE_LIMIT_PER_SECOND: '5' });
  const key = await service.issueKey('sliding');
  const burst = () => Promise.all(Array.from({ length: 5 }, () => service.request('GET', PI, { key, baseUrl: other.baseUrl })));
  // The first five late in a clock second, the next five early in the one after: a
  // window per clock second would let all ten through. Only when both bursts were
  // over within one second of the first's start does the window hold all ten; on a
  // machine too busy for that, the round tells nothing and is made again.
  for (let round = 1; ; round++) {
    await sleep(1000 + LATE_IN_THE_SECOND_MS - (Date.now() % 1000));
    const started = Date.now();
    const first = await burst();
    t.deepEqual(first.map((r) => r.status), [200, 200, 200, 200, 200]);
    await sleep(Math.max(0, started + WITHIN_THE_WINDOW_MS - Date.now()));
    const second = await burst();
    const withinOneWindow = Date.now() - started < 1000;
    if (withinOneWindow || round === ROUNDS_TO_FIT_A_WINDOW) {
      t.true(withinOneWindow, `in ${round} rounds, never both bursts within a second: the machine is too busy to judge`);
      t.deepEqual(second.map((r) => r.status), [429, 429, 429, 429, 429], 'less than a second after five, none more');
      break;
    }
    t.log(`round ${round}: the bursts took ${Date.now() - started} ms, past the window; again`);
    await sleep(PAST_THE_WINDOW_MS);
  }
  await sleep(PAST_THE_WINDOW_MS);
  const third = await burst();
  t.deepEqual(third.map((r) => r.status), [200, 200, 200, 200, 200], 'refused requests are not counted: a second later all five pass');
});

test('rate limiting is per key and answers 429 with Retry-After', async (t) => {
  const other = await service.startExtraApi({ RATE_LIMIT_PER_SECOND: '5' });
  const key = await service.issueKey('limited');
  const started = Date.now();
  const results = await Promise.all(Array.from({ length: 20 }, () => service.request('GET', PI, { key, baseUrl: other.baseUrl })));
  // The window is one second: a loaded machine may spread the burst over several,
  // each of which lets 5 through.
  const windows = Math.floor((Date.now() - started) / 1000) + 2;
  const limited = results.filter((r) => r.status === 429);
  t.true(limited.length >= Math.max(1, 20 - 5 * windows), `expected at most 5 of 20 requests per second through, ${limited.length} limited over ${windows} windows`);
  t.is(results.filter((r) => r.status === 200).length, 20 - limited.length);
  t.is(limited[0]?.body.error.code, 'rate_limit');
  t.is(limited[0]?.headers.get('retry-after'), '1');
  const otherKey = await service.issueKey('limited-2');
  t.is((await service.request('GET', PI, { key: otherKey, baseUrl: other.baseUrl })).status, 200);
});
