/**
 * Live mode through the three connectors (issue 28), black-box: the api and a worker
 * started with the MTN_MOMO_*, MPESA_* and WAVE_* groups pointing at local fakes of
 * the operators' APIs (test/fakes/), and PUBLIC_BASE_URL at the api, where the fakes
 * send their callbacks. Only the operator's answer decides (security review M3).
 *
 * The attempts' checks run at once (the push), then after ~3 s, then not before the
 * approval window (2 min) has closed: an outcome seen after the second check came
 * through a callback; one seen before it, with the callback dropped, through the poll.
 */
import test from 'ava';
import { Queue } from 'bullmq';
import { QUEUES } from '../../../common/jobs.js';
import { FakeServer, sendCallback } from '../../fakes/fake-server.js';
import { MtnMomoFake } from '../../fakes/mtn-momo-fake.js';
import { MpesaFake } from '../../fakes/mpesa-fake.js';
import { WaveFake } from '../../fakes/wave-fake.js';
import { mtnReferenceId } from '../../../worker/operators/mtn-momo/wire.js';
import { MPESA_COLLECTIONS } from '../../../worker/operators/mpesa/callbacks.js';
import { liveOperatorsEnv, MPESA, MTN, MTN_ENVIRONMENT, WAVE } from '../../helpers/live-operators.js';
import { Service, uniqueName, until, untilIdle } from '../../helpers/service.js';
import { confirm, createIntent, eventsOf, listAllEvents, phone, retrieve, waitForStatus } from '../../helpers/payment-intent-lifecycle.js';
import { refund, waitForRefund } from '../../helpers/refunds.js';

const BACK = 'https://shop.example/back';

let mtn: MtnMomoFake;
let mpesa: MpesaFake;
let wave: WaveFake;
let service: Service;
let key: string;

test.before(async () => {
  [mtn, mpesa, wave] = await Promise.all([
    new MtnMomoFake(MTN_ENVIRONMENT, MTN).start(),
    new MpesaFake(MPESA).start(),
    new WaveFake(WAVE.apiKey, WAVE.webhookSecret).start(),
  ]);
  service = await Service.start({
    workers: 1,
    env: {
      WRITE_TIMEOUT_MS: '30000',
      PUBLIC_BASE_URL: 'self',
      OPERATOR_POLL_SCHEDULE_MS: '3000,600000',
      OPERATOR_TIMEOUT_MS: '8000',
      INTENTS_SWEEP_INTERVAL_MS: '2000',
      ...liveOperatorsEnv({ mtn, mpesa, wave }),
    },
  });
  wave.webhookUrl = `${service.baseUrl}/operators/wave/webhook`;
  key = await service.issueKey(uniqueName('live-ops'), true);
});

test.after.always(async () => {
  await service?.stop();
  await Promise.all([mtn?.stop(), mpesa?.stop(), wave?.stop()]);
});

let numbers = 0;
/** A fresh number per attempt, so the fakes' per-payer outcomes never mix. */
const fresh = (callingCode: string) => (callingCode === '254' ? `+2547${String(++numbers).padStart(8, '0')}` : phone(callingCode, '000', ++numbers));
const msisdn = (e164: string) => e164.slice(1);

/** What the callbacks and checks set going has run (a look kept for the interval's end included). */
const settled = () => untilIdle(service, [QUEUES.intents, QUEUES.events]);

const statusGets = (fake: FakeServer, path: string) => fake.count('GET', path);

/** Confirms a live MTN MoMo payment; resolves once MTN holds its request. */
async function mtnAttempt(options: { amount?: number } = {}) {
  const number = fresh('225');
  const pi = await createIntent(service, key, { amount: options.amount ?? 5000, currency: 'xof' });
  const res = await confirm(service, key, pi.id, { operator: 'mtn_momo', phone_number: number });
  return { pi, res, number, ref: mtnReferenceId(`${pi.id}:1`) };
}

async function afterSecondCheck(fake: FakeServer, path: string): Promise<void> {
  await until(`the attempt's second check (${path})`, () => (statusGets(fake, path) >= 1 ? true : undefined), 20_000);
}

