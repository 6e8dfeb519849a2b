/**
 * Stripe's habits, black-box (DESIGN.md section 13): what an engineer who knows
 * Stripe tries first works here.
 * - `curl -u sk_test_…:` authenticates as `Authorization: Bearer` does; a wrong key
 *   that way is `api_key_invalid`; the admin token is no key by either scheme.
 * - JSON sent under curl's default form content type gets a 400 that says to send
 *   `Content-Type: application/json`, and leaves nothing behind.
 * - Every delivery carries `Stripe-Signature`, which the official Stripe SDK's
 *   `webhooks.constructEvent` verifies (two `v1=` entries during a rotation), beside
 *   the Standard Webhooks headers, which `standardwebhooks` verifies.
 * - The redirect flow returns to `return_url` with `payment_intent` and
 *   `payment_intent_client_secret` added to its own query.
 * - The test checkout page, reloaded once the payment ended, shows how it ended.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';
import test, { type ExecutionContext } from 'ava';
import { Webhook } from 'standardwebhooks';
import Stripe from 'stripe';
import { QUEUES } from '../../common/jobs.js';
import { type Received } from '../helpers/receiver.js';
import { uniqueName, until, untilIdle } from '../helpers/service.js';
import { createEndpoint } from '../helpers/webhook-fixtures.js';
import { manage } from '../helpers/webhook-management.js';
import { cancel, confirm, createIntent, masked, phone, PI, retrieve, waitForStatus, type Intent } from '../helpers/payment-intent-lifecycle.js';
import { useService } from '../helpers/use-service.js';

/** The official SDK, for its webhook helpers: it never calls anything here. */
const stripe = new Stripe('sk_test_unused');

const e2e = useService(test, { workers: 1, env: { WRITE_TIMEOUT_MS: '30000', SIMULATOR_APPROVAL_DELAY_MS: '100', SIMULATOR_PROCESSING_DELAY_MS: '200' }, receiver: true });

/** What `curl -u user:password` sends. */
function basic(user: string, password = ''): string {
  return `Basic ${Buffer.from(`${user}:${password}`, 'utf8').toString('base64')}`;
}

async function call(method: string, path: string, headers: Record<string, string>, body?: string) {
  const res = await fetch(`${e2e.service.baseUrl}${path}`, { method, headers, body });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, body: text ? JSON.parse(text) : undefined };
}

function errorIs(t: ExecutionContext, res: { status: number; text: string; body: { error?: { code?: string } } }, status: number, code: string): void {
  t.is(res.status, status, res.text);
  t.is(res.body?.error?.code, code, res.text);
}

async function intentsOf(key: string): Promise<string[]> {
  const res = await e2e.service.request('GET', `${PI}?limit=100`, { key });
  return (res.body.data as Intent[]).map((pi) => pi.id);
}

// ---------------------------------------------------------------- Basic auth

test('-u sk_test_…: authenticates exactly as Bearer does: the same scope for reads and writes', async (t) => {
  const key = await e2e.key('basic');
  const created = await call('POST', PI, { Authorization: basic(key), 'Content-Type': 'application/x-www-form-urlencoded' }, 'amount=5000&currency=xof');
  t.is(created.status, 200, created.text);
  t.is(created.body.object, 'payment_intent');
  const viaBearer = await call('GET', `${PI}/${created.body.id}`, { Authorization: `Bearer ${key}` });
  const viaBasic = await call('GET', `${PI}/${created.body.id}`, { Authorization: basic(key) });
  t.is(viaBasic.status, 200, viaBasic.text);
  t.deepEqual(viaBasic.body, viaBearer.body);
  const listed = await call('GET', PI, { Authorization: basic(key) });
  t.deepEqual(
    listed.body.data.map((pi: Intent) => pi.id),
    [created.body.id],
  );
  // Another project's key by Basic sees nothing of this one's.
  const other = await e2e.key('basic-other');
  errorIs(t, await call('GET', `${PI}/${created.body.id}`, { Authorization: basic(other) }), 404, 'resource_missing');
  // The key as the password behind an empty user name counts too; the scheme's name in any case.
  t.is((await call('GET', PI, { Authorization: basic('', key) })).status, 200);
  t.is((await call('GET', PI, { Authorization: basic(key).replace('Basic', 'basic') })).status, 200);
});

