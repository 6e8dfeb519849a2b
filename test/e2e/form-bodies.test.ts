/**
 * Form-encoded bodies, black-box (DESIGN.md section 8): Stripe's bracket notation
 * creates the same objects as JSON, meets the same errors with the same `param`,
 * leaves nothing behind when refused, and replays as the same request. Stripe's
 * own headers are ignored, and `Stripe-Should-Retry` says when a retry can help.
 */
import test, { type ExecutionContext } from 'ava';
import { type ApiResponse } from '../helpers/service.js';
import { useService } from '../helpers/use-service.js';

const e2e = useService(test, { workers: 1 });

const PI = '/v1/payment_intents';
const FORM = { 'Content-Type': 'application/x-www-form-urlencoded' };

function postForm(key: string, path: string, rawBody: string, headers: Record<string, string> = {}): Promise<ApiResponse> {
  return e2e.service.request('POST', path, { key, rawBody, headers: { ...FORM, ...headers } });
}

function refused(t: ExecutionContext, res: ApiResponse, code: string, param: string | undefined): void {
  t.is(res.status, 400, res.text);
  t.is(res.body.error.code, code, res.text);
  t.is(res.body.error.param, param, res.text);
  t.is(res.headers.get('stripe-should-retry'), 'false');
}

async function count(project: string): Promise<number> {
  return (await e2e.service.db()).collection('payment_intents').countDocuments({ project });
}

test('a form body creates the same payment intent as the JSON body of the same values', async (t) => {
  const key = await e2e.service.issueKey('form-same');
  const expires = Math.floor(Date.now() / 1000) + 7200;
  const form = await postForm(
    key,
    PI,
    `amount=5000&currency=XOF&description=order+%231042&metadata[order]=1042&allowed_operators[0]=wave&allowed_operators[1]=orange_money` +
      `&selected_operator=wave&automatic_operator=false&expires_at=${expires}`,
  );
  t.is(form.status, 200, form.text);
  const json = await e2e.service.request('POST', PI, {
    key,
    body: {
      amount: 5000, currency: 'XOF', description: 'order #1042', metadata: { order: '1042' }, allowed_operators: ['wave', 'orange_money'],
      selected_operator: 'wave', automatic_operator: false, expires_at: expires,
    },
  });
  t.is(json.status, 200, json.text);
  const strip = ({ id: _id, client_secret: _cs, created: _c, ...rest }: Record<string, unknown>) => rest;
  t.deepEqual(strip(form.body), strip(json.body));
  t.like(form.body, { amount: 5000, currency: 'xof', automatic_operator: false, selected_operator: 'wave', expires_at: expires });
  t.is(form.headers.get('stripe-should-retry'), null, 'only errors say whether to retry');
});

test('empty-bracket lists, an empty description as null, and metadata keys that are prototype names, dots and dollars', async (t) => {
  const key = await e2e.service.issueKey('form-keys');
  const res = await postForm(
    key,
    PI,
    'amount=100&description=&allowed_operators[]=mpesa&allowed_operators[]=wave' +
      '&metadata[__proto__]=p&metadata[constructor]=c&metadata[a.b]=dot&metadata[%24x]=dollar&metadata[toString]=s',
  );
  t.is(res.status, 200, res.text);
  t.is(res.body.description, null);
  t.deepEqual(res.body.allowed_operators, ['mpesa', 'wave']);
  t.true(res.text.includes('"metadata":{"__proto__":"p","constructor":"c","a.b":"dot","$x":"dollar","toString":"s"}'), res.text);
  const got = await e2e.service.request('GET', `${PI}/${res.body.id}`, { key });
  t.is(got.text, res.text, 'retrieved exactly as created, client secret included');
});

test('integers from plain digits only; the same errors and params as JSON; nothing is created', async (t) => {
  const project = 'form-errors';
  const key = await e2e.service.issueKey(project);
  for (const amount of ['5e3', '5000.0', 'abc', '']) {
    refused(t, await postForm(key, PI, `amount=${amount}`), 'parameter_invalid_integer', 'amount');
  }
  refused(t, await e2e.service.request('POST', PI, { key, body: { amount: '5000' } }), 'parameter_invalid_integer', 'amount');
  refused(t, await postForm(key, PI, 'amount=0'), 'amount_too_small', 'amount');
  refused(t, await postForm(key, PI, 'amount=5&automatic_operator=yes'), 'parameter_invalid_boolean', 'automatic_operator');
  refused(t, await postForm(key, PI, 'amount=5&allowed_operators[0]=wave&allowed_operators[1]=paypal'), 'operator_invalid', 'allowed_operators[1]');
  refused(t, await postForm(key, PI, 'amount=5&allowed_operators='), 'parameter_invalid_empty', 'allowed_operators');
  refused(t, await postForm(key, PI, `amount=5&metadata[${'k'.repeat(41)}]=v`), 'metadata_invalid', `metadata[${'k'.repeat(41)}]`);
  refused(t, await postForm(key, PI, 'amount=5&colour=red'), 'parameter_unknown', 'colour');
  refused(t, await postForm(key, PI, 'amount=5&__proto__=x'), 'parameter_unknown', '__proto__');
  refused(t, await postForm(key, PI, 'amount=5&amount=6'), 'parameter_invalid_integer', 'amount');
  t.is(await count(project), 0);
});

