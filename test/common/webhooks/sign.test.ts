import { createHmac, randomBytes } from 'node:crypto';
import test from 'ava';
import { Webhook } from 'standardwebhooks';
import Stripe from 'stripe';
import { signWebhook, stripeSignature, webhookHeaders } from '../../../common/webhooks/sign.js';

/** The official SDK, for its webhook helpers only: it never calls anything. */
const stripe = new Stripe('sk_test_unused');

test('a signature is v1, then the base64 HMAC-SHA256 of id.timestamp.body keyed with the decoded secret', (t) => {
  // Test vector from the Standard Webhooks specification.
  const vectorSecret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
  const signature = signWebhook(vectorSecret, 'msg_p5jXN8AQM9LWM0D4loKWxJek', 1614265330, '{"test": 2432232314}');
  t.is(signature, 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
});

test('Stripe-Signature is t=, then v1= the hex HMAC-SHA256 of "t.body" keyed with the whole secret string, and the Stripe SDK verifies it', (t) => {
  const secret = `whsec_${randomBytes(24).toString('base64')}`;
  const body = '{"id":"evt_1","object":"event","type":"payment_intent.created"}';
  const ts = Math.floor(Date.now() / 1000);
  const header = webhookHeaders(secret, 'evt_1', ts, body)['stripe-signature'] as string;
  const expected = createHmac('sha256', secret).update(`${ts}.${body}`).digest('hex');
  t.is(header, `t=${ts},v1=${expected}`);
  const event = stripe.webhooks.constructEvent(body, header, secret);
  t.is(event.id, 'evt_1');
  // Keyed with the string as shown: the decoded key (Standard Webhooks') is another key.
  t.throws(() => stripe.webhooks.constructEvent(body, header, secret.slice('whsec_'.length)));
  t.throws(() => stripe.webhooks.constructEvent(`${body} `, header, secret));
});

test('during a rotation Stripe-Signature carries one v1= per secret, and a receiver holding either verifies', (t) => {
  const [current, previous] = [`whsec_${randomBytes(24).toString('base64')}`, `whsec_${randomBytes(24).toString('base64')}`] as [string, string];
  const body = '{"id":"evt_2"}';
  const ts = Math.floor(Date.now() / 1000);
  const headers = webhookHeaders([current, previous], 'evt_2', ts, body);
  const header = headers['stripe-signature'] as string;
  t.is(header, stripeSignature([current, previous], ts, body));
  t.is(header.split(',').filter((part) => part.startsWith('v1=')).length, 2);
  for (const secret of [current, previous]) {
    t.is(stripe.webhooks.constructEvent(body, header, secret).id, 'evt_2');
    t.deepEqual(new Webhook(secret).verify(body, headers), { id: 'evt_2' });
  }
  t.throws(() => stripe.webhooks.constructEvent(body, header, `whsec_${randomBytes(24).toString('base64')}`));
});
