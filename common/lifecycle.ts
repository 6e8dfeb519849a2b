/**
 * The payment intent lifecycle of DESIGN.md section 7, as data: statuses, decline
 * codes, the shapes of `next_action`, masking of phone numbers, and the test-mode
 * outcomes chosen by the last three digits of a phone number. Pure: the worker decides transitions from these (worker/lifecycle/). Each
 * operator's flow is the catalog's (common/operator-catalog.ts).
 */

export const PAYMENT_INTENT_STATUSES = ['new', 'requires_action', 'processing', 'succeeded', 'canceled', 'expired'] as const;
export type PaymentIntentStatus = (typeof PAYMENT_INTENT_STATUSES)[number];

/** No transition leaves these. */
export const FINAL_STATUSES: ReadonlySet<PaymentIntentStatus> = new Set(['succeeded', 'canceled', 'expired']);

export function isFinal(status: PaymentIntentStatus): boolean {
  return FINAL_STATUSES.has(status);
}

export const CANCELLATION_REASONS = ['duplicate', 'fraudulent', 'requested_by_customer', 'abandoned'] as const;
export type CancellationReason = (typeof CANCELLATION_REASONS)[number];

/**
 * `operator_decline_code`: the operators' own codes (MTN, M-Pesa, Airtel, Wave,
 * Orange) normalised to one list, with the message a payer-facing page may show.
 */
export const DECLINE_CODES = {
  insufficient_funds: "The payer's mobile-money balance is too low for this amount.",
  payer_declined: 'The payer refused the payment on their phone or on the checkout page.',
  approval_timeout: 'The payer did not approve the payment in time.',
  incorrect_pin: 'The payer entered a wrong PIN.',
  invalid_otp: 'The one-time code is not the one the operator issued.',
  payer_not_found: 'The operator has no mobile-money account for this phone number.',
  payer_account_blocked: "The payer's mobile-money account is blocked.",
  limit_exceeded: "The payment exceeds the payer's transaction or daily limit.",
  operator_unavailable: 'The operator could not process the payment; it may be retried later.',
  generic_decline: 'The operator declined the payment without giving a reason.',
  operator_request_rejected: 'The operator refused our request itself (not the payer): it created nothing, and the payer was not asked.',
} as const;
export type DeclineCode = keyof typeof DECLINE_CODES;

export interface PaymentError {
  code: 'payment_declined';
  operator: string;
  operator_decline_code: DeclineCode;
  message: string;
}

export function paymentError(operator: string, declineCode: DeclineCode): PaymentError {
  return { code: 'payment_declined', operator, operator_decline_code: declineCode, message: DECLINE_CODES[declineCode] };
}

export type NextAction =
  | {
      type: 'await_phone_approval';
      await_phone_approval: { operator: string; phone_number: string; display_message: string; expires_at: number };
    }
  | { type: 'redirect_to_url'; redirect_to_url: { url: string; return_url: string | null } }
  | { type: 'otp_required'; otp_required: { display_message: string; ussd_code: string; otp_length: number } };

/** The USSD code Orange Money payers dial to get a one-time code. */
export const ORANGE_OTP_USSD = '#144*82#';
export const OTP_LENGTH = 6;
/** The one right code in test mode; any other is `invalid_otp`. */
export const TEST_OTP = '123456';

/** E.164: `+`, a country code that does not start with 0, at most 15 digits in all. */
export const E164 = /^\+[1-9][0-9]{7,14}$/;

/**
 * A phone number as it may be shown (the object, events, logs): the country code's
 * first digits and the last three, the rest hidden. `+2250700000003` → `+225*******003`.
 */
export function maskPhone(phone: string): string {
  if (phone.length <= 7) return `${phone.slice(0, 1)}${'*'.repeat(Math.max(phone.length - 1, 0))}`;
  return `${phone.slice(0, 4)}${'*'.repeat(phone.length - 7)}${phone.slice(-3)}`;
}

/** What the test-mode simulator does for a phone number, chosen by its last three digits. */
export type SimulatedOutcome =
  | { kind: 'succeed'; slow: boolean }
  /**
   * `stage`: `confirm` refuses at once (402); `payer` before the payer approves; `processing` after.
   * `paysLate`: the operator stops answering, the attempt ends when its window closes,
   * and the payer's money is taken after all (suffix 030, found by reconciliation).
   */
  | { kind: 'decline'; code: DeclineCode; stage: 'confirm' | 'payer' | 'processing'; paysLate?: true }
  /** The operator never answers: the intent waits in `requires_action` until it expires. */
  | { kind: 'silent' };

/** The magic suffixes of DESIGN.md section 7 (docs/payments.md's table is this one). */
export const MAGIC_SUFFIXES: Readonly<Record<string, SimulatedOutcome>> = {
  '000': { kind: 'succeed', slow: false },
  '001': { kind: 'decline', code: 'payer_declined', stage: 'payer' },
  '002': { kind: 'decline', code: 'approval_timeout', stage: 'payer' },
  '003': { kind: 'decline', code: 'insufficient_funds', stage: 'processing' },
  '004': { kind: 'decline', code: 'incorrect_pin', stage: 'payer' },
  '005': { kind: 'decline', code: 'payer_not_found', stage: 'confirm' },
  '006': { kind: 'decline', code: 'limit_exceeded', stage: 'processing' },
  '007': { kind: 'decline', code: 'payer_account_blocked', stage: 'processing' },
  '008': { kind: 'decline', code: 'operator_unavailable', stage: 'processing' },
  '009': { kind: 'decline', code: 'generic_decline', stage: 'processing' },
  '010': { kind: 'silent' },
  '011': { kind: 'succeed', slow: true },
  '030': { kind: 'decline', code: 'approval_timeout', stage: 'payer', paysLate: true },
};

/** The suffix whose payment the simulator takes after its attempt ended (DESIGN section 16). */
export const LATE_PAYMENT_SUFFIX = '030';

export function simulatedOutcome(phone: string): SimulatedOutcome {
  return MAGIC_SUFFIXES[phone.slice(-3)] ?? { kind: 'succeed', slow: false };
}

/** A delayed job that a transition schedules (worker/lifecycle/follow-ups.ts enqueues them). */
export type FollowUp =
  | { kind: 'outcome'; step: 'payer' | 'settle'; delayMs: number }
  /** Check the expiry at `expires_at` (unix seconds), or at once when that has passed. */
  | { kind: 'expire'; expiresAt: number }
  /**
   * Live mode: ask the operator about the attempt (worker/lifecycle/operator-check.ts):
   * its first check asks for the payment when that was not done yet, later ones
   * read the operator's answer.
   */
  | { kind: 'check'; delayMs: number };

/**
 * An operator's answer about an attempt, as a live connector read it
 * (worker/operators/connector.ts): in live mode the only thing that decides one.
 */
export type OperatorAnswer =
  | { kind: 'succeeded'; operatorReference?: string }
  | { kind: 'declined'; code: DeclineCode; operatorCode?: string }
  /**
   * Not final. `failedTry`: the payer's last try failed and the operator keeps the
   * attempt open for another (a Wave session with `last_payment_error`); `key` tells
   * one failed try from the next.
   */
  | { kind: 'pending'; failedTry?: { code: DeclineCode; operatorCode: string; key: string } };
