/**
 * The MTN MoMo connector (worker/operators/mtn-momo.ts) against a local fake of the
 * Open API (test/fakes/mtn-momo-fake.ts), with a real Redis for the token lock.
 */
import test from 'ava';
import { Redis } from 'ioredis';
import { MongoClient } from 'mongodb';
import type { MtnMomoConfig } from '../../../common/config.js';
import { OperatorUnavailableError, isInfrastructureError } from '../../../common/infra-errors.js';
import { OperatorRequestError, type PaymentAttemptRequest } from '../../../worker/operators/connector.js';
import { mtnMomoConnector } from '../../../worker/operators/mtn-momo/connector.js';
import { mtnReferenceId } from '../../../worker/operators/mtn-momo/wire.js';
import { FakeServer } from '../../fakes/fake-server.js';
import { MtnMomoFake } from '../../fakes/mtn-momo-fake.js';
import { sleep, stackUrls, uniqueName } from '../../helpers/service.js';

/** How long a refresh is watched to show that it does NOT ask for a token while another process holds the lock (it polls every 10 to 40 ms). */
const STILL_WAITING_MS = 150;

const collection = { subscriptionKey: 'col-sub-key-1234', userId: '0efc4721-b2ec-409c-bcd4-429b4cb8e8e5', apiKey: 'col-api-key-secret-5678' };
const disbursement = { subscriptionKey: 'dis-sub-key-1234', userId: '9f92971b-cd2e-4feb-9053-0b14d53ac4f5', apiKey: 'dis-api-key-secret-5678' };

let fake: MtnMomoFake;
let receiver: FakeServer;
let redis: Redis;
let mongo: MongoClient;

test.before(async () => {
  fake = await new MtnMomoFake('sandbox', { collection, disbursement }).start();
  receiver = await new FakeServer(() => ({ status: 200 })).start();
  redis = new Redis(stackUrls().redisUrl);
  mongo = new MongoClient(stackUrls().mongoUrl);
});

test.after.always(async () => {
  await fake.stop();
  await receiver.stop();
  redis.disconnect();
  await mongo.close();
});

function config(overrides: Partial<MtnMomoConfig> = {}): MtnMomoConfig {
  return { baseUrl: fake.url, targetEnvironment: 'sandbox', collection, disbursement, ...overrides };
}

function connector(options: { now?: () => number; timeoutMs?: number; config?: MtnMomoConfig } = {}) {
  return mtnMomoConnector(options.config ?? config(), {
    redis,
    db: mongo.db(uniqueName('mtn')),
    prefix: uniqueName('mtn'),
    callbackKey: async () => Buffer.alloc(32),
    now: options.now ?? Date.now,
    timeoutMs: options.timeoutMs ?? 2_000,
  });
}

let phones = 0;
function attempt(): PaymentAttemptRequest {
  const id = uniqueName('pi');
  phones++;
  return {
    attemptId: `${id}:1`,
    paymentIntent: id,
    amount: 1500,
    currency: 'xof',
    phoneNumber: `+2290197${String(phones).padStart(4, '0')}`,
    returnUrl: null,
    callbackUrl: `${receiver.url}/operators/mtn_momo/callback`,
  };
}

test.serial('a request-to-pay is pending until the payer approves, then MTN calls back and the status GET says succeeded', async (t) => {
  const mtn = connector();
  const request = attempt();
  const requested = await mtn.requestPayment(request);
  t.is(requested.operatorReference, mtnReferenceId(request.attemptId));
  const sent = fake.transfers.get(requested.operatorReference!)!;
  t.like(sent.body, { amount: '1500', currency: 'XOF', externalId: request.attemptId, payer: { partyIdType: 'MSISDN', partyId: request.phoneNumber.slice(1) } });
  t.deepEqual(await mtn.outcome(request.attemptId), { kind: 'pending' });

  await fake.settle(requested.operatorReference!);
  const callback = receiver.log.find((r) => r.path === '/operators/mtn_momo/callback');
  t.is(callback?.method, 'PUT', 'MTN calls back once, unsigned: the connector only looks again');
  const outcome = await mtn.outcome(request.attemptId, requested.operatorReference);
  t.is(outcome.kind, 'succeeded');
  t.truthy(outcome.kind === 'succeeded' && outcome.operatorReference, "MTN's financialTransactionId is kept");
});