test('the parser\'s bounds are 400s: parameters, nesting, list length', async (t) => {
  const project = 'form-bounds';
  const key = await e2e.service.issueKey(project);
  const many = Array.from({ length: 1001 }, (_, i) => `metadata[k${i}]=v`).join('&');
  refused(t, await postForm(key, PI, `amount=5&${many}`), 'parameter_invalid', undefined);
  refused(t, await postForm(key, PI, 'amount=5&metadata[a][b][c][d][e][f]=1'), 'parameter_invalid', 'metadata');
  const long = Array.from({ length: 101 }, () => 'allowed_operators[]=wave').join('&');
  refused(t, await postForm(key, PI, `amount=5&${long}`), 'parameter_invalid', 'allowed_operators');
  // Within the parser's bounds, the schema's own limits answer, as for JSON.
  const fiftyOne = Array.from({ length: 51 }, (_, i) => `metadata[k${i}]=v`).join('&');
  refused(t, await postForm(key, PI, `amount=5&${fiftyOne}`), 'metadata_invalid', 'metadata');
  t.is(await count(project), 0);
});

test('the same form sent twice is the same request, whatever the order of its parameters; JSON under its key is not', async (t) => {
  const key = await e2e.service.issueKey('form-idem');
  const first = await postForm(key, PI, 'amount=700&metadata[a]=1&metadata[b]=2', { 'Idempotency-Key': 'form-1' });
  t.is(first.status, 200, first.text);
  const again = await postForm(key, PI, 'metadata[b]=2&amount=700&metadata[a]=1', { 'Idempotency-Key': 'form-1' });
  t.is(again.status, 200);
  t.is(again.headers.get('idempotent-replayed'), 'true');
  t.is(again.text, first.text);
  const other = await postForm(key, PI, 'amount=701&metadata[a]=1&metadata[b]=2', { 'Idempotency-Key': 'form-1' });
  t.is(other.status, 400);
  t.is(other.body.error.code, 'idempotency_key_reused');
  const json = await e2e.service.request('POST', PI, { key, body: { amount: '700', metadata: { a: '1', b: '2' } }, headers: { 'Idempotency-Key': 'form-1' } });
  t.is(json.body.error?.code, 'idempotency_key_reused', 'a JSON body is never answered with a form request\'s result');
});

test('webhook endpoints take enabled_events[]=* in a form', async (t) => {
  const key = await e2e.service.issueKey('form-hooks');
  const res = await postForm(key, '/v1/webhook_endpoints', 'url=http%3A%2F%2F127.0.0.1%3A9%2Fhook&enabled_events[]=*&metadata[team]=ops&description=');
  t.is(res.status, 200, res.text);
  t.like(res.body, { url: 'http://127.0.0.1:9/hook', description: null, status: 'enabled' });
  t.deepEqual(res.body.enabled_events, ['*']);
  t.deepEqual(res.body.metadata, { team: 'ops' });
});

test('Stripe\'s headers are ignored; every 4xx says Stripe-Should-Retry: false', async (t) => {
  const key = await e2e.service.issueKey('form-headers');
  const stripeHeaders = { 'Stripe-Version': '2020-08-27', 'X-Stripe-Client-User-Agent': '{"lang":"node"}', 'Stripe-Account': 'acct_1' };
  const ok = await postForm(key, PI, 'amount=5', stripeHeaders);
  t.is(ok.status, 200, ok.text);
  const answers = [
    await e2e.service.request('GET', PI),
    await e2e.service.request('GET', `${PI}/pi_nothing`, { key }),
    await e2e.service.request('POST', PI, { key, rawBody: 'x', headers: { 'Content-Type': 'text/plain' } }),
    await e2e.service.request('DELETE', PI, { key }),
  ];
  t.deepEqual(answers.map((res) => res.status), [401, 404, 415, 405]);
  for (const res of answers) t.is(res.headers.get('stripe-should-retry'), 'false', `${res.status}`);
});

test('list, retrieve and events carry the client secret, as a secret key reads them', async (t) => {
  const key = await e2e.service.issueKey('form-secrets');
  const created = await postForm(key, PI, 'amount=9');
  t.regex(created.body.client_secret, new RegExp(`^${created.body.id}_secret_`));
  const list = await e2e.service.request('GET', PI, { key });
  t.is(list.body.data[0].client_secret, created.body.client_secret);
  const retrieved = await e2e.service.request('GET', `${PI}/${created.body.id}`, { key });
  t.is(retrieved.body.client_secret, created.body.client_secret);
  const events = await e2e.service.request('GET', '/v1/events', { key });
  t.is(events.body.data[0].data.object.client_secret, created.body.client_secret);
});
