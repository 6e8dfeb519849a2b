/**
 * The M-Pesa connector (worker/operators/mpesa.ts) against a local fake of Daraja
 * (test/fakes/mpesa-fake.ts), with a real Redis (token lock) and FerretDB (claims
 * and recorded callbacks). A small receiver plays the callback routes: it records
 * what Daraja calls back with `recordStkCallback` and `recordReversalResult`.
 */
import test from 'ava';
import { Redis } from 'ioredis';
import { MongoClient, type Db } from 'mongodb';
import type { MpesaConfig } from '../../../common/config.js';
import { OperatorUnavailableError, isInfrastructureError } from '../../../common/infra-errors.js';
import { OperatorRequestError, type PaymentAttemptRequest, type RefundRequest } from '../../../worker/operators/connector.js';
import { MPESA_COLLECTIONS, mpesaCallbackToken, mpesaTokenValid, recordB2cResult, recordReversalResult, recordStkCallback, recordTransactionStatus } from '../../../worker/operators/mpesa/callbacks.js';
import { mpesaConnector } from '../../../worker/operators/mpesa/connector.js';
import { FakeServer } from '../../fakes/fake-server.js';
import { MpesaFake } from '../../fakes/mpesa-fake.js';
import { stackUrls, uniqueName, until } from '../../helpers/service.js';

/** The callbacks' service key (common/service-keys.ts), not a Daraja credential. */
const KEY = Buffer.alloc(32, 7);

const credentials = {
  consumerKey: 'consumer-key-abcdef', consumerSecret: 'consumer-secret-123456', shortcode: '174379',
  passkey: 'bfb279f9aa9bdbcf158e97dd71a467cd2e0c893059b10f78e6b72ada1ed2c919', initiatorName: 'testapi', securityCredential: 'encrypted-credential-xyz',
};

let fake: MpesaFake;
let routes: FakeServer;
let redis: Redis;
let mongo: MongoClient;
let db: Db;
const recorded: Array<{ path: string; answer: unknown }> = [];

test.before(async () => {
  fake = await new MpesaFake(credentials).start();
  redis = new Redis(stackUrls().redisUrl);
  mongo = new MongoClient(stackUrls().mongoUrl);
  await mongo.connect();
  db = mongo.db(uniqueName('mpesa'));
  routes = await new FakeServer(async (request) => {
    const params = Object.fromEntries(request.query);
    const answer = request.path === '/operators/mpesa/callback'
      ? await recordStkCallback(db, KEY, params, request.body)
      : params.status
        ? await recordTransactionStatus(db, KEY, params, request.body)
        : await recordReversalResult(db, KEY, params, request.body);
    recorded.push({ path: request.path, answer });
    return { status: 200, body: { ResultCode: 0, ResultDesc: 'Accepted' } };
  }).start();
});

test.after.always(async () => {
  await fake.stop();
  await routes.stop();
  redis.disconnect();
  await db.dropDatabase().catch(() => undefined);
  await mongo.close();
});

function config(overrides: Partial<MpesaConfig> = {}): MpesaConfig {
  return { baseUrl: fake.url, ...credentials, ...overrides };
}

function connector(options: { now?: () => number; timeoutMs?: number; config?: MpesaConfig } = {}) {
  return mpesaConnector(options.config ?? config(), {
    redis, db, prefix: uniqueName('mpesa'), now: options.now ?? Date.now, timeoutMs: options.timeoutMs ?? 2_000, callbackKey: async () => KEY,
  });
}

let phones = 0;
function attempt(): PaymentAttemptRequest {
  const id = uniqueName('pi');
  phones++;
  return {
    attemptId: `${id}:1`, paymentIntent: id, amount: 10_000, currency: 'kes',
    phoneNumber: `+2547${String(10_000_000 + phones).slice(-8)}`, returnUrl: null,
    callbackUrl: `${routes.url}/operators/mpesa/callback`,
  };
}

function refundOf(request: PaymentAttemptRequest, overrides: Partial<RefundRequest> = {}): RefundRequest {
  return {
    refundId: uniqueName('re'), paymentIntent: request.paymentIntent, attemptId: request.attemptId, paymentReference: null,
    amount: request.amount, currency: request.currency, phoneNumber: request.phoneNumber,
    callbackUrl: `${routes.url}/operators/mpesa/result`, reason: null, ...overrides,
  };
}