test.serial("MTN's reasons map to the decline codes", async (t) => {
  const mtn = connector();
  const table = {
    NOT_ENOUGH_FUNDS: 'insufficient_funds',
    APPROVAL_REJECTED: 'payer_declined',
    EXPIRED: 'approval_timeout',
    PAYER_NOT_FOUND: 'payer_not_found',
    PAYER_LIMIT_REACHED: 'limit_exceeded',
    INTERNAL_PROCESSING_ERROR: 'operator_unavailable',
    SOMETHING_NEW: 'generic_decline',
  } as const;
  for (const [reason, code] of Object.entries(table)) {
    const request = attempt();
    fake.outcomes.set(request.phoneNumber.slice(1), { status: 'FAILED', reason });
    const { operatorReference } = await mtn.requestPayment(request);
    await fake.settle(operatorReference!);
    t.deepEqual(await mtn.outcome(request.attemptId), { kind: 'declined', code, operatorCode: reason }, reason);
  }
});

test.serial('a retry after a crash mid-request reuses the reference: MTN answers 409 and the payer is asked once', async (t) => {
  const request = attempt();
  const referenceId = mtnReferenceId(request.attemptId);
  // The first process's request reaches MTN, but the answer comes too late: to the
  // connector that is no answer (a timeout), never a decline.
  const first = connector({ timeoutMs: 200 });
  await first.outcome(request.attemptId); // its token, fetched in time
  fake.server.delayMs = 600;
  const err = await t.throwsAsync(first.requestPayment(request), { instanceOf: OperatorUnavailableError });
  t.is(err?.reason, 'timeout');
  t.true(isInfrastructureError(err), 'the job retries');
  fake.server.delayMs = 0;
  // The retried job runs in another process: a fresh connector, the same reference.
  const again = await connector().requestPayment(request);
  t.is(again.operatorReference, referenceId);
  t.is(fake.requestsFor(referenceId), 2, 'two requests…');
  t.is([...fake.transfers.keys()].filter((key) => key === referenceId).length, 1, '…one payment asked of the payer');
  await fake.settle(referenceId);
  t.is((await connector().outcome(request.attemptId)).kind, 'succeeded');
});

test.serial('an MTN 500 is an infrastructure fault, not a decline; the retry goes through', async (t) => {
  const mtn = connector();
  await mtn.outcome(attempt().attemptId); // a token first, so the 500 hits the request-to-pay
  const request = attempt();
  fake.server.failNext(1, 500);
  const err = await t.throwsAsync(mtn.requestPayment(request), { instanceOf: OperatorUnavailableError });
  t.is(err?.status, 500);
  t.true(isInfrastructureError(err));
  t.false(fake.transfers.has(mtnReferenceId(request.attemptId)), 'nothing asked of the payer');
  fake.server.failNext(1, 503);
  await t.throwsAsync(mtn.outcome(request.attemptId), { instanceOf: OperatorUnavailableError });
  await mtn.requestPayment(request);
  t.true(fake.transfers.has(mtnReferenceId(request.attemptId)));
});

test.serial('the token is cached until shortly before it expires, refreshed after, and fetched again when MTN refuses it', async (t) => {
  let now = Date.now();
  const mtn = connector({ now: () => now });
  const before = fake.tokensIssued;
  await Promise.all([1, 2, 3, 4, 5].map(() => mtn.outcome(attempt().attemptId)));
  t.is(fake.tokensIssued - before, 1, 'five concurrent calls share one refresh');
  for (let i = 0; i < 3; i++) await mtn.outcome(attempt().attemptId);
  t.is(fake.tokensIssued - before, 1, 'one token for eight calls');
  now += 3_540_000 - 1000; // a second before the refresh margin (60 s before 3600 s)
  await mtn.outcome(attempt().attemptId);
  t.is(fake.tokensIssued - before, 1);
  now += 2000;
  await mtn.outcome(attempt().attemptId);
  t.is(fake.tokensIssued - before, 2, 'refreshed a minute before expiry');
  // MTN forgets the token (revoked): one 401, a new token, the call answered.
  (fake as unknown as { tokens: Map<string, string> }).tokens.clear();
  t.deepEqual(await mtn.outcome(attempt().attemptId), { kind: 'not_found' }, 'MTN holds no such request: its 404');
  t.is(fake.tokensIssued - before, 3);
});

