/**
 * Reconciliation's decisions, pure (DESIGN section 16): whether a payment the
 * operator took is one this service shows as succeeded, and, when it is not, what
 * becomes of it. ./run.ts reads the records and applies these.
 */
import type { PaymentAttempt, PaymentIntentDoc } from '../../common/documents.js';
import type { DiscrepancyFinding } from '../../common/operator-discrepancies.js';
import type { Decision } from '../lifecycle/decide.js';

/** A payment in the operator's record (its transaction list, or its answer to a status lookup). */
export interface OperatorPayment {
  paymentIntent: string;
  attempt: number;
  operator: string;
  /** The operator account that holds it; null: the simulator. */
  account: string | null;
  /** The operator's reference of the payment (its transaction id, session id), when it gave one. */
  reference: string | null;
  foundBy: DiscrepancyFinding;
  /** Test mode: the masked number the simulator reads its outcome from. */
  phoneMasked?: string | null;
}

/** `pi_…:<n>` → the intent and the attempt; null for anything else (a reference that is not ours). */
export function parseAttemptId(attemptId: string): { paymentIntent: string; attempt: number } | null {
  const match = /^(pi_[0-9A-Za-z]+):([1-9][0-9]{0,5})$/.exec(attemptId);
  return match ? { paymentIntent: match[1]!, attempt: Number(match[2]) } : null;
}

/** Our record shows the payment: the intent succeeded, and with this attempt. */
export function shownAsSucceeded(intent: Pick<PaymentIntentDoc, 'status' | 'attempt'>, attempt: number): boolean {
  return intent.status === 'succeeded' && (intent.attempt ?? 0) === attempt;
}

export type Resolution =
  /** The intent can still take the payment: it succeeds with it. */
  | { kind: 'apply' }
  /** The intent is final (canceled, expired, paid by another attempt): the payment goes back. */
  | { kind: 'refund' }
  /** The operator cannot refund through this service: the merchant must. */
  | { kind: 'manual'; reason: string }
  /** Not yet: another attempt is in flight, or the intent's expiry is due; the next run decides. */
  | { kind: 'wait'; reason: string };

/**
 * What becomes of a payment the operator took that `intent` does not show.
 * `refunds`: whether the operator refunds through this service (its catalog entry,
 * and in live mode a configured connector). `nowS`: unix seconds.
 */
export function decideResolution(intent: Pick<PaymentIntentDoc, 'status' | 'attempt' | 'expires_at'>, payment: Pick<OperatorPayment, 'attempt'>, refunds: boolean, nowS: number): Resolution {
  const refundOrManual = (): Resolution => (refunds ? { kind: 'refund' } : { kind: 'manual', reason: 'the operator does not refund through this service' });
  switch (intent.status) {
    case 'canceled':
    case 'expired':
      return refundOrManual();
    case 'succeeded':
      return (intent.attempt ?? 0) === payment.attempt ? { kind: 'wait', reason: 'already shown as succeeded' } : refundOrManual();
    case 'processing':
      return { kind: 'wait', reason: 'an attempt is settling' };
    case 'requires_action':
    case 'new': {
      // Its expiry is due: the expiry decides first (then the payment goes back).
      if (intent.expires_at <= nowS) return { kind: 'wait', reason: 'the intent is expiring' };
      if (intent.status === 'requires_action' && (intent.attempt ?? 0) !== payment.attempt) return { kind: 'wait', reason: 'another attempt is in flight' };
      return { kind: 'apply' };
    }
  }
}

/**
 * The lifecycle decision that applies a late payment to its intent (the transition
 * the normal path uses, worker/lifecycle/transition.ts): the intent succeeds with the
 * attempt that paid, its event `payment_intent.succeeded`. Decided again on the
 * intent as it is under its lock: anything but `apply` changes nothing.
 */
export function decideLatePayment(doc: PaymentIntentDoc, payment: OperatorPayment, nowS: number): Decision {
  const resolution = decideResolution(doc, payment, true, nowS);
  if (resolution.kind !== 'apply') return { kind: 'skip', reason: `late payment not applied: ${resolution.kind === 'wait' || resolution.kind === 'manual' ? resolution.reason : 'the intent is final'}` };
  const same = (doc.attempt ?? 0) === payment.attempt && doc.payment;
  const paid: PaymentAttempt = same
    ? { ...doc.payment!, phone_number: null, next_check_at: null, operator_transaction: payment.reference ?? doc.payment!.operator_transaction ?? null }
    : {
        operator: payment.operator,
        phone_number: null,
        phone_masked: payment.phoneMasked ?? '',
        return_url: null,
        checkout_token: null,
        account: payment.account,
        operator_reference: payment.reference,
        operator_transaction: payment.reference,
      };
  return {
    kind: 'apply',
    set: { status: 'succeeded', attempt: payment.attempt, next_action: null, last_payment_error: null, payment: paid },
    event: 'payment_intent.succeeded',
    answer: 'object',
    followUps: [],
  };
}