test.serial('an STK push, pending while the payer decides, then the callback says "look again" and the query says succeeded', async (t) => {
  const mpesa = connector();
  const request = attempt();
  const { operatorReference } = await mpesa.requestPayment(request);
  const push = fake.pushes.get(operatorReference!)!;
  t.like(push, { phone: request.phoneNumber.slice(1), amount: 100 });
  t.deepEqual(await mpesa.outcome(request.attemptId, operatorReference), { kind: 'pending' }, "Daraja's 500 \"being processed\" is pending");
  await fake.settle(operatorReference!);
  t.deepEqual(recorded.at(-1), { path: '/operators/mpesa/callback', answer: { attemptId: request.attemptId } });
  const outcome = await mpesa.outcome(request.attemptId, operatorReference);
  t.deepEqual(outcome, { kind: 'succeeded', operatorReference: push.receipt }, 'the receipt, from the recorded callback');
  const stored = await db.collection(MPESA_COLLECTIONS.results).findOne({ _id: `stk:${request.attemptId}` as never });
  t.false(JSON.stringify(stored).includes(request.phoneNumber.slice(1)), 'the phone number is not kept');
});

test.serial("Daraja's ResultCodes map to the decline codes", async (t) => {
  const mpesa = connector();
  // A code Daraja does not document (4242) is no decline we can name: still pending, asked again.
  const table = { 1: 'insufficient_funds', 1032: 'payer_declined', 1037: 'approval_timeout', 2001: 'incorrect_pin', 9999: 'operator_unavailable', 4242: null } as const;
  for (const [code, decline] of Object.entries(table)) {
    const request = attempt();
    fake.outcomes.set(request.phoneNumber.slice(1), Number(code));
    const { operatorReference } = await mpesa.requestPayment(request);
    await fake.settle(operatorReference!);
    t.deepEqual(await mpesa.outcome(request.attemptId), decline ? { kind: 'declined', code: decline, operatorCode: code } : { kind: 'pending' }, code);
  }
});

test.serial('a retried job never pushes twice: the claim keeps the CheckoutRequestID', async (t) => {
  const request = attempt();
  const first = await connector().requestPayment(request);
  const again = await connector().requestPayment(request);
  t.is(again.operatorReference, first.operatorReference);
  t.is(fake.pushesFor(request.attemptId), 1);
});

test.serial('two workers asking for one attempt at once: one push, the other retries later', async (t) => {
  const request = attempt();
  const [a, b] = await Promise.allSettled([connector().requestPayment(request), connector().requestPayment(request)]);
  const won = [a, b].filter((r) => r.status === 'fulfilled');
  const lost = [a, b].filter((r): r is PromiseRejectedResult => r.status === 'rejected');
  t.is(won.length, 1);
  t.is(lost.length, 1);
  t.true(lost[0]!.reason instanceof OperatorUnavailableError && isInfrastructureError(lost[0]!.reason));
  t.is(fake.pushesFor(request.attemptId), 1);
  t.deepEqual(await connector().requestPayment(request), (won[0] as PromiseFulfilledResult<unknown>).value, 'its retry reuses the push');
});

test.serial('a crash while the push is in flight: the retry waits, then never pushes again; the callback names the attempt and the query decides', async (t) => {
  let now = Date.now();
  const clock = () => now;
  const request = attempt();
  const mpesa = connector({ now: clock, timeoutMs: 200 });
  await mpesa.outcome(attempt().attemptId, 'ws_CO_unknown').catch(() => undefined); // a token first
  fake.server.delayMs = 600;
  const err = await t.throwsAsync(mpesa.requestPayment(request), { instanceOf: OperatorUnavailableError });
  t.is(err?.reason, 'timeout');
  fake.server.delayMs = 0;
  t.is(fake.pushesFor(request.attemptId), 1, 'the push reached Daraja; its answer was lost');
  const retried = connector({ now: clock, timeoutMs: 200 });
  const inFlight = await t.throwsAsync(retried.requestPayment(request), { instanceOf: OperatorUnavailableError });
  t.is(inFlight?.reason, 'in_flight');
  t.true(isInfrastructureError(inFlight), 'retried later');
  now += 10_000;
  t.deepEqual(await retried.requestPayment(request), {}, 'its fate unknown: nothing sent again');
  t.is(fake.pushesFor(request.attemptId), 1, 'the payer was asked once');
  t.deepEqual(await retried.outcome(request.attemptId), { kind: 'pending' });
  await fake.settle(fake.pushFor(request.attemptId)!.checkoutRequestId);
  t.like(await retried.outcome(request.attemptId), { kind: 'succeeded' }, "the callback gave Daraja's id; the query gave the answer");
});

