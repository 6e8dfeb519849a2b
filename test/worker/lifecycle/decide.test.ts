/**
 * The lifecycle's rules, one decision at a time (worker/lifecycle/decide.ts is pure:
 * the stored intent and the request in, the change out). The black-box tests in
 * test/e2e/lifecycle/ show the same rules through real processes.
 */
import test from 'ava';
import type { PaymentIntentDoc } from '../../../common/documents.js';
import { MAGIC_SUFFIXES, maskPhone, simulatedOutcome } from '../../../common/lifecycle.js';
import { predictOperator } from '../../../common/operator-catalog.js';
import { mergeMetadata } from '../../../common/metadata.js';
import {
  decideCancel,
  decideConfirm,
  decideExpiry,
  decideOutcome,
  decideUpdate,
  type DecideContext,
  type Decision,
} from '../../../worker/lifecycle/decide.js';

const NOW = 1_795_000_000;
const ctx: DecideContext = {
  now: NOW,
  simulator: { approvalDelayMs: 3000, processingDelayMs: 2000, slowDelayMs: 60_000, approvalWindowMs: 120_000 },
  baseUrl: 'http://api.test',
  token: () => 'T0KEN',
  liveOperators: new Set(),
};

function intent(over: Partial<PaymentIntentDoc> = {}): PaymentIntentDoc {
  return {
    _id: 'pi_00VbYV85n9aIzXB1ggNYQfQ',
    project: 'p',
    livemode: false,
    amount: 5000,
    currency: 'xof',
    description: null,
    status: 'new',
    client_secret: 'pi_x_secret_y',
    automatic_operator: true,
    allowed_operators: ['mtn_momo', 'orange_money', 'moov_money', 'wave', 'airtel_money', 'mpesa'],
    selected_operator: null,
    metadata: [],
    created: NOW - 10,
    expires_at: NOW + 3600,
    attempt: 0,
    rev: 0,
    ...over,
  };
}

const confirm = (phone: string, over: Partial<{ operator: string | null; otp: string | null }> = {}) => ({
  operator: over.operator === undefined ? 'mtn_momo' : over.operator,
  phone_number: phone,
  otp: over.otp ?? null,
  return_url: null,
});

function applied(t: import('ava').ExecutionContext, decision: Decision): Extract<Decision, { kind: 'apply' }> {
  if (decision.kind !== 'apply') t.fail(`expected a change, got ${JSON.stringify(decision)}`);
  return decision as Extract<Decision, { kind: 'apply' }>;
}

function refusedWith(t: import('ava').ExecutionContext, decision: Decision, code: string): void {
  t.is(decision.kind, 'refuse');
  if (decision.kind === 'refuse') t.is(String(decision.detail.code), code);
}

test('phone approval: confirm asks the payer, masks the number, and schedules the payer step', (t) => {
  const d = applied(t, decideConfirm(intent(), confirm('+2250700000000'), ctx));
  t.is(d.set.status, 'requires_action');
  t.is(d.set.attempt, 1);
  t.is(d.event, 'payment_intent.requires_action');
  t.deepEqual(d.set.next_action, {
    type: 'await_phone_approval',
    await_phone_approval: { operator: 'mtn_momo', phone_number: '+225*******000', display_message: 'Approve the payment of 5 000 XOF on your phone.', expires_at: NOW + 120 },
  });
  t.deepEqual(d.followUps, [{ kind: 'outcome', step: 'payer', delayMs: 3000 }]);
  t.false(JSON.stringify(d.set.next_action).includes('0700000000'), 'the full number is never shown');
});

test('005 is refused at once: 402, back to new with last_payment_error, the attempt counted', (t) => {
  const d = applied(t, decideConfirm(intent(), confirm('+2250700000005'), ctx));
  t.is(d.answer, 'declined');
  t.is(d.set.status, 'new');
  t.is(d.set.attempt, 1);
  t.is(d.event, 'payment_intent.payment_failed');
  t.like(d.set.last_payment_error, { code: 'payment_declined', operator: 'mtn_momo', operator_decline_code: 'payer_not_found' });
  t.is(d.set.payment?.phone_number, null, 'the full number is dropped once the attempt ends');
});