test.serial('GET /v1/operators in live mode: the three configured operators are operational, the others unavailable', async (t) => {
  const res = await service.request('GET', '/v1/operators', { key });
  t.is(res.status, 200, res.text);
  const status = Object.fromEntries((res.body.data as Array<{ id: string; status: string }>).map((o) => [o.id, o.status]));
  t.like(status, { mtn_momo: 'operational', mpesa: 'operational', wave: 'operational', orange_money: 'unavailable' });
});

test.serial('MTN MoMo: create, confirm, the push, MTN\'s callback, succeeded; MTN holds one request for the attempt', async (t) => {
  const { pi, res, ref } = await mtnAttempt();
  t.is(res.status, 200, res.text);
  t.like(res.body, { status: 'requires_action', livemode: true, next_action: { type: 'await_phone_approval' } });
  await until('MTN to hold the request', () => mtn.transfers.get(ref));
  await afterSecondCheck(mtn.server, `/collection/v1_0/requesttopay/${ref}`);
  t.is((await retrieve(service, key, pi.id)).status, 'requires_action', 'pending at MTN: nothing decided');
  await mtn.settle(ref);
  t.deepEqual(mtn.callbacksSent.filter((r) => r === ref), [ref]);
  const done = await waitForStatus(service, key, pi.id, 'succeeded');
  t.is(done.amount_received, 5000);
  t.is(mtn.requestsFor(ref), 1);
  const sent = mtn.transfers.get(ref)!.body as { externalId: string; amount: string; currency: string };
  t.like(sent, { externalId: `${pi.id}:1`, amount: '5000', currency: 'XOF' });
});

test.serial('MTN MoMo: a decline is the operator\'s reason, mapped; a duplicate callback afterwards changes nothing', async (t) => {
  const { pi, number, ref } = await mtnAttempt();
  mtn.outcomes.set(msisdn(number), { status: 'FAILED', reason: 'NOT_ENOUGH_FUNDS' });
  await until('MTN to hold the request', () => mtn.transfers.get(ref));
  await afterSecondCheck(mtn.server, `/collection/v1_0/requesttopay/${ref}`);
  await mtn.settle(ref);
  const declined = await waitForStatus(service, key, pi.id, 'new', 30_000, (p) => p.last_payment_error !== null);
  t.like(declined.last_payment_error, { code: 'payment_declined', operator: 'mtn_momo', operator_decline_code: 'insufficient_funds' });
  const callback = `${service.baseUrl}/operators/mtn_momo/callback`;
  t.is(await sendCallback(callback, { externalId: `${pi.id}:1`, status: 'SUCCESSFUL' }, 'PUT'), 200);
  await settled();
  t.like(await retrieve(service, key, pi.id), { status: 'new', last_payment_error: { operator_decline_code: 'insufficient_funds' } });
  t.deepEqual(eventsOf(await listAllEvents(service, key), pi.id).map((e) => e.type).sort(), ['payment_intent.created', 'payment_intent.payment_failed', 'payment_intent.requires_action']);
});

test.serial('forged and unknown MTN callbacks: the same 200, and nothing but a status GET; the genuine answer decides', async (t) => {
  const { pi, ref } = await mtnAttempt();
  await until('MTN to hold the request', () => mtn.transfers.get(ref));
  await afterSecondCheck(mtn.server, `/collection/v1_0/requesttopay/${ref}`);
  const callback = `${service.baseUrl}/operators/mtn_momo/callback`;
  const gets = statusGets(mtn.server, `/collection/v1_0/requesttopay/${ref}`);
  const answers = await Promise.all([
    fetch(callback, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ externalId: `${pi.id}:1`, status: 'SUCCESSFUL', financialTransactionId: '1' }) }),
    fetch(callback, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ externalId: 'pi_doesnotexist000000000:1', status: 'SUCCESSFUL' }) }),
    fetch(callback, { method: 'POST', headers: { 'content-type': 'application/json' }, body: 'not json' }),
  ]);
  const bodies = await Promise.all(answers.map((a) => a.text()));
  t.deepEqual(answers.map((a) => a.status), [200, 200, 200]);
  t.deepEqual(bodies, ['{}', '{}', '{}'], 'the same answer whether or not the reference exists');
  // The forged callback made the worker look again; MTN said pending.
  await until('the look again', () => (statusGets(mtn.server, `/collection/v1_0/requesttopay/${ref}`) > gets ? true : undefined));
  await settled();
  t.is((await retrieve(service, key, pi.id)).status, 'requires_action', 'a forged SUCCESSFUL decides nothing');
  await mtn.settle(ref);
  await waitForStatus(service, key, pi.id, 'succeeded');
});