test('a wrong key sent with -u is 401 api_key_invalid, not api_key_missing; -u with nothing is api_key_missing', async (t) => {
  const key = await e2e.key('basic-wrong');
  for (const wrong of ['sk_test_nope', `${key}x`, 'pk_test_123', 'garbage']) {
    const res = await call('GET', PI, { Authorization: basic(wrong) });
    errorIs(t, res, 401, 'api_key_invalid');
    t.is(res.body.error.message, 'Invalid API key provided.');
  }
  const missing = await call('GET', PI, { Authorization: basic('') });
  errorIs(t, missing, 401, 'api_key_missing');
  t.regex(missing.body.error.message, /curl -u sk_\.\.\.:/, 'the message names both ways');
  errorIs(t, await call('GET', PI, {}), 401, 'api_key_missing');
});

test('the admin token never authenticates on /v1, by Bearer or by Basic', async (t) => {
  const token = e2e.service.adminToken;
  for (const authorization of [`Bearer ${token}`, basic(token), basic('admin', token), basic('', token)]) {
    errorIs(t, await call('GET', PI, { Authorization: authorization }), 401, 'api_key_invalid');
    errorIs(t, await call('POST', PI, { Authorization: authorization, 'Content-Type': 'application/json' }, '{"amount":100}'), 401, 'api_key_invalid');
  }
  // It still does on the admin API, where it belongs (Bearer only).
  t.is((await call('GET', '/admin/v1/api_keys?project=x', { Authorization: `Bearer ${token}` })).status, 200);
});

const haveCurl = existsSync('/usr/bin/curl');
(haveCurl ? test : test.skip)('curl itself: -u KEY: with a form body creates, and -d with JSON and no content type says to send application/json', async (t) => {
  const key = await e2e.key('curl');
  const run = async (...args: string[]) => {
    const { stdout } = await promisify(execFile)('curl', ['-s', '-w', '\n%{http_code}', ...args]);
    const cut = stdout.lastIndexOf('\n');
    return { status: Number(stdout.slice(cut + 1)), text: stdout.slice(0, cut), body: JSON.parse(stdout.slice(0, cut)) };
  };
  const created = await run(`${e2e.service.baseUrl}${PI}`, '-u', `${key}:`, '-d', 'amount=5000', '-d', 'currency=xof');
  t.is(created.status, 200, created.text);
  t.is(created.body.amount, 5000);
  const json = await run(`${e2e.service.baseUrl}${PI}`, '-u', `${key}:`, '-d', '{"amount":5000,"currency":"xof"}');
  errorIs(t, json, 400, 'invalid_json');
  t.regex(json.body.error.message, /Content-Type: application\/json/);
  t.deepEqual(await intentsOf(key), [created.body.id], 'nothing created by the refused one');
});

// ---------------------------------------------------------------- JSON sent as a form