test.serial('a token that cannot be had frees the claim: the push never left, so the retry sends it', async (t) => {
  const request = attempt();
  fake.server.delayMs = 500;
  const err = await t.throwsAsync(connector({ timeoutMs: 150 }).requestPayment(request), { instanceOf: OperatorUnavailableError });
  t.is(err?.reason, 'timeout');
  fake.server.delayMs = 0;
  t.is(fake.pushesFor(request.attemptId), 0);
  await connector().requestPayment(request);
  t.is(fake.pushesFor(request.attemptId), 1);
});

test.serial('a Daraja 500 frees the claim: infrastructure, no push, and the retry pushes once', async (t) => {
  const mpesa = connector();
  const request = attempt();
  await mpesa.outcome(request.attemptId, 'ws_CO_unknown').catch(() => undefined);
  fake.server.failNext(1, 503);
  const err = await t.throwsAsync(mpesa.requestPayment(request), { instanceOf: OperatorUnavailableError });
  t.true(isInfrastructureError(err));
  t.is(fake.pushesFor(request.attemptId), 0);
  await mpesa.requestPayment(request);
  t.is(fake.pushesFor(request.attemptId), 1);
});

test.serial("a wrong passkey is Daraja's 500 \"Wrong credentials\": nothing pushed, nothing declined, no secret in the error", async (t) => {
  const request = attempt();
  const err = await t.throwsAsync(connector({ config: config({ passkey: 'wrong-passkey' }) }).requestPayment(request), { instanceOf: OperatorUnavailableError });
  t.is(err?.status, 500);
  t.is(fake.pushesFor(request.attemptId), 0);
  for (const secret of ['wrong-passkey', credentials.consumerSecret, request.phoneNumber.slice(1)]) t.false(err?.message.includes(secret));
  const badKey = await t.throwsAsync(connector({ config: config({ consumerKey: 'nope' }) }).requestPayment(attempt()), { instanceOf: OperatorRequestError });
  t.is(badKey?.operatorCode, '400.008.01');
});

test.serial('an invalid phone number is refused at once as payer_not_found, its number not in the error', async (t) => {
  const request = { ...attempt(), phoneNumber: '+254612345678' };
  const err = await t.throwsAsync(connector().requestPayment(request), { instanceOf: OperatorRequestError });
  t.is(err?.declineCode, 'payer_not_found');
  t.false(err?.message.includes('254612345678'));
  // Daraja is Kenya only: a Tanzanian number never reaches it.
  const abroad = await t.throwsAsync(connector().requestPayment({ ...attempt(), phoneNumber: '+255712345678', currency: 'tzs' }), { instanceOf: OperatorRequestError });
  t.like(abroad, { operatorCode: 'kenya_only', sent: false });
  await t.notThrowsAsync(connector().requestPayment({ ...request, phoneNumber: '+254712345678', attemptId: `${request.attemptId}x` }), 'the claim was freed');
});

test.serial('the token is cached, refreshed before expiry, and fetched again when Daraja says it is invalid', async (t) => {
  let now = Date.now();
  const mpesa = connector({ now: () => now });
  const before = fake.tokensIssued;
  const request = attempt();
  const { operatorReference } = await mpesa.requestPayment(request);
  await mpesa.outcome(request.attemptId, operatorReference);
  t.is(fake.tokensIssued - before, 1);
  now += 3_599_000 - 59_000;
  await mpesa.outcome(request.attemptId, operatorReference);
  t.is(fake.tokensIssued - before, 2, 'refreshed a minute before expiry');
  (fake as unknown as { tokens: Set<string> }).tokens.clear();
  t.deepEqual(await mpesa.outcome(request.attemptId, operatorReference), { kind: 'pending' });
  t.is(fake.tokensIssued - before, 3);
});