test('010 never answers and 011 answers late', (t) => {
  t.deepEqual(applied(t, decideConfirm(intent(), confirm('+2250700000010'), ctx)).followUps, []);
  t.deepEqual(applied(t, decideConfirm(intent(), confirm('+2250700000011'), ctx)).followUps, [{ kind: 'outcome', step: 'payer', delayMs: 60_000 }]);
});

test('every magic suffix leads where the table says', (t) => {
  for (const [suffix, outcome] of Object.entries(MAGIC_SUFFIXES)) {
    t.deepEqual(simulatedOutcome(`+22507000${suffix}`), outcome, suffix);
  }
  t.deepEqual(simulatedOutcome('+2250700000123'), { kind: 'succeed', slow: false }, 'any other suffix succeeds');
});

test('the payer step: payer-stage declines go back to new, others move to processing and then settle', (t) => {
  const waiting = (phone: string) => intent({ status: 'requires_action', attempt: 1, payment: { operator: 'mtn_momo', phone_number: phone, phone_masked: maskPhone(phone), return_url: null, checkout_token: null } });
  const step = (phone: string, s: 'payer' | 'settle', status: PaymentIntentDoc['status'] = 'requires_action') =>
    decideOutcome({ ...waiting(phone), status }, { paymentIntent: 'pi', project: 'p', livemode: false, attempt: 1, step: s }, ctx);
  const declined = applied(t, step('+2250700000001', 'payer'));
  t.is(declined.set.status, 'new');
  t.is(declined.set.last_payment_error?.operator_decline_code, 'payer_declined');
  const processing = applied(t, step('+2250700000003', 'payer'));
  t.is(processing.set.status, 'processing');
  t.deepEqual(processing.followUps, [{ kind: 'outcome', step: 'settle', delayMs: 2000 }]);
  const failed = applied(t, step('+2250700000003', 'settle', 'processing'));
  t.is(failed.set.last_payment_error?.operator_decline_code, 'insufficient_funds');
  const succeeded = applied(t, step('+2250700000000', 'settle', 'processing'));
  t.is(succeeded.set.status, 'succeeded');
  t.is(succeeded.event, 'payment_intent.succeeded');
  t.is(step('+2250700000010', 'payer').kind, 'skip');
});

test('an operator answer about another attempt, or after the intent moved on, changes nothing', (t) => {
  const doc = intent({ status: 'canceled', attempt: 1 });
  const late = decideOutcome(doc, { paymentIntent: 'pi', project: 'p', livemode: false, attempt: 1, step: 'payer' }, ctx);
  t.is(late.kind, 'skip');
  const other = decideOutcome(intent({ status: 'requires_action', attempt: 2 }), { paymentIntent: 'pi', project: 'p', livemode: false, attempt: 1, step: 'payer' }, ctx);
  t.is(other.kind, 'skip');
});

test('orange money: no otp asks for one; a wrong one is a 402 decline; the right one processes', (t) => {
  const asked = applied(t, decideConfirm(intent(), confirm('+2250700000000', { operator: 'orange_money' }), ctx));
  t.is(asked.set.next_action?.type, 'otp_required');
  const waiting = intent({ ...asked.set, status: 'requires_action' });
  const wrong = applied(t, decideConfirm(waiting, confirm('+2250700000000', { operator: null, otp: '000000' }), ctx));
  t.is(wrong.answer, 'declined');
  t.is(wrong.set.status, 'new');
  t.is(wrong.set.last_payment_error?.operator_decline_code, 'invalid_otp');
  const right = applied(t, decideConfirm(waiting, confirm('+2250700000000', { operator: null, otp: '123456' }), ctx));
  t.is(right.set.status, 'processing');
  t.deepEqual(right.followUps, [{ kind: 'outcome', step: 'settle', delayMs: 2000 }]);
  refusedWith(t, decideConfirm(intent(), confirm('+2250700000000', { otp: '123456' }), ctx), 'parameter_invalid');
  t.is(applied(t, decideConfirm(waiting, confirm('+2250700000000', { operator: 'orange_money', otp: '123456' }), ctx)).set.status, 'processing');
});

