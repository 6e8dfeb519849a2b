/**
 * Wave's wire: its payment error codes and our decline codes, and how a checkout
 * session reads as an answer. Pure: the connector (./connector.ts) and the tests read it.
 */
import type { DeclineCode } from '../../../common/lifecycle.js';
import type { PayoutFailureCode } from '../../../common/payouts.js';
import type { DisbursementResult, OperatorResult } from '../connector.js';
import { field, text } from '../operator-http.js';

/** Wave's `last_payment_error.code` values → DESIGN section 7's decline codes; others are `generic_decline`. */
export const WAVE_PAYMENT_ERRORS: Readonly<Record<string, DeclineCode>> = {
  'insufficient-funds': 'insufficient_funds',
  'blocked-account': 'payer_account_blocked',
  'kyb-limits-exceeded': 'limit_exceeded',
  'payer-mobile-mismatch': 'payer_declined',
  'customer-age-restricted': 'generic_decline',
  'cross-border-payment-not-allowed': 'generic_decline',
  'payment-failure': 'operator_unavailable',
};

/** Our reading of a checkout session. */
export function waveSessionOutcome(session: unknown): OperatorResult {
  const checkout = text(session, 'checkout_status');
  const payment = text(session, 'payment_status');
  const id = text(session, 'id');
  if (payment === 'succeeded') return { kind: 'succeeded', ...(id ? { operatorReference: id } : {}) };
  const error = field(session, 'last_payment_error');
  const operatorCode = text(error, 'code');
  if (checkout === 'expired' || checkout === 'complete') {
    if (operatorCode) return { kind: 'declined', code: WAVE_PAYMENT_ERRORS[operatorCode] ?? 'generic_decline', operatorCode };
    return { kind: 'declined', code: checkout === 'expired' ? 'approval_timeout' : 'payer_declined', operatorCode: `checkout_${checkout}` };
  }
  // Still open after a failed try: the payer may try again on the same page (DESIGN section 14).
  if (operatorCode) {
    const key = `${operatorCode}:${text(error, 'message') ?? ''}`.slice(0, 300);
    return { kind: 'pending', failedTry: { code: WAVE_PAYMENT_ERRORS[operatorCode] ?? 'generic_decline', operatorCode, key } };
  }
  return { kind: 'pending' };
}

/**
 * Whether the Balance API's transaction list (`GET /v1/transactions?date=…`, its
 * `items`) shows the session's money gone back: an `api_checkout_refund` item (a
 * reversal) of that checkout session. Wave's checkout session object has no refund
 * field: after a refund it still reads `payment_status: "succeeded"`.
 */
export function waveRefundListed(items: unknown, sessionId: string): boolean {
  return Array.isArray(items) && items.some((item) => text(item, 'transaction_type') === 'api_checkout_refund' && text(item, 'checkout_api_session_id') === sessionId);
}

/**
 * A failed payout's `payout_error.error_code` → DESIGN section 17's failure codes; a
 * code not listed is `generic_failure`. Wave's payout reference names its error
 * object and gives examples; the list here is partly inferred (worker/operators/wave/README.md).
 */
export const WAVE_PAYOUT_ERRORS: Readonly<Record<string, PayoutFailureCode>> = {
  'recipient-not-found': 'recipient_not_found',
  'no-such-account': 'recipient_not_found',
  'blocked-account': 'recipient_account_blocked',
  'recipient-limit-exceeded': 'recipient_limit_exceeded',
  'payout-limit-exceeded': 'recipient_limit_exceeded',
  'kyb-limits-exceeded': 'recipient_limit_exceeded',
  'insufficient-funds': 'balance_insufficient',
};

/** Our reading of a Wave payout object: `processing` is pending, `reversed` (sent, then taken back) a failure. */
export function wavePayoutOutcome(payout: unknown): DisbursementResult {
  const status = text(payout, 'status');
  const id = text(payout, 'id');
  if (status === 'succeeded') return { kind: 'paid', ...(id ? { operatorReference: id } : {}) };
  if (status === 'failed' || status === 'reversed') {
    const operatorCode = text(field(payout, 'payout_error'), 'error_code') ?? status;
    return { kind: 'failed', code: WAVE_PAYOUT_ERRORS[operatorCode] ?? 'generic_failure', operatorCode };
  }
  return { kind: 'pending', ...(id ? { operatorReference: id } : {}) };
}