test.serial('M2: a flood of callbacks for one attempt costs MTN a status call or two per interval, not one per callback', async (t) => {
  const { pi, ref } = await mtnAttempt();
  await until('MTN to hold the request', () => mtn.transfers.get(ref));
  await afterSecondCheck(mtn.server, `/collection/v1_0/requesttopay/${ref}`);
  // After the second check the attempt's own polls are 10 minutes apart: every GET now is a callback's.
  const before = statusGets(mtn.server, `/collection/v1_0/requesttopay/${ref}`);
  const callback = `${service.baseUrl}/operators/mtn_momo/callback`;
  let sent = 0;
  const ends = Date.now() + 10_000;
  await Promise.all(Array.from({ length: 10 }, async () => {
    while (Date.now() < ends) {
      sent++;
      await sendCallback(callback, { externalId: `${pi.id}:1`, status: 'SUCCESSFUL' }, 'PUT');
    }
  }));
  await settled();
  const calls = statusGets(mtn.server, `/collection/v1_0/requesttopay/${ref}`) - before;
  t.log(`${sent} callbacks in 10 s: ${calls} status calls to MTN`);
  t.true(sent > 100);
  t.true(calls >= 1 && calls <= 6, `${calls} status calls`);
  t.is((await retrieve(service, key, pi.id)).status, 'requires_action');
  await mtn.settle(ref);
  await waitForStatus(service, key, pi.id, 'succeeded', 20_000);
});

test.serial('M3: without the operator\'s answer a live intent neither succeeds nor is declined (magic numbers, the test OTP, the simulator)', async (t) => {
  // Numbers whose endings decline, never answer or pay in test mode.
  const attempts = await Promise.all(['001', '002', '010', '011'].map(async (suffix, i) => {
    const pi = await createIntent(service, key, { amount: 5000, currency: 'xof' });
    const res = await confirm(service, key, pi.id, { operator: 'mtn_momo', phone_number: phone('225', suffix, 900 + i) });
    t.is(res.status, 200, res.text);
    return { pi, ref: mtnReferenceId(`${pi.id}:1`) };
  }));
  for (const { ref } of attempts) await afterSecondCheck(mtn.server, `/collection/v1_0/requesttopay/${ref}`);
  await settled();
  for (const { pi } of attempts) t.like(await retrieve(service, key, pi.id), { status: 'requires_action', last_payment_error: null });
  const orange = await createIntent(service, key, { amount: 5000, currency: 'xof' });
  const otp = await confirm(service, key, orange.id, { operator: 'orange_money', phone_number: phone('225', '000', 950), otp: '123456' });
  t.is(otp.status, 400, otp.text);
  t.is(otp.body.error.code, 'operator_not_configured');
  t.is((await retrieve(service, key, orange.id)).status, 'new');
  const types = eventsOf(await listAllEvents(service, key), attempts[0]!.pi.id).map((e) => e.type);
  t.false(types.includes('payment_intent.succeeded') || types.includes('payment_intent.payment_failed'));
});

test.serial('a lost callback: MTN never calls back, the poll finds the answer', async (t) => {
  mtn.dropCallbacks = true;
  try {
    const { pi, ref } = await mtnAttempt();
    await until('MTN to hold the request', () => mtn.transfers.get(ref));
    await mtn.settle(ref);
    t.false(mtn.callbacksSent.includes(ref));
    await waitForStatus(service, key, pi.id, 'succeeded', 20_000);
    t.true(statusGets(mtn.server, `/collection/v1_0/requesttopay/${ref}`) >= 1);
  } finally {
    mtn.dropCallbacks = false;
  }
});