test('JSON sent as a form body is a 400 invalid_json that says to send Content-Type: application/json, and nothing is created or recorded', async (t) => {
  const key = await e2e.key('json-form');
  const form = { Authorization: `Bearer ${key}`, 'Content-Type': 'application/x-www-form-urlencoded' };
  const refused = await call('POST', PI, { ...form, 'Idempotency-Key': 'order-7' }, '{"amount":5000,"currency":"xof"}');
  errorIs(t, refused, 400, 'invalid_json');
  t.regex(refused.body.error.message, /Content-Type: application\/json/);
  t.false(refused.body.error.message.includes('unknown parameter'));
  t.is(refused.headers.get('stripe-should-retry'), 'false');
  t.regex(refused.body.error.request_id, /^req_/);
  t.regex(refused.body.error.doc_url, /\/docs\/errors#invalid_json$/);

  // Spaces, a newline at the end, an array, a charset parameter, every write route.
  const endpoint = await createEndpoint(e2e.service, key, 'https://example.com/hooks');
  const pi = await createIntent(e2e.service, key);
  for (const [path, body, contentType] of [
    [PI, '  {"amount": 5000}\n', 'application/x-www-form-urlencoded'],
    [PI, '[{"amount":5000}]', 'application/x-www-form-urlencoded'],
    [PI, '{"amount":5000}', 'application/x-www-form-urlencoded; charset=utf-8'],
    [`${PI}/${pi.id}`, '{"description":"x"}', 'application/x-www-form-urlencoded'],
    [`${PI}/${pi.id}/confirm`, `{"operator":"mtn_momo","phone_number":"${phone('225', '000')}"}`, 'application/x-www-form-urlencoded'],
    ['/v1/webhook_endpoints', '{"url":"https://example.com/2"}', 'application/x-www-form-urlencoded'],
    [`/v1/webhook_endpoints/${endpoint.id}`, '{"disabled":true}', 'application/x-www-form-urlencoded'],
  ] as const) {
    const res = await call('POST', path, { Authorization: `Bearer ${key}`, 'Content-Type': contentType }, body);
    errorIs(t, res, 400, 'invalid_json');
    t.regex(res.body.error.message, /Content-Type: application\/json/, path);
  }
  t.deepEqual(await intentsOf(key), [pi.id], 'no payment intent but the fixture');
  t.like(await retrieve(e2e.service, key, pi.id), { status: 'new', description: null });
  const { secret: _shown, ...stored } = endpoint as unknown as Record<string, unknown>;
  const endpoints = await e2e.service.request('GET', '/v1/webhook_endpoints', { key });
  t.deepEqual(endpoints.body.data, [stored], 'the endpoint as it was, and no other');

  // No idempotency record: the key is free for the request meant.
  const meant = await call('POST', PI, { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json', 'Idempotency-Key': 'order-7' }, '{"amount":5000,"currency":"xof"}');
  t.is(meant.status, 200, meant.text);
  t.is(meant.headers.get('idempotent-replayed'), null);
  // And a real form still works.
  const asForm = await call('POST', PI, form, 'amount=5000&currency=xof&metadata[order]=%7B7%7D');
  t.is(asForm.status, 200, asForm.text);
  t.deepEqual(asForm.body.metadata, { order: '{7}' });
});

// ---------------------------------------------------------------- Stripe-Signature

function headersOf(delivery: Received): Record<string, string> {
  return Object.fromEntries(Object.entries(delivery.headers).map(([name, value]) => [name, String(value)]));
}

/** Waits for the delivery of `eventId` to `path`. */
function deliveryOf(path: string, eventId: string): Promise<Received> {
  return until(`the delivery of ${eventId} to ${path}`, () => e2e.receiver.received(path).find((r) => r.headers['webhook-id'] === eventId));
}

/** Verifies a delivery as a receiver holding `secret` would, with both libraries; returns each one's event id. */
function verify(delivery: Received, secret: string): { stripe: string; standard: string } {
  const headers = headersOf(delivery);
  const event = stripe.webhooks.constructEvent(delivery.body, headers['stripe-signature'] as string, secret);
  const standard = new Webhook(secret).verify(delivery.body, headers) as { id: string };
  return { stripe: event.id, standard: standard.id };
}

test('every delivery carries Stripe-Signature, verified by the Stripe SDK’s constructEvent with the secret as shown, and the Standard Webhooks headers still verify', async (t) => {
  const project = uniqueName('stripe-sig');
  const key = await e2e.service.issueKey(project);
  const path = `/${project}`;
  const endpoint = await createEndpoint(e2e.service, key, e2e.receiver.url(path));
  t.regex(endpoint.secret, /^whsec_/);
  const pi = await createIntent(e2e.service, key);
  const listed = await until('the created event', async () => (await e2e.service.request('GET', '/v1/events', { key })).body.data[0]);
  const delivery = await deliveryOf(path, listed.id);
  const header = String(delivery.headers['stripe-signature']);
  t.regex(header, /^t=\d+,v1=[0-9a-f]{64}$/);
  t.is(header.split(',')[0], `t=${delivery.headers['webhook-timestamp']}`, 'the same timestamp as webhook-timestamp');
  t.deepEqual(verify(delivery, endpoint.secret), { stripe: listed.id, standard: listed.id });
  const event = stripe.webhooks.constructEvent(delivery.body.toString('utf8'), header, endpoint.secret);
  t.like(event, { id: listed.id, type: 'payment_intent.created', data: { object: { id: pi.id } } });
  // Another secret, the decoded key instead of the string, or a changed body: refused.
  t.throws(() => stripe.webhooks.constructEvent(delivery.body, header, `whsec_${Buffer.alloc(24, 9).toString('base64')}`));
  t.throws(() => stripe.webhooks.constructEvent(delivery.body, header, endpoint.secret.slice('whsec_'.length)));
  t.throws(() => stripe.webhooks.constructEvent(Buffer.concat([delivery.body, Buffer.from(' ')]), header, endpoint.secret));

  // The endpoint's test send is a delivery too.
  const sent = await manage(e2e.service, key, 'POST', endpoint.id, 'test', { body: {} });
  t.is(sent.status, 200, sent.text);
  const testDelivery = await until('the test delivery', () =>
    e2e.receiver.received(path).find((r) => JSON.parse(r.body.toString('utf8')).type === 'webhook_endpoint.test'),
  );
  const testEvent = stripe.webhooks.constructEvent(testDelivery.body, String(testDelivery.headers['stripe-signature']), endpoint.secret);
  t.is(testEvent.type as string, 'webhook_endpoint.test');
});

test('during a rotation’s grace period Stripe-Signature has two v1= entries: a receiver holding either secret verifies with either library', async (t) => {
  const project = uniqueName('stripe-rotate');
  const key = await e2e.service.issueKey(project);
  const path = `/${project}`;
  const endpoint = await createEndpoint(e2e.service, key, e2e.receiver.url(path));
  const rotated = await manage(e2e.service, key, 'POST', endpoint.id, 'rotate_secret', { body: {} });
  t.is(rotated.status, 200, rotated.text);
  const fresh = rotated.body.secret as string;
  await createIntent(e2e.service, key);
  const listed = await until('the created event', async () => (await e2e.service.request('GET', '/v1/events', { key })).body.data[0]);
  const delivery = await deliveryOf(path, listed.id);
  t.regex(String(delivery.headers['stripe-signature']), /^t=\d+,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/);
  t.deepEqual(verify(delivery, fresh), { stripe: listed.id, standard: listed.id }, 'the new secret');
  t.deepEqual(verify(delivery, endpoint.secret), { stripe: listed.id, standard: listed.id }, 'the old secret');
  t.throws(() => verify(delivery, `whsec_${Buffer.alloc(24, 3).toString('base64')}`));
});

// ---------------------------------------------------------------- Redirect returns and the checkout page

/** A wave intent in XOF, confirmed with a +225 number (a currency Wave takes there), and its checkout URL. */
async function waveCheckout(key: string, suffix: string, returnUrl?: string): Promise<{ intent: Intent; url: string; phoneNumber: string }> {
  const intent = await createIntent(e2e.service, key, { amount: 2500, currency: 'xof', allowed_operators: ['wave'] });
  const phoneNumber = phone('225', suffix);
  const res = await confirm(e2e.service, key, intent.id, { operator: 'wave', phone_number: phoneNumber, ...(returnUrl ? { return_url: returnUrl } : {}) });
  if (res.status !== 200) throw new Error(`confirm: ${res.status} ${res.text}`);
  return { intent, url: res.body.next_action.redirect_to_url.url as string, phoneNumber };
}

async function press(url: string, action: 'pay' | 'decline' | 'cancel'): Promise<Response> {
  return fetch(`${url}/${action}`, { method: 'POST', redirect: 'manual' });
}

test('a redirect returns to return_url with payment_intent and payment_intent_client_secret added, its own query kept', async (t) => {
  const key = await e2e.key('return');
  const { intent, url } = await waveCheckout(key, '000', 'https://shop.example/back?order=7');
  const res = await press(url, 'pay');
  t.is(res.status, 303);
  const location = res.headers.get('location') ?? '';
  t.is(location, `https://shop.example/back?order=7&payment_intent=${intent.id}&payment_intent_client_secret=${intent.client_secret}`);
  const back = new URL(location);
  t.is(back.searchParams.get('order'), '7');
  t.is(back.searchParams.get('payment_intent'), intent.id);
  t.is(back.searchParams.get('payment_intent_client_secret'), intent.client_secret);
  await waitForStatus(e2e.service, key, intent.id, 'succeeded');

  // Without a query of its own, and with a fragment, and on Cancel.
  const other = await waveCheckout(key, '000', 'https://shop.example/done#receipt');
  const canceled = await press(other.url, 'cancel');
  t.is(canceled.headers.get('location'), `https://shop.example/done?payment_intent=${other.intent.id}&payment_intent_client_secret=${other.intent.client_secret}#receipt`);
});

async function pageText(url: string): Promise<{ status: number; html: string }> {
  const res = await fetch(url);
  return { status: res.status, html: await res.text() };
}

function statusOf(html: string): string | undefined {
  return /id="status" data-status="([a-z_]+)"/.exec(html)?.[1];
}

test('the checkout page reloaded once the payment ended shows how it ended, never the client secret or the full phone number, and pays nothing again', async (t) => {
  const key = await e2e.key('checkout-final');
  const paid = await waveCheckout(key, '000');
  const declined = await waveCheckout(key, '003');
  const payerDeclined = await waveCheckout(key, '000');
  const canceled = await waveCheckout(key, '000');
  const waiting = await pageText(paid.url);
  t.is(waiting.status, 200);
  t.true(waiting.html.includes('id="pay"'));

  t.is((await press(paid.url, 'pay')).status, 303);
  t.is((await press(declined.url, 'pay')).status, 303);
  t.is((await press(payerDeclined.url, 'decline')).status, 303);
  t.is((await press(canceled.url, 'cancel')).status, 303);
  await waitForStatus(e2e.service, key, paid.intent.id, 'succeeded');
  await waitForStatus(e2e.service, key, declined.intent.id, 'new', 30_000, (pi) => pi.last_payment_error !== null);
  await waitForStatus(e2e.service, key, payerDeclined.intent.id, 'new', 30_000, (pi) => pi.last_payment_error !== null);
  await waitForStatus(e2e.service, key, canceled.intent.id, 'canceled');

  for (const [c, status, words] of [
    [paid, 'succeeded', 'Payment succeeded'],
    [declined, 'declined', 'insufficient funds'],
    [payerDeclined, 'declined', 'payer declined'],
    [canceled, 'canceled', 'Payment canceled'],
  ] as const) {
    const page = await pageText(c.url);
    t.is(page.status, 200, `${status}: not "Checkout not found"`);
    t.false(page.html.includes('Checkout not found'));
    t.is(statusOf(page.html), status);
    t.true(page.html.includes(words), `${status}: ${words}`);
    t.true(page.html.includes(masked(c.phoneNumber)));
    t.false(page.html.includes(c.phoneNumber), 'never the full phone number');
    t.false(page.html.includes(c.intent.client_secret), 'never the client secret');
    t.false(page.html.includes('<form'), 'nothing to press');
  }

  // A press on a spent link comes back to the page (never to return_url with the client secret again).
  const spent = await waveCheckout(key, '000', 'https://shop.example/back?order=8');
  t.is((await press(spent.url, 'cancel')).status, 303);
  await waitForStatus(e2e.service, key, spent.intent.id, 'canceled');
  const late = await press(spent.url, 'pay');
  t.is(late.status, 303);
  t.is(late.headers.get('location'), new URL(spent.url).pathname);

  // A replayed Pay on an ended attempt adds nothing: the declined intent stays declined, with no new event.
  // Every event of the five attempts listed first: 4 + 4 (through processing) + 3 + 3 + 3.
  const before = await until('the 17 events of the five attempts', async () => {
    const count = (await e2e.service.request('GET', '/v1/events?limit=100', { key })).body.data.length as number;
    return count === 17 ? count : undefined;
  });
  for (const c of [paid, declined, payerDeclined, canceled]) t.is((await press(c.url, 'pay')).status, 303);
  // A press adds its job before it answers: whatever it set going has run once the queues are idle.
  await untilIdle(e2e.service, [QUEUES.intents, QUEUES.events]);
  t.like(await retrieve(e2e.service, key, declined.intent.id), { status: 'new', last_payment_error: { operator_decline_code: 'insufficient_funds' } });
  t.is((await retrieve(e2e.service, key, paid.intent.id)).status, 'succeeded');
  t.is((await e2e.service.request('GET', '/v1/events?limit=100', { key })).body.data.length, before);

  // A new attempt gets a token of its own: the old link shows nothing of it and acts on nothing.
  const again = await confirm(e2e.service, key, declined.intent.id, { operator: 'wave', phone_number: phone('225', '000', 1) });
  t.is(again.status, 200, again.text);
  const newUrl = again.body.next_action.redirect_to_url.url as string;
  t.not(newUrl, declined.url);
  t.is((await pageText(declined.url)).status, 404);
  t.is((await press(declined.url, 'pay')).status, 404);
  t.is((await retrieve(e2e.service, key, declined.intent.id)).status, 'requires_action');
  t.is(statusOf((await pageText(newUrl)).html), undefined, 'the new link offers the buttons');
  t.is((await cancel(e2e.service, key, declined.intent.id)).status, 200);
  t.is(statusOf((await pageText(newUrl)).html), 'canceled');
});
