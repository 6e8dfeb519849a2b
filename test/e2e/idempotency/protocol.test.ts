/**
 * Idempotency keys (DESIGN.md section 4), black-box: one api, two workers.
 */
import http from 'node:http';
import test from 'ava';
import { QUEUES } from '../../../common/jobs.js';
import { serviceQueue, sleep, uniqueName, untilIdle } from '../../helpers/service.js';
import { useService } from '../../helpers/use-service.js';

const e2e = useService(test, { workers: 2 });

const PI = '/v1/payment_intents';
const WE = '/v1/webhook_endpoints';

async function count(collection: string, project: string): Promise<number> {
  return (await e2e.service.db()).collection(collection).countDocuments({ project });
}

test('50 concurrent identical requests with one key create exactly one object', async (t) => {
  const project = uniqueName('conc');
  const key = await e2e.service.issueKey(project);
  const results = await Promise.all(
    Array.from({ length: 50 }, () =>
      e2e.service.request('POST', PI, { key, body: { amount: 2500, currency: 'eur' }, headers: { 'Idempotency-Key': 'one-key' } }),
    ),
  );
  const ok = results.filter((r) => r.status === 200);
  const inFlight = results.filter((r) => r.status === 409);
  t.is(ok.length + inFlight.length, 50, results.map((r) => `${r.status}`).join(','));
  t.true(ok.length >= 1);
  t.is(new Set(ok.map((r) => r.body.id)).size, 1, 'every 200 carries the same object');
  for (const r of inFlight) {
    t.is(r.body.error.code, 'idempotency_in_flight');
    t.is(r.body.error.type, 'invalid_request_error');
  }
  // Every request's job has run: a second object or event would be written by now.
  await untilIdle(e2e.service, [QUEUES.writes, QUEUES.events]);
  t.is(await count('payment_intents', project), 1);
  const events = await e2e.service.request('GET', '/v1/events', { key });
  t.deepEqual(events.body.data.map((e: { data: { object: { id: string } } }) => e.data.object.id), [ok[0]?.body.id], 'and exactly one event');
});

test('the same key in two projects, and in test and live mode of one project, creates separate objects', async (t) => {
  const a = uniqueName('pa');
  const b = uniqueName('pb');
  const keys = [await e2e.service.issueKey(a, false), await e2e.service.issueKey(a, true), await e2e.service.issueKey(b, false)];
  const results = await Promise.all(
    keys.map((key) => e2e.service.request('POST', PI, { key, body: { amount: 10 }, headers: { 'Idempotency-Key': 'shared' } })),
  );
  t.deepEqual(results.map((r) => r.status), [200, 200, 200]);
  t.is(new Set(results.map((r) => r.body.id)).size, 3);
  t.deepEqual(results.map((r) => r.body.livemode), [false, true, false]);
  t.is(results.filter((r) => r.headers.get('idempotent-replayed')).length, 0);
});

test('a completed key replays the first response byte for byte, with Idempotent-Replayed', async (t) => {
  const key = await e2e.key('replay');
  const headers = { 'Idempotency-Key': 'replay-me' };
  const first = await e2e.service.request('POST', PI, {
    key, rawBody: '{"amount": 1234, "metadata": {"order": "42"}}', headers: { ...headers, 'Content-Type': 'application/json' },
  });
  t.is(first.status, 200);
  t.is(first.headers.get('idempotent-replayed'), null);
  // Same JSON value, other key order and white space.
  const second = await e2e.service.request('POST', PI, {
    key, rawBody: '{"metadata":{"order":"42"},"amount":1234}', headers: { ...headers, 'Content-Type': 'application/json' },
  });
  t.is(second.status, 200);
  t.is(second.text, first.text);
  t.is(second.headers.get('idempotent-replayed'), 'true');
  t.not(second.headers.get('request-id'), first.headers.get('request-id'), 'a fresh Request-Id header');
  t.true(second.text.includes('client_secret'), 'the replay is the create response, client secret included');
});

test('reusing a key with another body, or on the other endpoint, is 400 idempotency_key_reused', async (t) => {
  const project = uniqueName('reuse');
  const key = await e2e.service.issueKey(project);
  const headers = { 'Idempotency-Key': 'reused' };
  const first = await e2e.service.request('POST', PI, { key, body: { amount: 100 }, headers });
  t.is(first.status, 200);
  const otherBody = await e2e.service.request('POST', PI, { key, body: { amount: 101 }, headers });
  t.is(otherBody.status, 400);
  t.is(otherBody.body.error.type, 'idempotency_error');
  t.is(otherBody.body.error.code, 'idempotency_key_reused');
  const otherPath = await e2e.service.request('POST', WE, { key, body: { url: 'https://example.test/h' }, headers });
  t.is(otherPath.status, 400);
  t.is(otherPath.body.error.code, 'idempotency_key_reused');
  // Even an invalid body with a used key is a reuse (the key is looked up before validation).
  const invalid = await e2e.service.request('POST', PI, { key, body: { amount: 'x' }, headers });
  t.is(invalid.body.error.code, 'idempotency_key_reused');
  t.is(await count('payment_intents', project), 1);
  t.is(await count('webhook_endpoints', project), 0);
});