test('orange money: the code\'s confirm may name only the attempt\'s operator', (t) => {
  const asked = applied(t, decideConfirm(intent({ allowed_operators: ['orange_money', 'wave'] }), confirm('+2250700000000', { operator: 'orange_money' }), ctx));
  const waiting = intent({ ...asked.set, allowed_operators: ['orange_money', 'wave'], status: 'requires_action' });
  for (const operator of ['mtn_momo', 'wave']) {
    const d = decideConfirm(waiting, confirm('+2250700000000', { operator, otp: '123456' }), ctx);
    refusedWith(t, d, 'operator_invalid');
    if (d.kind === 'refuse') t.is(d.detail.param, 'operator');
  }
});

test('011 succeeds after the slow delay whoever plays the payer\'s step: the simulator, a one-time code, the checkout page', (t) => {
  const slow = '+2250700000011';
  const attempt = (operator: string) =>
    intent({ status: 'requires_action', attempt: 1, payment: { operator, phone_number: slow, phone_masked: maskPhone(slow), return_url: null, checkout_token: null } });
  const payer = (operator: string) => decideOutcome(attempt(operator), { paymentIntent: 'pi', project: 'p', livemode: false, attempt: 1, step: 'payer' }, ctx);
  // Phone approval: the payer step itself came 60 s late, the settlement follows as usual.
  t.deepEqual(applied(t, payer('mtn_momo')).followUps, [{ kind: 'outcome', step: 'settle', delayMs: 2000 }]);
  // Wave: the Pay button is the payer's step; the 60 s follow it.
  t.deepEqual(applied(t, payer('wave')).followUps, [{ kind: 'outcome', step: 'settle', delayMs: 60_000 }]);
  // Orange Money: the code is the payer's step, on the first confirm or the second.
  const first = applied(t, decideConfirm(intent(), confirm(slow, { operator: 'orange_money', otp: '123456' }), ctx));
  t.deepEqual(first.followUps, [{ kind: 'outcome', step: 'settle', delayMs: 60_000 }]);
  const asked = applied(t, decideConfirm(intent(), confirm(slow, { operator: 'orange_money' }), ctx));
  const second = applied(t, decideConfirm(intent({ ...asked.set, status: 'requires_action' }), confirm(slow, { operator: null, otp: '123456' }), ctx));
  t.deepEqual(second.followUps, [{ kind: 'outcome', step: 'settle', delayMs: 60_000 }]);
  // Any other number settles at the usual delay.
  t.deepEqual(applied(t, decideConfirm(intent(), confirm('+2250700000000', { operator: 'orange_money', otp: '123456' }), ctx)).followUps, [{ kind: 'outcome', step: 'settle', delayMs: 2000 }]);
});

test('wave: a checkout page with an unguessable token that names the intent', (t) => {
  const d = applied(t, decideConfirm(intent(), { ...confirm('+2210700000000', { operator: 'wave' }), return_url: 'https://shop.test/back' }, ctx));
  t.deepEqual(d.set.next_action, {
    type: 'redirect_to_url',
    redirect_to_url: { url: 'http://api.test/test/checkout/pi_00VbYV85n9aIzXB1ggNYQfQ.T0KEN', return_url: 'https://shop.test/back' },
  });
  t.is(d.set.payment?.checkout_token, 'pi_00VbYV85n9aIzXB1ggNYQfQ.T0KEN');
});