test.serial('forged, repeated and malformed callbacks change nothing', async (t) => {
  const mpesa = connector();
  const request = attempt();
  const { operatorReference } = await mpesa.requestPayment(request);
  const push = fake.pushes.get(operatorReference!)!;
  const forged = { Body: { stkCallback: { CheckoutRequestID: operatorReference, ResultCode: 0, CallbackMetadata: { Item: [{ Name: 'MpesaReceiptNumber', Value: 'FORGED0001' }] } } } };
  t.is(await recordStkCallback(db, KEY, { attempt: request.attemptId, t: 'guessed' }, forged), null);
  t.is(await recordStkCallback(db, KEY, { attempt: request.attemptId }, forged), null);
  t.is(await recordStkCallback(db, KEY, { attempt: request.attemptId, t: mpesaCallbackToken(KEY, 'another') }, forged), null);
  t.is(await recordStkCallback(db, KEY, { attempt: request.attemptId, t: mpesaCallbackToken(KEY, request.attemptId) }, { hello: 1 }), null);
  t.deepEqual(await mpesa.outcome(request.attemptId, operatorReference), { kind: 'pending' }, 'still the query\'s answer');
  await fake.settle(operatorReference!);
  const token = mpesaCallbackToken(KEY, request.attemptId);
  t.deepEqual(await recordStkCallback(db, KEY, { attempt: request.attemptId, t: token }, forged), { attemptId: request.attemptId }, 'a late duplicate is only "look again"');
  t.deepEqual(await mpesa.outcome(request.attemptId, operatorReference), { kind: 'succeeded', operatorReference: push.receipt }, 'the first genuine receipt stays');
});

test.serial('a refund is a reversal of the receipt; its Result arrives at the ResultURL; a retry reverses nothing twice', async (t) => {
  const mpesa = connector();
  const request = attempt();
  const { operatorReference } = await mpesa.requestPayment(request);
  await fake.settle(operatorReference!);
  const refund = refundOf(request);
  const started = await mpesa.refund(refund);
  t.is(started.kind, 'pending');
  const conversation = started.kind === 'pending' ? started.operatorReference! : '';
  t.deepEqual(await mpesa.refund(refund), started, 'the retried job: the same reversal, nothing sent');
  t.is([...fake.reversals.values()].filter((r) => new URL(r.resultUrl).searchParams.get('refund') === refund.refundId).length, 1);
  t.deepEqual(await mpesa.refundOutcome(refund, conversation), { kind: 'pending', operatorReference: conversation });
  t.is(await recordReversalResult(db, KEY, { refund: refund.refundId, t: 'forged' }, { Result: { ResultCode: 0 } }), null, 'a forged result');
  t.is(await recordReversalResult(db, KEY, { refund: refund.refundId, t: mpesaCallbackToken(KEY, refund.refundId) }, { requestId: 'x' }), null, 'a queue time-out notice is not a result');
  const otherConversation = { Result: { ResultCode: 0, OriginatorConversationID: 'AG_20260101_someone_else', TransactionID: 'QK00000000' } };
  t.is(await recordReversalResult(db, KEY, { refund: refund.refundId, t: mpesaCallbackToken(KEY, refund.refundId) }, otherConversation), null, "a Result of another conversation is not this reversal's");
  t.deepEqual(await mpesa.refundOutcome(refund, conversation), { kind: 'pending', operatorReference: conversation }, 'nothing was recorded');
  await fake.deliverReversal(conversation);
  t.like(await mpesa.refundOutcome(refund, conversation), { kind: 'succeeded' });

  const again = refundOf(request);
  await mpesa.refund(again);
  await fake.deliverReversal([...fake.reversals.keys()].at(-1)!);
  t.like(await mpesa.refundOutcome(again), { kind: 'succeeded' }, 'R000001 "already reversed": the money is back');
});

test.serial('refunds that cannot be made: no receipt (callback lost), a partial amount, a wrong initiator', async (t) => {
  const mpesa = connector();
  const lost = attempt();
  fake.dropCallbacks = true;
  const { operatorReference } = await mpesa.requestPayment(lost);
  await fake.settle(operatorReference!);
  fake.dropCallbacks = false;
  t.like(await mpesa.outcome(lost.attemptId, operatorReference), { kind: 'succeeded' }, 'the poll finds the payment without the callback');
  // No receipt from the callback: Daraja's Transaction Status API is asked for it, and the reversal follows.
  const lostRefund = refundOf(lost);
  t.deepEqual(await mpesa.refund(lostRefund), { kind: 'pending' });
  await until('the Transaction Status result', async () => (await db.collection(MPESA_COLLECTIONS.results).findOne({ _id: `status:stk:${lost.attemptId}` as never })) ?? undefined);
  const reversing = await mpesa.refundOutcome(lostRefund);
  t.like(reversing, { kind: 'pending' });
  t.truthy(reversing.kind === 'pending' && reversing.operatorReference, 'the reversal was sent with the recovered receipt');

  const paid = attempt();
  const payment = await mpesa.requestPayment(paid);
  await fake.settle(payment.operatorReference!);
  t.like(await mpesa.refund(refundOf(paid, { amount: 5_000 })), { kind: 'failed', operatorCode: 'partial_reversal_unsupported' });
  const wrongInitiator = connector({ config: config({ initiatorName: 'someone-else' }) });
  const refund = refundOf(paid);
  const started = await wrongInitiator.refund(refund);
  await fake.deliverReversal(started.kind === 'pending' ? started.operatorReference! : '');
  t.deepEqual(await wrongInitiator.refundOutcome(refund), { kind: 'failed', code: 'generic_decline', operatorCode: '2001' });
});