test.serial('a token refresh waits while another process holds the refresh lock', async (t) => {
  const prefix = uniqueName('lock');
  const mtn = mtnMomoConnector(config(), { redis, db: mongo.db('unused'), prefix, now: Date.now, timeoutMs: 2000, callbackKey: async () => Buffer.alloc(32) });
  // Held until this test lets it go, so that no clock decides the order on a busy machine.
  const lockKey = `${prefix}:operator-token-lock:mtn_momo:${config().targetEnvironment}:collection`;
  await redis.set(lockKey, 'another process', 'PX', 30_000);
  const before = fake.tokensIssued;
  const pending = mtn.outcome(attempt().attemptId);
  await sleep(STILL_WAITING_MS);
  t.is(fake.tokensIssued, before, 'no token asked while the other holds the lock');
  await redis.del(lockKey);
  t.deepEqual(await pending, { kind: 'not_found' });
  t.is(fake.tokensIssued, before + 1);
});

test.serial('wrong credentials: MTN refuses the token and the error names neither the key nor the phone number', async (t) => {
  const request = attempt();
  const wrongKey = connector({ config: config({ collection: { ...collection, subscriptionKey: 'not-the-key' } }) });
  const err = await t.throwsAsync(wrongKey.requestPayment(request), { instanceOf: OperatorRequestError });
  t.is(err?.status, 401);
  t.false(isInfrastructureError(err));
  const wrongApiKey = connector({ config: config({ collection: { ...collection, apiKey: 'wrong-api-key' } }) });
  const err2 = await t.throwsAsync(wrongApiKey.requestPayment(request), { instanceOf: OperatorRequestError });
  for (const message of [err?.message ?? '', err2?.message ?? '']) {
    for (const secret of [collection.apiKey, collection.subscriptionKey, 'wrong-api-key', 'not-the-key', request.phoneNumber, request.phoneNumber.slice(1)]) {
      t.false(message.includes(secret), `${message} names a secret`);
    }
  }
  const wrongEnvironment = connector({ config: config({ targetEnvironment: 'mtnuganda' }) });
  const err3 = await t.throwsAsync(wrongEnvironment.requestPayment(attempt()), { instanceOf: OperatorRequestError });
  t.is(err3?.operatorCode, 'NOT_ALLOWED_TARGET_ENVIRONMENT');
});

test.serial('a refund goes through Disbursement with its own token, referring to the payment, and settles', async (t) => {
  const mtn = connector();
  const request = attempt();
  const { operatorReference } = await mtn.requestPayment(request);
  await fake.settle(operatorReference!);
  const refundId = uniqueName('re');
  const refund = {
    refundId, paymentIntent: request.paymentIntent, attemptId: request.attemptId, paymentReference: null,
    amount: 1500, currency: 'xof', phoneNumber: request.phoneNumber, callbackUrl: `${receiver.url}/operators/mtn_momo/callback`, reason: null,
  };
  const started = await mtn.refund(refund);
  t.is(started.kind, 'pending');
  const refundReference = mtnReferenceId(`refund:${refundId}`);
  t.like(fake.transfers.get(refundReference)?.body, { referenceIdToRefund: operatorReference, amount: '1500', currency: 'XOF' });
  t.deepEqual(await mtn.refund(refund), { kind: 'pending', operatorReference: refundReference }, 'a retried refund: 409, the same refund');
  t.is(fake.requestsFor(refundReference), 2);
  t.is((await mtn.refundOutcome(refund)).kind, 'pending');
  await fake.settle(refundReference);
  t.is((await mtn.refundOutcome(refund)).kind, 'succeeded');

  // A payment that never succeeded cannot be refunded: MTN refuses, its refund GET shows
  // nothing was created, and the refund fails as a rejected request.
  const unpaid = attempt();
  await mtn.requestPayment(unpaid);
  const failed = await mtn.refund({ ...refund, refundId: uniqueName('re'), attemptId: unpaid.attemptId });
  t.like(failed, { kind: 'failed', code: 'operator_request_rejected', operatorCode: 'RESOURCE_NOT_FOUND' });
});