test('wrong states are refused with payment_intent_unexpected_state, naming the status', (t) => {
  for (const status of ['processing', 'succeeded', 'canceled', 'expired'] as const) {
    const refused = decideConfirm(intent({ status }), confirm('+2250700000000'), ctx);
    refusedWith(t, refused, 'payment_intent_unexpected_state');
    if (refused.kind === 'refuse') t.regex(refused.detail.message, new RegExp(status));
  }
  refusedWith(t, decideConfirm(intent({ status: 'requires_action', payment: { operator: 'mtn_momo', phone_number: '+2250700000000', phone_masked: '', return_url: null, checkout_token: null } }), confirm('+2250700000000'), ctx), 'payment_intent_unexpected_state');
  refusedWith(t, decideCancel(intent({ status: 'processing' }), { cancellation_reason: null }, NOW), 'payment_intent_unexpected_state');
  refusedWith(t, decideUpdate(intent({ status: 'requires_action' }), { amount: 10 }), 'payment_intent_unexpected_state');
  refusedWith(t, decideUpdate(intent({ status: 'succeeded' }), { description: 'x' }), 'payment_intent_unexpected_state');
  t.is(decideUpdate(intent({ status: 'requires_action' }), { description: 'x' }).kind, 'apply');
});

test('operators: named, selected, or predicted from the number among the allowed ones', (t) => {
  refusedWith(t, decideConfirm(intent({ allowed_operators: ['wave'] }), confirm('+2250700000000', { operator: 'mtn_momo' }), ctx), 'operator_invalid');
  const selected = applied(t, decideConfirm(intent({ selected_operator: 'moov_money', automatic_operator: false }), confirm('+2250700000000', { operator: null }), ctx));
  t.is(selected.set.payment?.operator, 'moov_money');
  // A prefix no operator holds: the calling code decides, and the intent's own order
  // (airtel_money comes before mpesa in the catalog).
  const kenya = applied(t, decideConfirm(intent({ currency: 'kes' }), confirm('+254900000000', { operator: null }), ctx));
  t.is(kenya.set.payment?.operator, 'airtel_money');
  const mpesaFirst = applied(t, decideConfirm(intent({ currency: 'kes', allowed_operators: ['mpesa', 'airtel_money'] }), confirm('+254900000000', { operator: null }), ctx));
  t.is(mpesaFirst.set.payment?.operator, 'mpesa');
  // Safaricom's prefix 0722: M-Pesa, though airtel_money comes first.
  const safaricom = applied(t, decideConfirm(intent({ currency: 'kes' }), confirm('+254722000000', { operator: null }), ctx));
  t.is(safaricom.set.payment?.operator, 'mpesa');
  t.is(predictOperator('+2210700000000', ['mtn_momo', 'wave', 'orange_money']), 'wave');
  t.is(predictOperator('+221770000000', ['mtn_momo', 'orange_money', 'wave']), 'orange_money', "Orange Senegal's 77");
  t.is(predictOperator('+2250500000000', ['orange_money', 'mtn_momo']), 'mtn_momo', "MTN Côte d'Ivoire's 05");
  t.is(predictOperator('+2250500000000', ['orange_money', 'wave']), 'wave', 'a wallet open to any number of the country');
  t.is(predictOperator('+2250500000000', ['orange_money']), null, 'a known prefix of another network: no fallback to the calling code');
  t.is(predictOperator('+4915100000000', ['mtn_momo']), null);
  refusedWith(t, decideConfirm(intent(), confirm('+4915100000000', { operator: null }), ctx), 'operator_invalid');
  refusedWith(t, decideConfirm(intent({ automatic_operator: false }), confirm('+2250700000000', { operator: null }), ctx), 'parameter_missing');
});

