/**
 * Operator discrepancies (DESIGN section 16, "Reconciliation"): a payment the
 * operator took that this service did not show as succeeded, found by the
 * reconciliation job (worker/reconcile/). The stored shapes and the presenter, which
 * the api (lists, retrieves) and the worker (the `operator_discrepancy.created`
 * event) share.
 */
import type { PaymentIntentStatus } from './lifecycle.js';

/** How the operator's record showed the payment. */
export type DiscrepancyFinding = 'status_lookup' | 'transaction_list';

/**
 * What became of it: `pending` until the job acts; `payment_applied` (the intent
 * could still take it, and succeeded), `refunded` (a `late_payment` refund gives it
 * back), or `manual` (the operator cannot refund through this service: the merchant
 * must).
 */
export const DISCREPANCY_RESOLUTIONS = ['pending', 'payment_applied', 'refunded', 'manual'] as const;
export type DiscrepancyResolution = (typeof DISCREPANCY_RESOLUTIONS)[number];

export interface OperatorDiscrepancyDoc {
  _id: string;
  project: string;
  livemode: boolean;
  /** The operator transaction's identity (`discrepancyKey`): one discrepancy per key. */
  key: string;
  operator: string;
  /** The operator account that holds it (null in test mode: the simulator). */
  account: string | null;
  payment_intent: string;
  attempt: number;
  amount: number;
  currency: string;
  operator_reference: string | null;
  found_by: DiscrepancyFinding;
  /** The intent's status when the payment was found. */
  intent_status: PaymentIntentStatus;
  resolution: DiscrepancyResolution;
  /** The `late_payment` refund's id, chosen when the discrepancy was recorded (used only if it is refunded). */
  refund_id: string;
  /** The created event's id, chosen with the discrepancy. */
  event_id: string;
  /** Unix seconds. */
  created: number;
}

/** Where a discrepancy's key points: its id (`_id` is the key), so a second finder records nothing new. */
export interface DiscrepancyKeyDoc {
  _id: string;
  discrepancy: string;
}

/**
 * The identity of an operator transaction: the account (or the simulator) and the
 * attempt it paid. An attempt is paid at most once at an operator (its reference is
 * the attempt's), so its status lookup and the operator's transaction list name the
 * same payment.
 */
export function discrepancyKey(livemode: boolean, account: string | null, attemptId: string): string {
  return `${livemode ? 'live' : 'test'}:${account ?? 'simulator'}:${attemptId}`;
}

export function presentOperatorDiscrepancy(doc: Omit<OperatorDiscrepancyDoc, 'key' | 'event_id'>) {
  return {
    id: doc._id,
    object: 'operator_discrepancy' as const,
    operator: doc.operator,
    payment_intent: doc.payment_intent,
    attempt: doc.attempt,
    amount: doc.amount,
    currency: doc.currency,
    operator_reference: doc.operator_reference,
    found_by: doc.found_by,
    intent_status: doc.intent_status,
    resolution: doc.resolution,
    refund: doc.resolution === 'refunded' ? doc.refund_id : null,
    created: doc.created,
    livemode: doc.livemode,
  };
}

/** A payment the test-mode simulator took after its attempt ended (a number ending `030`): its own transaction list. */
export interface SimulatorPaymentDoc {
  /** The attempt id, `pi_…:<attempt>`. */
  _id: string;
  project: string;
  livemode: false;
  payment_intent: string;
  attempt: number;
  operator: string;
  amount: number;
  currency: string;
  phone_masked: string;
  /** Epoch ms: when the simulated operator took it. */
  paid_ms: number;
}

/** What one reconciliation run did (worker/reconcile/run.ts). */
export interface ReconcileResult {
  /** Payments in the operator's record that were compared. */
  compared: number;
  /** Attempts looked up one by one. */
  lookedUp: number;
  /** Discrepancies recorded by this run (a second run records none of the same). */
  recorded: number;
  applied: number;
  refunded: number;
  /** Left for a later run (another attempt in flight, an expiry due), or for the merchant. */
  pending: number;
  /** Why the operator's record could not be read in full, if it could not. */
  unavailable?: string;
}