test.serial("callback tokens are keyed with the service key, not the consumer secret: rotating Daraja's credentials strands no callback", async (t) => {
  const request = attempt();
  await connector().requestPayment(request);
  const push = fake.pushFor(request.attemptId)!;
  await fake.settle(push.checkoutRequestId);
  const token = new URL(push.callbackUrl).searchParams.get('t');
  t.true(mpesaTokenValid(KEY, request.attemptId, token));
  t.false(mpesaTokenValid(KEY, request.attemptId, token, Math.floor(Date.now() / 1000) + 3 * 24 * 3600), 'it expires');
  t.false(mpesaTokenValid(KEY, request.attemptId, mpesaCallbackToken(KEY, request.attemptId, Math.floor(Date.now() / 1000) - 1)), 'an expired token is refused');
  t.false(mpesaTokenValid(Buffer.from(credentials.consumerSecret), request.attemptId, token), 'not keyed with the consumer secret');
  // Nothing of Daraja's credentials is in it: a callback in flight verifies whatever they become.
  t.deepEqual(await recordStkCallback(db, KEY, { attempt: request.attemptId, t: token }, fake.stkCallback(push)), { attemptId: request.attemptId });
});

test.serial("a Result that outruns the recording of Daraja's answer is kept; once the answer is recorded, another conversation's is not", async (t) => {
  const requests = db.collection<{ _id: string; created_at: number; operator_id?: string }>(MPESA_COLLECTIONS.requests);
  const results = db.collection<{ _id: string; operator_id?: string; result_code: string }>(MPESA_COLLECTIONS.results);
  const payout = uniqueName('po');
  const refund = uniqueName('re');
  const declined = (conversation: string) => ({ Result: { ResultType: 0, ResultCode: 2040, ConversationID: conversation, OriginatorConversationID: conversation, TransactionID: 'QK00000000' } });
  const b2c = (body: unknown) => recordB2cResult(db, KEY, { payout, t: mpesaCallbackToken(KEY, payout) }, body);
  const reversal = (body: unknown) => recordReversalResult(db, KEY, { refund, t: mpesaCallbackToken(KEY, refund) }, body);

  t.is(await b2c(declined('AG_1')), null, 'no claim: we sent no such request');
  t.is(await reversal(declined('AG_1')), null, 'no claim: we sent no such reversal');
  await requests.insertMany([{ _id: `b2c:${payout}`, created_at: Date.now() }, { _id: `reversal:${refund}`, created_at: Date.now() }]);
  t.is(await b2c({ Result: { ResultCode: 2040 } }), null, 'a Result without a conversation');
  t.deepEqual(await b2c(declined('AG_1')), { payoutId: payout }, 'claimed, its answer not yet recorded: the Result is kept');
  t.deepEqual(await reversal(declined('AG_2')), { refundId: refund });
  t.like(await results.findOne({ _id: `b2c:${payout}` }), { operator_id: 'AG_1', result_code: '2040' });
  t.like(await results.findOne({ _id: `reversal:${refund}` }), { operator_id: 'AG_2', result_code: '2040' });

  const later = uniqueName('po');
  await requests.insertOne({ _id: `b2c:${later}`, created_at: Date.now(), operator_id: 'AG_3' });
  t.is(await recordB2cResult(db, KEY, { payout: later, t: mpesaCallbackToken(KEY, later) }, declined('AG_4')), null, "the answer recorded: another conversation's Result is ignored");
  t.is(await results.findOne({ _id: `b2c:${later}` }), null);
  t.deepEqual(await recordB2cResult(db, KEY, { payout: later, t: mpesaCallbackToken(KEY, later) }, declined('AG_3')), { payoutId: later });
});