test('the catalog: a country the operator does not serve, a currency it does not take there, an amount out of its bounds', (t) => {
  const refusal = (decision: Decision) => (decision.kind === 'refuse' ? decision.detail : null);
  t.like(refusal(decideConfirm(intent(), confirm('+254722000000', { operator: 'mtn_momo' }), ctx)), { code: 'phone_number_invalid', param: 'phone_number' });
  t.like(refusal(decideConfirm(intent({ currency: 'xof' }), confirm('+254722000000', { operator: 'mpesa' }), ctx)), { code: 'currency_not_supported', param: 'currency' });
  t.like(refusal(decideConfirm(intent({ currency: 'kes', amount: 99 }), confirm('+254722000000', { operator: 'mpesa' }), ctx)), {
    code: 'amount_too_small',
    param: 'amount',
    message: "Invalid amount: 0.99 KES is below M-Pesa's minimum in Kenya, 1.00 KES.",
  });
  t.like(refusal(decideConfirm(intent({ currency: 'kes', amount: 25_000_001 }), confirm('+254722000000', { operator: 'mpesa' }), ctx)), { code: 'amount_too_large', param: 'amount' });
  t.like(refusal(decideConfirm(intent({ amount: 99 }), confirm('+2250500000000'), ctx)), { code: 'amount_too_small', param: 'amount' });
  t.is(decideConfirm(intent({ currency: 'kes', amount: 100 }), confirm('+254722000000', { operator: 'mpesa' }), ctx).kind, 'apply', 'the bounds are inclusive');
  // Test mode and live mode alike: what the operator would refuse comes before the connector.
  t.like(refusal(decideConfirm(intent({ livemode: true, currency: 'usd' }), confirm('+2250500000000'), ctx)), { code: 'currency_not_supported' });
});

test('display_message shows the amount by the currency\'s exponent', (t) => {
  const xof = applied(t, decideConfirm(intent({ amount: 1_250_000, currency: 'xof' }), confirm('+2250500000000'), ctx));
  t.is(xof.set.next_action?.type === 'await_phone_approval' ? xof.set.next_action.await_phone_approval.display_message : null, 'Approve the payment of 1 250 000 XOF on your phone.');
  const kes = applied(t, decideConfirm(intent({ amount: 5000, currency: 'kes' }), confirm('+254722000000', { operator: 'mpesa' }), ctx));
  t.is(kes.set.next_action?.type === 'await_phone_approval' ? kes.set.next_action.await_phone_approval.display_message : null, 'Approve the payment of 50.00 KES on your phone.');
});

test('live mode without a connector is refused and changes nothing', (t) => {
  refusedWith(t, decideConfirm(intent({ livemode: true }), confirm('+2250700000000'), ctx), 'operator_not_configured');
  const withConnector = applied(t, decideConfirm(intent({ livemode: true }), confirm('+2250700000005'), { ...ctx, liveOperators: new Set(['mtn_momo']) }));
  t.is(withConnector.set.status, 'requires_action', 'no magic numbers in live mode');
  t.deepEqual(withConnector.followUps, [{ kind: 'check', delayMs: 0 }], 'the connector is asked, the simulator schedules nothing');
});

// Security review M3: in live mode only a connector's result decides an attempt.
const LIVE = { ...ctx, liveOperators: new Set(['mtn_momo', 'mpesa', 'wave', 'orange_money']) };
const liveAttempt = (phone: string, over: Partial<PaymentIntentDoc> = {}) =>
  intent({
    livemode: true,
    status: 'requires_action',
    attempt: 1,
    payment: { operator: 'mtn_momo', phone_number: phone, phone_masked: maskPhone(phone), return_url: null, checkout_token: null, requested: true, operator_reference: 'ref-1' },
    ...over,
  });

test('live: an outcome without the operator\'s result changes nothing, whatever the number and the step', (t) => {
  for (const suffix of ['000', ...Object.keys(MAGIC_SUFFIXES)]) {
    const phone = `+2250700000${suffix}`;
    for (const doc of [liveAttempt(phone), liveAttempt(phone, { status: 'processing' })]) {
      for (const step of ['payer', 'settle'] as const) {
        for (const action of [undefined, 'pay', 'decline', 'cancel'] as const) {
          const d = decideOutcome(doc, { paymentIntent: doc._id, project: 'p', livemode: true, attempt: 1, step, ...(action ? { action } : {}) }, LIVE);
          t.is(d.kind, 'skip', `${suffix} ${doc.status} ${step} ${action ?? ''}`);
        }
      }
    }
  }
});