test.serial('a check lost with Redis: the intent keeps its next check, and the sweeper enqueues it again', async (t) => {
  mtn.dropCallbacks = true;
  const connection = service.redis();
  const queue = new Queue(QUEUES.intents, { connection, prefix: service.prefix });
  try {
    const { pi, ref } = await mtnAttempt();
    await until('MTN to hold the request', () => mtn.transfers.get(ref));
    const db = await service.db();
    const stored = await until('the next check recorded on the intent', async () => {
      const doc = await db.collection('payment_intents').findOne({ _id: pi.id as never });
      return doc?.payment?.checks === 1 ? doc : undefined;
    });
    t.true(typeof stored.payment.next_check_at === 'number');
    const job = await queue.getJob(`check-${pi.id}-1-1`);
    t.truthy(job, 'the delayed check');
    await job!.remove();
    await mtn.settle(ref);
    await waitForStatus(service, key, pi.id, 'succeeded', 30_000);
  } finally {
    mtn.dropCallbacks = false;
    await queue.close();
    connection.disconnect();
  }
});

test.serial('an operator 500 on the first try is retried, never a decline; MTN stores one payment', async (t) => {
  mtn.server.failNext(1, 500);
  const { pi, res, ref } = await mtnAttempt();
  t.is(res.status, 200, res.text);
  await until('MTN to hold the request after the retry', () => mtn.transfers.get(ref));
  t.is((await retrieve(service, key, pi.id)).last_payment_error, null);
  await mtn.settle(ref);
  await waitForStatus(service, key, pi.id, 'succeeded');
  t.is([...mtn.transfers.values()].filter((x) => (x.body as { externalId?: string }).externalId === `${pi.id}:1`).length, 1);
});

test.serial('MTN calls back before its answer to the push reaches us: the callback still decides, with no wait for the poll', async (t) => {
  // The first try fails (a 500), so the request goes out on the attempt's second check,
  // after which the next poll is 10 minutes away. MTN holds that request at once but
  // answers 2.5 s later; the payer approves in between.
  mtn.server.failNext(1, 500);
  const { pi, ref } = await mtnAttempt();
  mtn.server.delayMs = 2500;
  try {
    await until('MTN to hold the request', () => mtn.transfers.get(ref));
    await mtn.settle(ref);
    t.true(mtn.callbacksSent.includes(ref));
    mtn.server.delayMs = 0;
    await waitForStatus(service, key, pi.id, 'succeeded', 20_000);
    t.is([...mtn.transfers.values()].filter((x) => (x.body as { externalId?: string }).externalId === `${pi.id}:1`).length, 1);
  } finally {
    mtn.server.delayMs = 0;
  }
});

test.serial('a slow operator: the confirm answers without waiting for it, and its answer still decides', async (t) => {
  mpesa.server.delayMs = 3000;
  try {
    const pi = await createIntent(service, key, { amount: 1000, currency: 'kes' });
    const res = await confirm(service, key, pi.id, { operator: 'mpesa', phone_number: fresh('254') });
    t.is(res.status, 200, res.text);
    t.is(res.body.status, 'requires_action');
    const push = await until('the push', () => mpesa.pushFor(`${pi.id}:1`), 20_000);
    mpesa.server.delayMs = 0;
    await mpesa.settle(push.checkoutRequestId);
    await waitForStatus(service, key, pi.id, 'succeeded');
    t.is(mpesa.pushesFor(`${pi.id}:1`), 1);
  } finally {
    mpesa.server.delayMs = 0;
  }
});

