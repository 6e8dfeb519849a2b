import test from 'ava';
import type { PaymentIntentDoc } from '../../common/documents.js';
import { checkoutPayment } from '../../worker/reconcile/wave-transactions.js';
import { decideLatePayment, decideResolution, parseAttemptId, shownAsSucceeded, type OperatorPayment } from '../../worker/reconcile/compare.js';

const NOW = 1_700_000_000;
const intent = (status: PaymentIntentDoc['status'], attempt = 1, expiresAt = NOW + 3600) => ({ status, attempt, expires_at: expiresAt });
const payment: OperatorPayment = { paymentIntent: 'pi_x', attempt: 1, operator: 'mtn_momo', account: 'mtn_momo:mtnci', reference: 'T1', foundBy: 'status_lookup' };

test('a payment is shown only when its intent succeeded with that very attempt', (t) => {
  t.true(shownAsSucceeded(intent('succeeded', 1), 1));
  t.false(shownAsSucceeded(intent('succeeded', 2), 1));
  t.false(shownAsSucceeded(intent('new', 1), 1));
  t.false(shownAsSucceeded(intent('canceled', 1), 1));
});

test('an intent that can still take the payment gets it; a final one gives it back', (t) => {
  t.deepEqual(decideResolution(intent('new', 1), payment, true, NOW), { kind: 'apply' });
  t.deepEqual(decideResolution(intent('new', 3), payment, true, NOW), { kind: 'apply' });
  t.deepEqual(decideResolution(intent('requires_action', 1), payment, true, NOW), { kind: 'apply' });
  t.deepEqual(decideResolution(intent('canceled'), payment, true, NOW), { kind: 'refund' });
  t.deepEqual(decideResolution(intent('expired'), payment, true, NOW), { kind: 'refund' });
  t.deepEqual(decideResolution(intent('succeeded', 2), payment, true, NOW), { kind: 'refund' });
  t.is(decideResolution(intent('canceled'), payment, false, NOW).kind, 'manual');
});

test('it waits while another attempt is in flight or settling, or the intent is expiring', (t) => {
  t.is(decideResolution(intent('requires_action', 2), payment, true, NOW).kind, 'wait');
  t.is(decideResolution(intent('processing', 1), payment, true, NOW).kind, 'wait');
  t.is(decideResolution(intent('new', 1, NOW - 1), payment, true, NOW).kind, 'wait');
});

test('the late payment succeeds the intent with the attempt that paid, through a lifecycle decision', (t) => {
  const doc = { _id: 'pi_x', status: 'new', attempt: 2, expires_at: NOW + 60, payment: null, livemode: true } as unknown as PaymentIntentDoc;
  const decision = decideLatePayment(doc, payment, NOW);
  if (decision.kind !== 'apply') return t.fail(decision.kind);
  t.is(decision.event, 'payment_intent.succeeded');
  t.like(decision.set, { status: 'succeeded', attempt: 1, next_action: null, last_payment_error: null });
  t.like(decision.set.payment, { operator: 'mtn_momo', account: 'mtn_momo:mtnci', operator_transaction: 'T1', phone_number: null });
  t.is(decideLatePayment({ ...doc, status: 'canceled' }, payment, NOW).kind, 'skip');
});

test("attempt ids are ours only in their exact shape; Wave's list yields checkout payments of the window", (t) => {
  t.deepEqual(parseAttemptId('pi_abc123:2'), { paymentIntent: 'pi_abc123', attempt: 2 });
  t.is(parseAttemptId('pi_abc:0'), null);
  t.is(parseAttemptId('order-42'), null);
  const item = { timestamp: new Date(NOW * 1000).toISOString(), transaction_type: 'api_checkout', is_reversal: false, client_reference: 'pi_abc:1', checkout_api_session_id: 'cos-1' };
  t.like(checkoutPayment(item, 'wave:SN', NOW * 1000 - 1000), { paymentIntent: 'pi_abc', attempt: 1, reference: 'cos-1', foundBy: 'transaction_list', account: 'wave:SN' });
  t.is(checkoutPayment({ ...item, transaction_type: 'api_checkout_refund' }, 'wave:SN', 0), null);
  t.is(checkoutPayment({ ...item, is_reversal: true }, 'wave:SN', 0), null);
  t.is(checkoutPayment(item, 'wave:SN', NOW * 1000 + 1), null);
  t.is(checkoutPayment({ ...item, client_reference: 'someone-else' }, 'wave:SN', 0), null);
});
