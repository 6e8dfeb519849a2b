/**
 * The Wave connector (worker/operators/wave.ts) against a local fake of the Checkout
 * API (test/fakes/wave-fake.ts), and the webhook signature check.
 */
import test from 'ava';
import { Redis } from 'ioredis';
import { MongoClient } from 'mongodb';
import { OperatorUnavailableError, isInfrastructureError } from '../../../common/infra-errors.js';
import { OperatorRequestError, type PaymentAttemptRequest } from '../../../worker/operators/connector.js';
import { parseWaveWebhook, verifyWaveSignature } from '../../../worker/operators/wave/callbacks.js';
import { waveConnector } from '../../../worker/operators/wave/connector.js';
import { FakeServer } from '../../fakes/fake-server.js';
import { WaveFake } from '../../fakes/wave-fake.js';
import { stackUrls, uniqueName } from '../../helpers/service.js';

const apiKey = 'wave_sn_prod_YhUNb9dFakeFakeFakeFakei4bA6';
const webhookSecret = 'wave_sn_WHS_fake_webhook_secret_1234';

let fake: WaveFake;
let receiver: FakeServer;
let redis: Redis;
let mongo: MongoClient;

test.before(async () => {
  fake = await new WaveFake(apiKey, webhookSecret).start();
  receiver = await new FakeServer(() => ({ status: 200 })).start();
  fake.webhookUrl = `${receiver.url}/operators/wave/webhook`;
  redis = new Redis(stackUrls().redisUrl);
  mongo = new MongoClient(stackUrls().mongoUrl);
});

test.after.always(async () => {
  await fake.stop();
  await receiver.stop();
  redis.disconnect();
  await mongo.close();
});

function connector(options: { timeoutMs?: number; apiKey?: string } = {}) {
  return waveConnector({ baseUrl: fake.url, apiKey: options.apiKey ?? apiKey, webhookSecret }, {
    redis, db: mongo.db('unused'), prefix: uniqueName('wave'), now: Date.now, timeoutMs: options.timeoutMs ?? 2_000, callbackKey: async () => Buffer.alloc(32),
  });
}

function attempt(): PaymentAttemptRequest {
  const id = uniqueName('pi');
  return {
    attemptId: `${id}:1`, paymentIntent: id, amount: 2500, currency: 'xof', phoneNumber: '+221771234567',
    returnUrl: 'https://shop.example/return', callbackUrl: 'https://pay.example/operators/wave/callback',
  };
}

test.serial('a checkout session per attempt: its wave_launch_url is the redirect, the session GET gives the outcome, the webhook verifies', async (t) => {
  const wave = connector();
  const request = attempt();
  const requested = await wave.requestPayment(request);
  const session = fake.sessions.get(requested.operatorReference!)!;
  t.is(requested.redirectUrl, session.wave_launch_url);
  t.like(session, { amount: '2500', currency: 'XOF', client_reference: request.attemptId, success_url: request.returnUrl, error_url: request.returnUrl });
  t.deepEqual(await wave.outcome(request.attemptId, requested.operatorReference), { kind: 'pending' });
  await fake.pay(session.id);
  t.deepEqual(await wave.outcome(request.attemptId, requested.operatorReference), { kind: 'succeeded', operatorReference: session.id });
  t.deepEqual(await wave.outcome(request.attemptId), { kind: 'succeeded', operatorReference: session.id }, 'found by client_reference too');

  const delivered = receiver.log.find((r) => r.path === '/operators/wave/webhook')!;
  const signature = delivered.headers['wave-signature'] as string;
  t.is(verifyWaveSignature(webhookSecret, signature, delivered.raw, Date.now()), 'ok');
  t.deepEqual(parseWaveWebhook(JSON.parse(delivered.raw)), { type: 'checkout.session.completed', sessionId: session.id, attemptId: request.attemptId });
});

test.serial("a failed payment leaves the session open (pending); at expiry Wave's last error is the decline", async (t) => {
  const wave = connector();
  const table = {
    'insufficient-funds': 'insufficient_funds',
    'blocked-account': 'payer_account_blocked',
    'kyb-limits-exceeded': 'limit_exceeded',
    'payment-failure': 'operator_unavailable',
    'cross-border-payment-not-allowed': 'generic_decline',
  } as const;
  for (const [code, decline] of Object.entries(table)) {
    const request = attempt();
    const { operatorReference } = await wave.requestPayment(request);
    await fake.failPayment(operatorReference!, code);
    t.like(await wave.outcome(request.attemptId, operatorReference), { kind: 'pending', failedTry: { code: decline, operatorCode: code } }, 'the payer may still try again; the failed try is shown');
    await fake.expire(operatorReference!);
    t.deepEqual(await wave.outcome(request.attemptId, operatorReference), { kind: 'declined', code: decline, operatorCode: code });
  }
  const abandoned = attempt();
  const { operatorReference } = await wave.requestPayment(abandoned);
  await fake.expire(operatorReference!);
  t.like(await wave.outcome(abandoned.attemptId, operatorReference), { kind: 'declined', code: 'approval_timeout' });
});