test.serial('M-Pesa: STK push, Daraja\'s callback, succeeded; a decline by ResultCode; a forged callback is dropped', async (t) => {
  const pi = await createIntent(service, key, { amount: 1000, currency: 'kes' });
  const res = await confirm(service, key, pi.id, { operator: 'mpesa', phone_number: fresh('254') });
  t.is(res.status, 200, res.text);
  const push = await until('the push', () => mpesa.pushFor(`${pi.id}:1`));
  await until('the second check', () => (mpesa.server.count('POST', '/mpesa/stkpushquery/v1/query') >= 1 ? true : undefined));
  // Forged: a callback naming the attempt without the URL's token.
  const forged = await fetch(`${service.baseUrl}/operators/mpesa/callback?attempt=${encodeURIComponent(`${pi.id}:1`)}&t=forged`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ Body: { stkCallback: { CheckoutRequestID: push.checkoutRequestId, ResultCode: 0, CallbackMetadata: { Item: [{ Name: 'MpesaReceiptNumber', Value: 'FORGED0001' }] } } } }),
  });
  t.is(forged.status, 200);
  t.deepEqual(await forged.json(), { ResultCode: 0, ResultDesc: 'Accepted' });
  const db = await service.db();
  t.is(await db.collection(MPESA_COLLECTIONS.results).countDocuments({ receipt: 'FORGED0001' }), 0);
  t.is((await retrieve(service, key, pi.id)).status, 'requires_action');
  await mpesa.settle(push.checkoutRequestId);
  await waitForStatus(service, key, pi.id, 'succeeded');

  const other = fresh('254');
  mpesa.outcomes.set(msisdn(other), 1032);
  const declinedPi = await createIntent(service, key, { amount: 1000, currency: 'kes' });
  await confirm(service, key, declinedPi.id, { operator: 'mpesa', phone_number: other });
  const declinedPush = await until('the push', () => mpesa.pushFor(`${declinedPi.id}:1`));
  await mpesa.settle(declinedPush.checkoutRequestId);
  const declined = await waitForStatus(service, key, declinedPi.id, 'new', 30_000, (p) => p.last_payment_error !== null);
  t.like(declined.last_payment_error, { operator: 'mpesa', operator_decline_code: 'payer_declined' });
});

test.serial('Wave: the confirm\'s link is Wave\'s; a signed webhook, succeeded; forged webhooks get 401 and change nothing', async (t) => {
  const pi = await createIntent(service, key, { amount: 2000, currency: 'xof' });
  const res = await confirm(service, key, pi.id, { operator: 'wave', phone_number: fresh('221'), return_url: BACK });
  t.is(res.status, 200, res.text);
  const [session] = wave.sessionsFor(`${pi.id}:1`);
  t.truthy(session);
  t.like(res.body, { status: 'requires_action', next_action: { type: 'redirect_to_url', redirect_to_url: { url: session!.wave_launch_url } } });
  await until('the second check', () => (statusGets(wave.server, `/v1/checkout/sessions/${session!.id}`) >= 1 ? true : undefined));
  const url = `${service.baseUrl}/operators/wave/webhook`;
  const paid = { ...session!, checkout_status: 'complete', payment_status: 'succeeded' } as typeof session & object;
  const wrongSecret = wave.signedWebhook('checkout.session.completed', paid, undefined, 'not-the-secret');
  const stale = wave.signedWebhook('checkout.session.completed', paid, Math.floor(Date.now() / 1000) - 3600);
  t.is(await sendCallback(url, wrongSecret.body, 'POST', { 'wave-signature': wrongSecret.signature }), 401);
  t.is(await sendCallback(url, stale.body, 'POST', { 'wave-signature': stale.signature }), 401);
  t.is(await sendCallback(url, paid, 'POST'), 401);
  await settled();
  t.is((await retrieve(service, key, pi.id)).status, 'requires_action');
  await wave.pay(session!.id);
  await waitForStatus(service, key, pi.id, 'succeeded');
  t.is(wave.sessionsFor(`${pi.id}:1`).length, 1);
});

