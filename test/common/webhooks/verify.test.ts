import { randomBytes } from 'node:crypto';
import test from 'ava';
import { Webhook } from 'standardwebhooks';
import { signWebhook, webhookHeaders } from '../../../common/webhooks/sign.js';
import { verifyWebhook, WebhookVerificationError } from '../../../common/webhooks/verify.js';

const secret = `whsec_${randomBytes(24).toString('base64')}`;
const id = 'evt_0000000000000000000000';
const body = '{"id":"evt_0000000000000000000000","object":"event","data":{"object":{"description":"Ünïcode ✓"}}}';
const now = 1_767_000_000_000;
const ts = Math.floor(now / 1000);

function failsVerification(t: import('ava').ExecutionContext, fn: () => unknown, message: RegExp): void {
  const err = t.throws(fn, { instanceOf: WebhookVerificationError });
  t.regex(err?.message ?? '', message);
}

test('verifies a signed body and returns the parsed event', (t) => {
  const headers = webhookHeaders(secret, id, ts, body);
  const event = verifyWebhook<{ id: string }>(secret, headers, body, { now });
  t.is(event.id, id);
  t.deepEqual(verifyWebhook(secret, headers, Buffer.from(body, 'utf8'), { now }), JSON.parse(body));
});

test('changing one byte of the body fails verification', (t) => {
  const headers = webhookHeaders(secret, id, ts, body);
  const bytes = Buffer.from(body, 'utf8');
  for (const index of [0, 10, bytes.length - 1]) {
    const tampered = Buffer.from(bytes);
    tampered[index] = (tampered[index] as number) ^ 0x01;
    failsVerification(t, () => verifyWebhook(secret, headers, tampered, { now }), /no matching webhook signature/);
  }
});

test('a different webhook-id, timestamp or secret fails verification', (t) => {
  const headers = webhookHeaders(secret, id, ts, body);
  failsVerification(t, () => verifyWebhook(secret, { ...headers, 'webhook-id': 'evt_other' }, body, { now }), /no matching/);
  failsVerification(t, () => verifyWebhook(secret, { ...headers, 'webhook-timestamp': String(ts + 1) }, body, { now }), /no matching/);
  const other = `whsec_${randomBytes(24).toString('base64')}`;
  failsVerification(t, () => verifyWebhook(other, headers, body, { now }), /no matching/);
});

test('a timestamp outside the tolerance is refused either way', (t) => {
  const old = webhookHeaders(secret, id, ts - 301, body);
  failsVerification(t, () => verifyWebhook(secret, old, body, { now }), /too old/);
  const future = webhookHeaders(secret, id, ts + 301, body);
  failsVerification(t, () => verifyWebhook(secret, future, body, { now }), /too new/);
  t.notThrows(() => verifyWebhook(secret, old, body, { now, toleranceSeconds: 600 }));
  t.notThrows(() => verifyWebhook(secret, webhookHeaders(secret, id, ts - 300, body), body, { now }));
});

test('missing or malformed headers are refused with a clear error', (t) => {
  const headers = webhookHeaders(secret, id, ts, body);
  for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) {
    const without = { ...headers, [name]: undefined };
    failsVerification(t, () => verifyWebhook(secret, without, body, { now }), /missing/);
  }
  failsVerification(t, () => verifyWebhook(secret, { ...headers, 'webhook-timestamp': 'soon' }, body, { now }), /invalid webhook-timestamp/);
  failsVerification(t, () => verifyWebhook(secret, { ...headers, 'webhook-signature': 'v1' }, body, { now }), /no matching/);
  failsVerification(t, () => verifyWebhook(secret, { ...headers, 'webhook-signature': headers['webhook-signature']!.replace('v1,', 'v2,') }, body, { now }), /no matching/);
});

test('one matching signature among several space-separated ones is enough', (t) => {
  const headers = webhookHeaders(secret, id, ts, body);
  const other = signWebhook(`whsec_${randomBytes(24).toString('base64')}`, id, ts, body);
  const several = { ...headers, 'webhook-signature': `v1a,xyz ${other} ${headers['webhook-signature']}` };
  t.notThrows(() => verifyWebhook(secret, several, body, { now }));
});

test('header names are case-insensitive, and a fetch Headers object works', (t) => {
  const headers = webhookHeaders(secret, id, ts, body);
  const upper = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toUpperCase(), v]));
  t.notThrows(() => verifyWebhook(secret, upper, body, { now }));
  t.notThrows(() => verifyWebhook(secret, new Headers(headers), body, { now: new Date(now) }));
});

test('a body that verifies but is not JSON is refused', (t) => {
  const headers = webhookHeaders(secret, id, ts, 'not json');
  failsVerification(t, () => verifyWebhook(secret, headers, 'not json', { now }), /not JSON/);
});

test('the standardwebhooks package verifies what we sign, and we verify what it signs', (t) => {
  const headers = webhookHeaders(secret, id, Math.floor(Date.now() / 1000), body);
  const wh = new Webhook(secret);
  t.deepEqual(wh.verify(body, headers), JSON.parse(body));
  const theirs = wh.sign(id, new Date(now), body);
  t.is(theirs, signWebhook(secret, id, ts, body));
  t.notThrows(() => verifyWebhook(secret, { 'webhook-id': id, 'webhook-timestamp': String(ts), 'webhook-signature': theirs }, body, { now }));
});