test('webhook endpoint creates are idempotent too, the secret replayed with them', async (t) => {
  const project = uniqueName('we-idem');
  const key = await e2e.service.issueKey(project);
  const headers = { 'Idempotency-Key': 'endpoint-once' };
  const body = { url: 'https://example.test/hook' };
  const first = await e2e.service.request('POST', WE, { key, body, headers });
  const second = await e2e.service.request('POST', WE, { key, body, headers });
  t.is(first.status, 200);
  t.is(second.text, first.text);
  t.is(await count('webhook_endpoints', project), 1);
});

test('a validation failure is not recorded: the fixed body with the same key creates the object', async (t) => {
  const project = uniqueName('fix');
  const key = await e2e.service.issueKey(project);
  const headers = { 'Idempotency-Key': 'fix-me' };
  const bad = await e2e.service.request('POST', PI, { key, body: { amount: -5 }, headers });
  t.is(bad.status, 400);
  t.is(bad.body.error.code, 'amount_too_small');
  t.is(await count('payment_intents', project), 0, 'nothing recorded for the key');
  const good = await e2e.service.request('POST', PI, { key, body: { amount: 5 }, headers });
  t.is(good.status, 200, good.text);
  t.is(good.headers.get('idempotent-replayed'), null);
  t.is(await count('payment_intents', project), 1);
});

test('bad keys are 400 idempotency_key_invalid and leave nothing behind', async (t) => {
  const project = uniqueName('badkey');
  const key = await e2e.service.issueKey(project);
  for (const bad of ['x'.repeat(256), 'tab\there', 'é-accent', '']) {
    const res = await e2e.service.request('POST', PI, { key, body: { amount: 5 }, headers: { 'Idempotency-Key': bad } });
    t.is(res.status, 400, `key ${JSON.stringify(bad.slice(0, 10))}: ${res.text}`);
    t.is(res.body.error.code, 'idempotency_key_invalid');
  }
  const longest = await e2e.service.request('POST', PI, { key, body: { amount: 5 }, headers: { 'Idempotency-Key': '~'.repeat(255) } });
  t.is(longest.status, 200, 'a 255-character printable key is fine');
  t.is(await count('payment_intents', project), 1);
});

test('an Idempotency-Key header sent twice is 400 idempotency_key_invalid, not one key joined from both', async (t) => {
  const project = uniqueName('twokeys');
  const key = await e2e.service.issueKey(project);
  // fetch would send the two as one line; node:http sends each line as given.
  const post = (keys: string[]) =>
    new Promise<{ status: number; body: { error?: { code: string } } }>((resolve, reject) => {
      const req = http.request(`${e2e.service.baseUrl}${PI}`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json', 'Idempotency-Key': keys },
      });
      req.on('response', (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
      });
      req.on('error', reject);
      req.end(JSON.stringify({ amount: 6 }));
    });
  for (const keys of [['a1', 'b1'], ['a1', 'a1']]) {
    const res = await post(keys);
    t.is(res.status, 400, JSON.stringify(keys));
    t.is(res.body.error?.code, 'idempotency_key_invalid');
  }
  t.is((await post(['a1, b1'])).status, 200, 'the joined text as one line is a key like any other');
  t.is(await count('payment_intents', project), 1);
});

test('a key on a GET is ignored', async (t) => {
  const key = await e2e.key('get');
  const created = await e2e.service.request('POST', PI, { key, body: { amount: 9 }, headers: { 'Idempotency-Key': 'for-get' } });
  const list = await e2e.service.request('GET', PI, { key, headers: { 'Idempotency-Key': 'for-get' } });
  t.is(list.status, 200);
  t.is(list.headers.get('idempotent-replayed'), null);
  t.is(list.body.object, 'list');
  const again = await e2e.service.request('GET', `${PI}/${created.body.id}`, { key, headers: { 'Idempotency-Key': 'x'.repeat(300) } });
  t.is(again.status, 200, 'even an invalid key is ignored on GET');
});

test('job ids are derived from the key, so a retry never enqueues a second job', async (t) => {
  const project = uniqueName('jobid');
  const key = await e2e.service.issueKey(project);
  const queue = serviceQueue(e2e.service, QUEUES.writes);
  t.teardown(() => queue.close());
  const res = await e2e.service.request('POST', PI, { key, body: { amount: 1 } });
  t.is(res.status, 200);
  // The worker publishes the result just before BullMQ marks the job completed.
  let job = await queue.getJob(res.body.id);
  for (let i = 0; i < 50 && !job?.returnvalue; i++) {
    await sleep(100);
    job = await queue.getJob(res.body.id);
  }
  t.truthy(job, 'an unkeyed create job has the object id as job id');
  t.deepEqual(job?.returnvalue, { ok: true, id: res.body.id, status: 200 });
  t.false(JSON.stringify(job?.data).includes('secret'), 'job data carries no secret');
  t.false(JSON.stringify(job?.data).includes('sk_'), 'job data carries no API key');
});
