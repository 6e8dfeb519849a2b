/**
 * MTN MoMo's wire: its `reason` codes and our decline codes, the X-Reference-Id of an
 * attempt or a refund, the MSISDN as MTN takes it. Pure: the connector
 * (./connector.ts) and the tests read it.
 */
import { createHash } from 'node:crypto';
import type { DeclineCode } from '../../../common/lifecycle.js';
import type { PayoutFailureCode } from '../../../common/payouts.js';
import { text } from '../operator-http.js';

/**
 * MTN's `reason` codes (ErrorReason) → DESIGN section 7's decline codes. A code not
 * listed is `generic_decline`.
 */
export const MTN_REASONS: Readonly<Record<string, DeclineCode>> = {
  PAYER_NOT_FOUND: 'payer_not_found',
  PAYEE_NOT_FOUND: 'generic_decline',
  NOT_ENOUGH_FUNDS: 'insufficient_funds',
  APPROVAL_REJECTED: 'payer_declined',
  TRANSACTION_CANCELED: 'payer_declined',
  EXPIRED: 'approval_timeout',
  PAYER_LIMIT_REACHED: 'limit_exceeded',
  PAYEE_LIMIT_REACHED: 'limit_exceeded',
  PAYER_DELAYED: 'approval_timeout',
  NOT_ALLOWED: 'payer_account_blocked',
  PAYEE_NOT_ALLOWED_TO_RECEIVE: 'generic_decline',
  NOT_ALLOWED_TARGET_ENVIRONMENT: 'generic_decline',
  INVALID_CALLBACK_URL_HOST: 'generic_decline',
  INVALID_CURRENCY: 'generic_decline',
  INTERNAL_PROCESSING_ERROR: 'operator_unavailable',
  SERVICE_UNAVAILABLE: 'operator_unavailable',
  COULD_NOT_PERFORM_TRANSACTION: 'operator_unavailable',
  PAYER_FAILED: 'generic_decline',
};

/** The decline code of a FAILED transaction's `reason` (a string or `{code, message}`). */
export function mtnDecline(reason: unknown): { code: DeclineCode; operatorCode?: string } {
  const operatorCode = typeof reason === 'string' ? reason : text(reason, 'code');
  return { code: (operatorCode && MTN_REASONS[operatorCode]) || 'generic_decline', ...(operatorCode ? { operatorCode } : {}) };
}

/**
 * The X-Reference-Id of an attempt or a refund: a UUID version 4 in shape, derived
 * from the id so a retry reuses it, and unguessable without the id.
 */
export function mtnReferenceId(id: string): string {
  const bytes = createHash('sha256').update(`mtn_momo:${id}`).digest().subarray(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x40;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** The MSISDN as MTN takes it: the E.164 digits, without `+`. */
export const msisdn = (phone: string) => phone.replace(/^\+/, '');


/**
 * A failed Disbursement `transfer`'s `reason` → DESIGN section 17's failure codes. The
 * payee is the recipient here; the payer is the merchant's own disbursement account
 * (its NOT_ENOUGH_FUNDS is our account's balance). A code not listed is `generic_failure`.
 */
export const MTN_PAYOUT_REASONS: Readonly<Record<string, PayoutFailureCode>> = {
  PAYEE_NOT_FOUND: 'recipient_not_found',
  PAYEE_NOT_ALLOWED_TO_RECEIVE: 'recipient_account_blocked',
  NOT_ALLOWED: 'recipient_account_blocked',
  PAYEE_LIMIT_REACHED: 'recipient_limit_exceeded',
  NOT_ENOUGH_FUNDS: 'balance_insufficient',
  PAYER_LIMIT_REACHED: 'balance_insufficient',
  NOT_ALLOWED_TARGET_ENVIRONMENT: 'operator_request_rejected',
  INVALID_CURRENCY: 'operator_request_rejected',
  INVALID_CALLBACK_URL_HOST: 'operator_request_rejected',
};

export function mtnPayoutFailure(reason: unknown): { code: PayoutFailureCode; operatorCode?: string } {
  const operatorCode = typeof reason === 'string' ? reason : text(reason, 'code');
  return { code: (operatorCode && MTN_PAYOUT_REASONS[operatorCode]) || 'generic_failure', ...(operatorCode ? { operatorCode } : {}) };
}
