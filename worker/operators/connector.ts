/**
 * Live mode's operator connectors: the one seam between this service and a real
 * operator's API (MTN MoMo Collections, M-Pesa Daraja, Airtel Money, Moov, Wave
 * Checkout, Orange Money). None ships with the service, and test mode never uses
 * one (it has the simulator, worker/operators/simulator.ts documents its numbers).
 * A live confirm for an operator without a connector answers 400
 * `operator_not_configured` and changes nothing: no live payment is ever faked.
 *
 * How a connector takes part in a payment:
 *
 * 1. A live confirm moves the intent to `requires_action` (or refuses) as in test
 *    mode; the worker then calls `requestPayment` with the attempt. The call must be
 *    idempotent on `attemptId` (operators take a reference: MTN's X-Reference-Id,
 *    M-Pesa's AccountReference): a retried job calls it again.
 * 2. The operator answers later, by callback or by polling. The connector's
 *    callback route (or poller) turns each answer into an `intents` job,
 *    `payment_intent.operator_outcome.v1` with `{paymentIntent, project, livemode,
 *    attempt, step}`: `payer` once the payer approved or refused, `settle` with the
 *    final result. The job re-checks the intent's status and attempt, so a late or
 *    repeated callback changes nothing.
 * 3. `outcome` maps the operator's own result to this service's: success, or one of
 *    the normalised decline codes (common/lifecycle.ts, DECLINE_CODES).
 *
 * Refunds (DESIGN.md section 11) go through the same connector: the worker calls
 * `refund` once the refund holds its amount (idempotent on `refundId`: a retried job
 * calls it again), and `refundOutcome` until the answer is final. A refund is only
 * asked of an operator whose catalog entry supports it (common/refund-support.ts).
 * Test mode's implementation is the simulator (./simulator.ts).
 *
 * Register a connector in `liveConnectors()` below, keyed by operator name, and
 * make `liveOperatorConfigured` (common/operator-status.ts) answer true for the same
 * operators, so that `GET /v1/operators` reports them. What each operator takes
 * (countries, currencies, bounds, refunds) is the catalog's (common/operator-catalog.ts).
 */
import type { DeclineCode } from '../../common/lifecycle.js';

export interface PaymentAttemptRequest {
  /** `pi_…:<attempt>`: unique per attempt, the operator-side reference. */
  attemptId: string;
  paymentIntent: string;
  amount: number;
  currency: string;
  /** E.164, in full: only for the operator's API, never logged. */
  phoneNumber: string;
  returnUrl: string | null;
}

export type OperatorResult = { kind: 'succeeded' } | { kind: 'declined'; code: DeclineCode } | { kind: 'pending' };

export interface RefundRequest { refundId: string; paymentIntent: string; attemptId: string; paymentReference: string | null; amount: number; currency: string; phoneNumber: string | null; callbackUrl: string; reason: string | null; }
export type RefundResult = { kind: 'succeeded'; operatorReference?: string } | { kind: 'failed'; code: DeclineCode; operatorCode?: string } | { kind: 'pending'; operatorReference?: string };

export interface OperatorConnector {
  /** Asks the operator for the payment (a push to the payer's phone, a checkout session, an OTP check). */
  requestPayment(request: PaymentAttemptRequest): Promise<void>;
  /** The operator's current answer about an attempt (for polling, and for the `settle` step). */
  outcome(attemptId: string): Promise<OperatorResult>;
  /**
   * Asks the operator to give `amount` of the payment back. Idempotent on `refundId`
   * (the operator-side reference): a retried job asks again. Throws on an
   * infrastructure fault (timeout, 5xx), which is retried, never a failure.
   */
  refund(request: RefundRequest): Promise<RefundResult>;
  /** The operator's current answer about a refund asked for with `refund`. */
  refundOutcome(refundId: string, operatorReference?: string): Promise<RefundResult>;
}

export type OperatorConnectors = ReadonlyMap<string, OperatorConnector>;

/** The live connectors of this deployment: none yet. */
export function liveConnectors(): OperatorConnectors {
  return new Map();
}
