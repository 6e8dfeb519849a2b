/** The refunds' decisions, alone (worker/refunds/decide.ts): what may be held, and how a refund's end changes the amounts. */
import test from 'ava';
import type { PaymentIntentDoc, RefundLedgerEntry } from '../../../common/documents.js';
import { decideHold, decideSettle, refundable } from '../../../worker/refunds/decide.js';
import { refundSimulator } from '../../../worker/operators/simulator.js';
import { IdGenerator } from '../../../common/ids.js';

function intent(fields: Partial<PaymentIntentDoc> = {}): PaymentIntentDoc {
  return {
    _id: 'pi_1', project: 'p', livemode: false, amount: 1000, currency: 'xof', description: null, status: 'succeeded', client_secret: 's',
    automatic_operator: false, allowed_operators: ['mtn_momo'], selected_operator: null, metadata: [], created: 0, expires_at: 0,
    payment: { operator: 'mtn_momo', phone_number: null, phone_masked: '+225*******000', return_url: null, checkout_token: null },
    rev: 3, ...fields,
  };
}

const none = new Set<string>();

test('a refund may hold what remains, and defaults to it', (t) => {
  t.deepEqual(decideHold(intent(), null, none), { kind: 'hold', amount: 1000, operator: 'mtn_momo' });
  t.deepEqual(decideHold(intent({ amount_held: 400 }), null, none), { kind: 'hold', amount: 600, operator: 'mtn_momo' });
  t.deepEqual(decideHold(intent({ amount_held: 400 }), 600, none), { kind: 'hold', amount: 600, operator: 'mtn_momo' });
  t.is(refundable(intent({ amount_held: 250 })), 750);
});

test('refusals: status, nothing left, too large, operator support, live connectors', (t) => {
  const code = (doc: PaymentIntentDoc, amount: number | null, live = none) => {
    const d = decideHold(doc, amount, live);
    return d.kind === 'refuse' ? d.detail.code : null;
  };
  t.is(code(intent({ status: 'processing' }), null), 'payment_intent_unexpected_state');
  t.is(code(intent({ amount_held: 1000 }), null), 'charge_already_refunded');
  t.is(code(intent({ amount_held: 1000 }), 1), 'charge_already_refunded');
  t.is(code(intent({ amount_held: 999 }), 2), 'amount_too_large');
  t.is(code(intent({ payment: { operator: 'orange_money', phone_number: null, phone_masked: 'x', return_url: null, checkout_token: null } }), null), 'refund_not_supported');
  const mpesa = intent({ payment: { operator: 'mpesa', phone_number: null, phone_masked: 'x', return_url: null, checkout_token: null } });
  t.is(code(mpesa, 500), 'refund_not_supported');
  t.is(code(mpesa, null), null);
  t.is(code(mpesa, 1000), null);
  t.is(code(intent({ livemode: true }), null), 'operator_not_configured');
  t.is(code(intent({ livemode: true }), null, new Set(['mtn_momo'])), null);
});

test('refusals show amounts in the intent\'s currency, with the minor units a request is written in', (t) => {
  const message = (doc: PaymentIntentDoc, amount: number | null) => {
    const d = decideHold(doc, amount, none);
    return d.kind === 'refuse' ? d.detail.message : null;
  };
  t.is(message(intent({ amount: 5000, amount_held: 1500 }), 4000), 'Refund amount 4 000 XOF is greater than what remains refundable of PaymentIntent pi_1: 3 500 XOF of 5 000 XOF.');
  t.is(
    message(intent({ amount: 1050, currency: 'ghs', amount_held: 1050 }), null),
    'PaymentIntent pi_1 has already been refunded in full (its succeeded and pending refunds hold all of 10.50 GHS (1050)).',
  );
  const mpesa = intent({ amount: 123456, currency: 'kes', payment: { operator: 'mpesa', phone_number: null, phone_masked: 'x', return_url: null, checkout_token: null } });
  t.is(message(mpesa, 500), 'mpesa refunds only a whole payment: refund all of 1 234.56 KES (123456), or nothing.');
  t.is(message({ ...mpesa, amount_held: 100 }, 123456), 'Refund amount 1 234.56 KES (123456) is greater than what remains refundable of PaymentIntent pi_1: 1 233.56 KES (123356) of 1 234.56 KES (123456).');
});

test('a success adds to amount_refunded and keeps the hold; a failure releases it; an ended refund changes nothing', (t) => {
  const entry: RefundLedgerEntry = { id: 're_1', m: 're_1', amount: 300, status: 'pending', c: 0, reason: null, ev: { created: 'evt_1' } };
  const doc = intent({ amount_held: 500, amount_refunded: 200, refunds_pending: 1, refunds: [entry] });
  const events = { settled: 'evt_2', refunded: 'evt_3' };
  const ok = decideSettle(doc, 're_1', { kind: 'succeeded' }, events);
  t.like(ok, { amount_refunded: 500, refunds_pending: 0 });
  t.is(ok?.amount_held, undefined);
  t.like(ok?.refunds?.[0], { status: 'succeeded', ar: 500, ev: { created: 'evt_1', settled: 'evt_2', refunded: 'evt_3' } });
  const failed = decideSettle(doc, 're_1', { kind: 'failed', code: 'payer_account_blocked' }, events);
  t.like(failed, { amount_held: 200, refunds_pending: 0 });
  t.like(failed?.refunds?.[0], { status: 'failed', fr: 'payer_account_blocked' });
  t.is(decideSettle(intent({ refunds: [{ ...entry, status: 'succeeded' }] }), 're_1', { kind: 'failed', code: 'generic_decline' }, events), null);
  t.is(decideSettle(doc, 're_unknown', { kind: 'succeeded' }, events), null);
});

test("the refund simulator answers by the payment number's last three digits", async (t) => {
  let now = 1_800_000_000_000;
  const sim = refundSimulator({ slowDelayMs: 60_000 }, () => now);
  const id = new IdGenerator(() => now).next('refund');
  const ask = async (masked: string) => {
    const request = { refundId: id, paymentIntent: 'pi_1', attemptId: 'pi_1:1', paymentReference: null, amount: 1, currency: 'xof', phoneNumber: masked, callbackUrl: '', reason: null };
    const first = await sim.refund(request);
    t.is(first.kind, 'pending');
    return sim.refundOutcome(request, first.kind === 'pending' ? first.operatorReference : undefined);
  };
  t.is((await ask('+225*******000')).kind, 'succeeded');
  t.deepEqual(await ask('+225*******020'), { kind: 'failed', code: 'payer_account_blocked', operatorCode: 'ACCOUNT_BLOCKED' });
  t.is((await ask('+225*******021')).kind, 'pending');
  now += 60_000;
  t.is((await ask('+225*******021')).kind, 'succeeded');
});

