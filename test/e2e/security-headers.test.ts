/**
 * Security review L1: the HTML pages cannot be framed or sniffed, and no cache keeps
 * an API answer (some carry `whsec_…`, `client_secret` or `sk_…`).
 */
import test from 'ava';
import { confirm, createIntent, phone } from '../helpers/payment-intent-lifecycle.js';
import { withService } from '../helpers/service.js';

function assertPageHeaders(t: import('ava').ExecutionContext, what: string, headers: Headers): void {
  t.regex(headers.get('content-type') ?? '', /^text\/html/, `${what} is HTML`);
  const frame = headers.get('x-frame-options');
  const csp = headers.get('content-security-policy') ?? '';
  t.true(frame === 'DENY' || /frame-ancestors 'none'/.test(csp), `${what} cannot be framed`);
  t.is(headers.get('x-content-type-options'), 'nosniff', `${what}: nosniff`);
  t.truthy(headers.get('referrer-policy'), `${what}: a referrer policy`);
}

test('the checkout page, /docs and /docs/errors cannot be framed, sniffed or leak their URL as a referrer', async (t) => {
  const { service, key } = await withService(t);
  for (const path of ['/docs', '/docs/errors']) {
    const res = await fetch(service.baseUrl + path);
    t.is(res.status, 200, path);
    assertPageHeaders(t, path, res.headers);
  }
  const intent = await createIntent(service, key, { allowed_operators: ['wave'] });
  const answer = await confirm(service, key, intent.id, { operator: 'wave', phone_number: phone('225', '000') });
  t.is(answer.status, 200, answer.text);
  const page = await fetch(answer.body.next_action.redirect_to_url.url as string);
  t.is(page.status, 200);
  assertPageHeaders(t, 'the checkout page', page.headers);
});

test('every answer that carries a secret, and every other /v1 and /admin/v1 answer, is not to be stored', async (t) => {
  const { service, key } = await withService(t);
  const issued = await service.request('POST', '/admin/v1/api_keys', {
    headers: { Authorization: `Bearer ${service.adminToken}` },
    body: { project: 'other', livemode: false },
  });
  t.is(issued.status, 200);
  t.is(issued.headers.get('cache-control'), 'no-store', 'an issued API key');

  const endpoint = await service.request('POST', '/v1/webhook_endpoints', { key, body: { url: 'http://127.0.0.1:9/hook' } });
  t.is(endpoint.status, 200, endpoint.text);
  t.true(endpoint.text.includes('whsec_'));
  t.is(endpoint.headers.get('cache-control'), 'no-store', 'an endpoint with its secret');
  const rotated = await service.request('POST', `/v1/webhook_endpoints/${endpoint.body.id}/rotate_secret`, { key, body: {} });
  t.is(rotated.status, 200, rotated.text);
  t.is(rotated.headers.get('cache-control'), 'no-store', 'a rotated secret');

  const created = await service.request('POST', '/v1/payment_intents', { key, body: { amount: 100, currency: 'xof' } });
  t.true(created.text.includes('client_secret'));
  t.is(created.headers.get('cache-control'), 'no-store', 'a payment intent with its client secret');
  const read = await service.request('GET', `/v1/payment_intents/${created.body.id}`, { key });
  t.is(read.headers.get('cache-control'), 'no-store');
  const replay = await service.request('POST', '/v1/payment_intents', { key, body: { amount: 100, currency: 'xof' }, headers: { 'Idempotency-Key': 'k1' } });
  const replayed = await service.request('POST', '/v1/payment_intents', { key, body: { amount: 100, currency: 'xof' }, headers: { 'Idempotency-Key': 'k1' } });
  t.is(replay.headers.get('cache-control'), 'no-store');
  t.is(replayed.headers.get('idempotent-replayed'), 'true');
  t.is(replayed.headers.get('cache-control'), 'no-store', 'a replay too');
  const refused = await service.request('GET', '/v1/payment_intents/pi_nope', { key });
  t.is(refused.status, 404);
  t.is(refused.headers.get('cache-control'), 'no-store', 'an error answer too');
  t.is(refused.headers.get('x-content-type-options'), 'nosniff');
});
