/**
 * Daraja's wire: M-Pesa Express result codes and our decline codes, the reversal
 * codes that mean the money went back, the EAT timestamp and the STK password. Pure.
 */
import type { MpesaConfig } from '../../../common/config.js';
import type { DeclineCode } from '../../../common/lifecycle.js';
import type { PayoutFailureCode } from '../../../common/payouts.js';

/** M-Pesa Express `ResultCode`s → DESIGN section 7's decline codes; others are `generic_decline`. */
export const MPESA_RESULT_CODES: Readonly<Record<string, DeclineCode>> = {
  '1': 'insufficient_funds',
  '1032': 'payer_declined',
  '1037': 'approval_timeout',
  '1019': 'approval_timeout',
  '2001': 'incorrect_pin',
  '1001': 'generic_decline',
  '17': 'operator_unavailable',
  '26': 'operator_unavailable',
  '1025': 'operator_unavailable',
  '9999': 'operator_unavailable',
};

/**
 * B2C `Result` codes → DESIGN section 17's failure codes; others are `generic_failure`.
 * Daraja's B2C page lists codes in prose; the pairings are partly inferred
 * (worker/operators/mpesa/README.md).
 */
export const MPESA_B2C_RESULT_CODES: Readonly<Record<string, PayoutFailureCode>> = {
  '1': 'balance_insufficient',
  '2040': 'recipient_not_found',
  'SFC_IC0003': 'recipient_not_found',
  '8': 'recipient_limit_exceeded',
  '2001': 'operator_request_rejected',
  '11': 'operator_request_rejected',
  '2028': 'operator_request_rejected',
};

/** Reversal `ResultCode`s that mean the money is back with the payer. */
export const REVERSED = new Set(['0', 'R000001']);

/** Transaction Status `TransactionStatus` values of a reversal whose money is back with the payer. */
export const STATUS_REVERSED = new Set(['Completed', 'Reversed']);

/** `YYYYMMDDHHmmss` in East Africa Time (UTC+3). */
export function mpesaTimestamp(nowMs: number): string {
  return new Date(nowMs + 3 * 3600_000).toISOString().replace(/[-T:]/g, '').slice(0, 14);
}

export function mpesaPassword(config: Pick<MpesaConfig, 'shortcode' | 'passkey'>, timestamp: string): string {
  return Buffer.from(`${config.shortcode}${config.passkey}${timestamp}`).toString('base64');
}