test('live: the operator\'s result alone decides (succeeded keeps its reference; declined its code; pending nothing)', (t) => {
  const doc = liveAttempt('+2250700000002');
  const base = { paymentIntent: doc._id, project: 'p', livemode: true, attempt: 1, step: 'settle' as const };
  const ok = applied(t, decideOutcome(doc, { ...base, result: { kind: 'succeeded', operatorReference: 'FT-9' } }, LIVE));
  t.is(ok.set.status, 'succeeded', 'a test-mode decline number pays when the operator says so');
  t.is(ok.set.payment?.operator_transaction, 'FT-9');
  t.is(ok.set.payment?.phone_number, null);
  const no = applied(t, decideOutcome(liveAttempt('+2250700000000'), { ...base, result: { kind: 'declined', code: 'insufficient_funds', operatorCode: 'NOT_ENOUGH_FUNDS' } }, LIVE));
  t.is(no.set.status, 'new');
  t.is(no.set.last_payment_error?.operator_decline_code, 'insufficient_funds');
  t.is(decideOutcome(doc, { ...base, result: { kind: 'pending' } }, LIVE).kind, 'skip');
  t.is(decideOutcome(liveAttempt('+2250700000000', { status: 'canceled' }), { ...base, result: { kind: 'succeeded' } }, LIVE).kind, 'skip', 'late');
  t.is(decideOutcome(liveAttempt('+2250700000000', { attempt: 2 }), { ...base, result: { kind: 'succeeded' } }, LIVE).kind, 'skip', 'another attempt');
});

test('live confirm: no magic number, no test OTP, no simulated step; a redirect needs the operator\'s checkout', (t) => {
  for (const suffix of Object.keys(MAGIC_SUFFIXES)) {
    const d = applied(t, decideConfirm(intent({ livemode: true }), confirm(`+2250700000${suffix}`), LIVE));
    t.is(d.set.status, 'requires_action', suffix);
    t.deepEqual(d.followUps, [{ kind: 'check', delayMs: 0 }], suffix);
  }
  // Orange Money: the test code 123456 is never accepted in live mode.
  const orange = decideConfirm(intent({ livemode: true }), confirm('+2250700000000', { operator: 'orange_money', otp: '123456' }), LIVE);
  t.false(orange.kind === 'apply' && orange.set.status === 'processing');
  t.is(orange.kind, 'refuse');
  const waiting = intent({ livemode: true, status: 'requires_action', attempt: 1, payment: { operator: 'orange_money', phone_number: '+2250700000000', phone_masked: '', return_url: null, checkout_token: null } });
  t.is(decideConfirm(waiting, confirm('+2250700000000', { operator: 'orange_money', otp: '123456' }), LIVE).kind, 'refuse');
  // Wave: the operator's link, never the test checkout page; without it, no decision.
  const wave = confirm('+2250700000000', { operator: 'wave' });
  t.throws(() => decideConfirm(intent({ livemode: true }), wave, LIVE));
  const redirected = applied(t, decideConfirm(intent({ livemode: true }), wave, { ...LIVE, liveRedirect: { attempt: 1, url: 'https://pay.wave.example/c/cos-1', operatorReference: 'cos-1' } }));
  t.like(redirected.set.next_action, { type: 'redirect_to_url', redirect_to_url: { url: 'https://pay.wave.example/c/cos-1' } });
  t.is(redirected.set.payment?.operator_reference, 'cos-1');
  t.is(redirected.set.payment?.checkout_token, null);
  const refused = applied(t, decideConfirm(intent({ livemode: true }), wave, { ...LIVE, liveRedirect: { attempt: 1, refused: 'payer_not_found' } }));
  t.is(refused.answer, 'declined');
  t.is(refused.set.last_payment_error?.operator_decline_code, 'payer_not_found');
});

test('expiry: from new or requires_action at expires_at; processing resolves first; a moved expires_at is not this job\'s', (t) => {
  const due = intent({ expires_at: NOW });
  t.is(applied(t, decideExpiry(due, NOW, NOW)).set.status, 'expired');
  t.is(applied(t, decideExpiry({ ...due, status: 'requires_action' }, NOW, NOW)).event, 'payment_intent.expired');
  t.is(decideExpiry({ ...due, status: 'processing' }, NOW, NOW).kind, 'skip');
  t.is(decideExpiry(due, NOW - 100, NOW).kind, 'skip');
  t.is(decideExpiry(intent({ expires_at: NOW + 60 }), NOW + 60, NOW).kind, 'skip');
  const settledLate = decideOutcome(
    intent({ status: 'processing', attempt: 1, expires_at: NOW - 5, payment: { operator: 'mtn_momo', phone_number: '+2250700000003', phone_masked: '', return_url: null, checkout_token: null } }),
    { paymentIntent: 'pi', project: 'p', livemode: false, attempt: 1, step: 'settle' },
    ctx,
  );
  t.deepEqual(applied(t, settledLate).followUps, [{ kind: 'expire', expiresAt: NOW - 5 }], 'a decline after expires_at hands the intent to its expiry');
});