test.serial('refunds go through the operator: MTN (partial, its reference kept), Wave (whole)', async (t) => {
  const { pi, ref } = await mtnAttempt({ amount: 6000 });
  await until('MTN to hold the request', () => mtn.transfers.get(ref));
  await mtn.settle(ref);
  await waitForStatus(service, key, pi.id, 'succeeded');
  const partial = await refund(service, key, { payment_intent: pi.id, amount: 2000 });
  t.is(partial.status, 200, partial.text);
  const refundRef = mtnReferenceId(`refund:${partial.body.id}`);
  await until('MTN to hold the refund', () => mtn.transfers.get(refundRef));
  t.like(mtn.transfers.get(refundRef)!.body, { referenceIdToRefund: ref, amount: '2000' });
  await mtn.settle(refundRef);
  await waitForRefund(service, key, partial.body.id, 'succeeded', 30_000);
  const db = await service.db();
  const stored = await db.collection('refunds').findOne({ _id: partial.body.id });
  t.truthy(stored?.operator_reference, 'the operator\'s reference is kept on the refund');

  const wpi = await createIntent(service, key, { amount: 2000, currency: 'xof' });
  await confirm(service, key, wpi.id, { operator: 'wave', phone_number: fresh('221'), return_url: BACK });
  const [session] = wave.sessionsFor(`${wpi.id}:1`);
  await wave.pay(session!.id);
  await waitForStatus(service, key, wpi.id, 'succeeded');
  const whole = await refund(service, key, { payment_intent: wpi.id });
  t.is(whole.status, 200, whole.text);
  await waitForRefund(service, key, whole.body.id, 'succeeded', 30_000);
  t.true(wave.refunded.has(session!.id));

  // M-Pesa: a reversal of the receipt its STK callback gave; the Result at our ResultURL answers.
  const mpi = await createIntent(service, key, { amount: 1500, currency: 'kes' });
  await confirm(service, key, mpi.id, { operator: 'mpesa', phone_number: fresh('254') });
  const push = await until('the push', () => mpesa.pushFor(`${mpi.id}:1`));
  await mpesa.settle(push.checkoutRequestId);
  await waitForStatus(service, key, mpi.id, 'succeeded');
  const reversed = await refund(service, key, { payment_intent: mpi.id });
  t.is(reversed.status, 200, reversed.text);
  const reversal = await until('the reversal', () => [...mpesa.reversals.values()].find((r) => new URL(r.resultUrl).searchParams.get('refund') === reversed.body.id));
  t.regex(reversal.resultUrl, /\/operators\/mpesa\/result\?/);
  await mpesa.deliverReversal(reversal.originatorConversationId);
  await waitForRefund(service, key, reversed.body.id, 'succeeded', 40_000);
  t.true(mpesa.reversedReceipts.has(push.receipt!));
});

test.serial('a worker killed while its request to the operator is in flight: after a new worker, one payment per attempt', async (t) => {
  mpesa.server.delayMs = 4000;
  mtn.server.delayMs = 4000;
  const mpi = await createIntent(service, key, { amount: 1000, currency: 'kes' });
  const { pi, ref } = await mtnAttempt();
  try {
    await confirm(service, key, mpi.id, { operator: 'mpesa', phone_number: fresh('254') });
    await until('both requests in flight', () =>
      mtn.requestsFor(ref) >= 1 && mpesa.server.count('POST', '/mpesa/stkpush/v1/processrequest') > 0 && mpesa.pushFor(`${mpi.id}:1`) ? true : undefined);
    await service.workers[0]!.stop('SIGKILL');
  } finally {
    mpesa.server.delayMs = 0;
    mtn.server.delayMs = 0;
  }
  await service.startWorker();
  await until('MTN to be asked again', () => (mtn.requestsFor(ref) >= 2 ? true : undefined), 30_000);
  await mtn.settle(ref);
  await mpesa.settle(mpesa.pushFor(`${mpi.id}:1`)!.checkoutRequestId);
  await waitForStatus(service, key, pi.id, 'succeeded', 40_000);
  await waitForStatus(service, key, mpi.id, 'succeeded', 40_000);
  t.is([...mtn.transfers.values()].filter((x) => x.referenceId === ref).length, 1, 'one MTN payment for the attempt');
  t.is(mpesa.pushesFor(`${mpi.id}:1`), 1, 'one STK push for the attempt');
});

test.serial('secrets: no full phone number, credential or token in the logs or in job data left in Redis', async (t) => {
  const logs = service.logs().join('\n');
  for (const secret of [MTN.collection.apiKey, MTN.disbursement.apiKey, MPESA.consumerSecret, MPESA.passkey, WAVE.apiKey, WAVE.webhookSecret]) {
    t.false(logs.includes(secret), 'a credential in the logs');
  }
  t.false(/\+?((225|221)09\d{8}|2547\d{8})/.test(logs), 'a full phone number in the logs');
  const redis = service.redis();
  try {
    const keys = await redis.keys(`${service.prefix}:intents:*`);
    let data = '';
    for (const k of keys) {
      if ((await redis.type(k)) === 'hash') data += (await redis.hget(k, 'data')) ?? '';
    }
    t.false(/(225|221)09\d{8}|2547\d{8}/.test(data), 'a full phone number in job data');
    t.false(data.includes(MPESA.consumerSecret) || data.includes(WAVE.apiKey));
  } finally {
    redis.disconnect();
  }
});