test.serial('a retry after a crash sends the same idempotency-key: one session per attempt', async (t) => {
  const request = attempt();
  fake.server.delayMs = 500;
  const err = await t.throwsAsync(connector({ timeoutMs: 150 }).requestPayment(request), { instanceOf: OperatorUnavailableError });
  t.is(err?.reason, 'timeout');
  fake.server.delayMs = 0;
  const again = await connector().requestPayment(request);
  t.is(fake.server.log.filter((r) => r.method === 'POST' && r.headers['idempotency-key'] === request.attemptId).length, 2);
  t.is(fake.sessionsFor(request.attemptId).length, 1, 'one checkout session');
  t.is(again.operatorReference, fake.sessionsFor(request.attemptId)[0]!.id);
});

test.serial('a Wave 500 is an infrastructure fault, never a decline', async (t) => {
  const wave = connector();
  const request = attempt();
  fake.server.failNext(1, 500);
  const err = await t.throwsAsync(wave.requestPayment(request), { instanceOf: OperatorUnavailableError });
  t.true(isInfrastructureError(err));
  t.is(fake.sessionsFor(request.attemptId).length, 0);
  const { operatorReference } = await wave.requestPayment(request);
  fake.server.failNext(1, 502);
  await t.throwsAsync(wave.outcome(request.attemptId, operatorReference), { instanceOf: OperatorUnavailableError });
});

test.serial("Wave's documented refusals: a wrong key is 401, a bad request 400; neither names the key", async (t) => {
  const err = await t.throwsAsync(connector({ apiKey: 'wave_sn_prod_wrong' }).requestPayment(attempt()), { instanceOf: OperatorRequestError });
  t.is(err?.status, 401);
  t.is(err?.operatorCode, 'no-matching-api-key');
  t.false(err?.message.includes('wave_sn_prod_wrong'));
  const httpReturn = { ...attempt(), returnUrl: 'http://shop.example/return' };
  const err2 = await t.throwsAsync(connector().requestPayment(httpReturn), { instanceOf: OperatorRequestError });
  t.is(err2?.operatorCode, 'request-validation-error');
});

test.serial('a refund refunds the session once; a retried refund replays its answer; an unpaid session cannot be refunded', async (t) => {
  const wave = connector();
  const request = attempt();
  const { operatorReference } = await wave.requestPayment(request);
  await fake.pay(operatorReference!);
  const refund = {
    refundId: uniqueName('re'), paymentIntent: request.paymentIntent, attemptId: request.attemptId, paymentReference: operatorReference!,
    amount: 2500, currency: 'xof', phoneNumber: null, callbackUrl: 'https://pay.example/operators/wave/callback', reason: null,
  };
  t.deepEqual(await wave.refund(refund), { kind: 'succeeded', operatorReference });
  t.deepEqual(await wave.refund(refund), { kind: 'succeeded', operatorReference }, 'the same idempotency-key: the first answer');
  t.deepEqual(await wave.refundOutcome(refund, operatorReference), { kind: 'succeeded', operatorReference });
  // Wave refunds a session whole, once: Wave refuses another refund of it, and its
  // transaction list shows the session's money back, which is what any refund of it asked.
  const before = fake.transactions.length;
  t.like(await wave.refund({ ...refund, refundId: uniqueName('re') }), { kind: 'succeeded' }, 'a second refund of the same session moves no money');
  t.is(fake.transactions.length, before);
  t.like(await wave.refund({ ...refund, paymentReference: null }), { kind: 'succeeded' }, 'the session found by client_reference');

  const unpaid = attempt();
  const session = await wave.requestPayment(unpaid);
  t.like(await wave.refund({ ...refund, refundId: uniqueName('re'), attemptId: unpaid.attemptId, paymentReference: session.operatorReference! }), {
    kind: 'failed', code: 'generic_decline', operatorCode: 'checkout-refund-failed',
  });
});

test('the webhook signature: good, forged, tampered, stale, malformed', (t) => {
  const session = { id: 'cos-1', client_reference: 'pi_1:1', checkout_status: 'complete', payment_status: 'succeeded' };
  const now = Date.now();
  const good = fake.signedWebhook('checkout.session.completed', session as never, Math.floor(now / 1000));
  t.is(verifyWaveSignature(webhookSecret, good.signature, good.body, now), 'ok');
  t.is(verifyWaveSignature(webhookSecret, good.signature, Buffer.from(good.body), now), 'ok', 'raw bytes too');
  const forged = fake.signedWebhook('checkout.session.completed', session as never, Math.floor(now / 1000), 'not-the-secret');
  t.is(verifyWaveSignature(webhookSecret, forged.signature, forged.body, now), 'mismatch');
  t.is(verifyWaveSignature(webhookSecret, good.signature, good.body.replace('succeeded', 'cancelled'), now), 'mismatch', 'a changed body');
  const stale = fake.signedWebhook('checkout.session.completed', session as never, Math.floor(now / 1000) - 301);
  t.is(verifyWaveSignature(webhookSecret, stale.signature, stale.body, now), 'stale');
  t.is(verifyWaveSignature(webhookSecret, `${forged.signature},v1=${good.signature.split('v1=')[1]}`, good.body, now), 'ok', 'one of several v1 (a rotated secret)');
  t.is(verifyWaveSignature(webhookSecret, undefined, good.body, now), 'missing');
  t.is(verifyWaveSignature(webhookSecret, 'garbage', good.body, now), 'malformed');
  t.is(verifyWaveSignature(webhookSecret, `t=${Math.floor(now / 1000)}`, good.body, now), 'malformed');
});