test('update: only the fields given; metadata merged with "" removing a key; selected and automatic kept consistent', (t) => {
  const doc = intent({ metadata: [{ k: 'a', v: '1' }, { k: 'b', v: '2' }] });
  const d = applied(t, decideUpdate(doc, { metadata: [{ k: 'a', v: '' }, { k: 'c', v: '3' }] }));
  t.deepEqual(d.set, { metadata: [{ k: 'b', v: '2' }, { k: 'c', v: '3' }] });
  t.deepEqual(mergeMetadata([{ k: 'x', v: '1' }], [{ k: 'x', v: '2' }]), [{ k: 'x', v: '2' }]);
  const full = intent({ metadata: Array.from({ length: 50 }, (_, i) => ({ k: `k${i}`, v: 'v' })) });
  refusedWith(t, decideUpdate(full, { metadata: [{ k: 'one-more', v: 'v' }] }), 'metadata_invalid');
  t.is(decideUpdate(full, { metadata: [{ k: 'k0', v: '' }, { k: 'one-more', v: 'v' }] }).kind, 'apply', 'removing one makes room for one');
  const selected = applied(t, decideUpdate(doc, { selected_operator: 'wave' }));
  t.like(selected.set, { selected_operator: 'wave', automatic_operator: false });
  refusedWith(t, decideUpdate(intent({ selected_operator: 'wave', automatic_operator: false }), { allowed_operators: ['mtn_momo'] }), 'operator_invalid');
  refusedWith(t, decideUpdate(intent({ selected_operator: 'wave', automatic_operator: false }), { automatic_operator: true }), 'parameter_conflict');
  t.deepEqual(applied(t, decideUpdate(doc, { expires_at: NOW + 120 })).followUps, [{ kind: 'expire', expiresAt: NOW + 120 }]);
});

test('cancel ends the attempt and records the reason', (t) => {
  const d = applied(t, decideCancel(intent({ status: 'requires_action', payment: { operator: 'wave', phone_number: '+2210700000000', phone_masked: '+221*******000', return_url: null, checkout_token: 'tok' } }), { cancellation_reason: 'abandoned' }, NOW));
  t.like(d.set, { status: 'canceled', canceled_at: NOW, cancellation_reason: 'abandoned', next_action: null });
  t.like(d.set.payment, { phone_number: null, checkout_token: 'tok', phone_masked: '+221*******000' });
});

test('live: an expiry never ends an attempt the operator may still approve, unless it was withdrawn', (t) => {
  const asked = intent({ livemode: true, status: 'requires_action', expires_at: 100, attempt: 1, payment: { operator: 'mtn_momo', phone_number: '+2250500000001', phone_masked: '+225*******001', return_url: null, checkout_token: null, requested: true } });
  t.like(decideExpiry(asked, 100, 200), { kind: 'skip' });
  t.like(decideExpiry(asked, 100, 200, true), { kind: 'apply', set: { status: 'expired' } });
  t.like(decideCancel(asked, { cancellation_reason: null }, 200), { kind: 'refuse', detail: { code: 'payment_intent_unexpected_state' } });
  t.like(decideCancel(asked, { cancellation_reason: null }, 200, true), { kind: 'apply', set: { status: 'canceled' } });
  const unasked = { ...asked, payment: { ...asked.payment!, requested: false } };
  t.like(decideExpiry(unasked, 100, 200), { kind: 'apply', set: { status: 'expired' } });
});
