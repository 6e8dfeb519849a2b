/**
 * Live mode's operator connectors: the one seam between this service and a real
 * operator's API. Test mode never uses one (it has the simulator). An operator
 * without a connector answers 400 `operator_not_configured`: no live payment is ever
 * faked.
 *
 * What every connector promises (DESIGN section 12):
 *
 * - **Exactly once towards the operator.** `requestPayment` and `refund` are
 *   idempotent on `attemptId` / `refundId`: a retried job calls them again and the
 *   operator still sees one payment request (MTN: an `X-Reference-Id` derived from
 *   the attempt, "already exists" counting as success; Wave: the `idempotency-key`
 *   header; M-Pesa, which has no idempotency key: a claim per attempt in MongoDB).
 * - **No answer is not a decline.** A 5xx, a timeout or a connection failure throws
 *   `OperatorUnavailableError` (an infrastructure error: the job retries with
 *   backoff). Only the operator's own final answer becomes a decline, mapped to
 *   DESIGN section 7's codes through one table per connector.
 * - **A definite refusal at request time** (a 4xx the operator documents, such as an
 *   unknown payer) throws `OperatorRequestError`, with `declineCode` when it is the
 *   payer's, so the caller can decline at once instead of retrying.
 * - **Secrets stay secret.** Tokens are cached in process memory until shortly
 *   before they expire and refreshed by one process at a time
 *   (worker/operators/token-cache.ts); credentials and full phone numbers never
 *   appear in a thrown message.
 *
 * Refunds (DESIGN.md section 11) go through the same connector: the worker calls
 * `refund` once the refund holds its amount (idempotent on `refundId`: a retried job
 * calls it again), and `refundOutcome` until the answer is final. A refund is only
 * asked of an operator whose catalog entry supports it (common/refund-support.ts).
 * Test mode's implementation is the simulator (./simulator.ts).
 *
 * Every connector lives in its operator's folder (`mtn-momo/`, `mpesa/`, `wave/`:
 * the connector, its wire types and transformers, and the callbacks' checks the api
 * uses); ./registry.ts maps an operator id to its connector and builds one per
 * account (common/operator-accounts.ts). What each operator takes (countries,
 * currencies, bounds, refunds) is the catalog's (common/operator-catalog.ts).
 *
 * DESIGN section 14 adds what every connector must tell apart:
 *
 * - **No record is not pending.** `outcome` and `refundOutcome` answer `not_found`
 *   when the operator's own lookup by our reference shows it holds nothing: only
 *   then may an attempt refused with an unexpected 4xx end as
 *   `operator_request_rejected`, and only then may a refund whose answer was lost be
 *   asked again.
 * - **Throttling is no refusal.** A 429 (the token call's too) is thrown as
 *   `OperatorUnavailableError` with reason `throttled` and its `Retry-After`
 *   (./operator-http.ts): nothing was asked, nothing is declined.
 * - **Withdraw what can be withdrawn.** `withdraw` closes an attempt at the operator
 *   before a cancel, an expiry or a replacement ends it (Wave expires its session);
 *   an operator whose prompt cannot be withdrawn answers `cannot`.
 *
 * How they are wired into the lifecycle (callback routes, polling, where pending
 * attempts live) is written down in docs/payments.md, "Live operators".
 */
import type { Db } from 'mongodb';
import type { Redis } from 'ioredis';
import type { DeclineCode, OperatorAnswer } from '../../common/lifecycle.js';
import type { PayoutFailureCode } from '../../common/payouts.js';

export interface PaymentAttemptRequest {
  /** `pi_…:<attempt>`: unique per attempt, the source of the operator-side reference. */
  attemptId: string;
  paymentIntent: string;
  amount: number;
  currency: string;
  /** E.164, in full: only for the operator's API, never logged. */
  phoneNumber: string;
  returnUrl: string | null;
  otp?: string | null;
  /** Where the operator's per-request callback goes (`{PUBLIC_BASE_URL}/operators/{operator}/…`). */
  callbackUrl: string;
}

/**
 * The operator's answer about an attempt: what decides a live intent
 * (common/lifecycle.ts), or `not_found`: the operator's lookup by our reference
 * shows it holds no such request (it was never created there).
 */
export type OperatorResult = OperatorAnswer | { kind: 'not_found' };

/** What `withdraw` did: closed at the operator, already paid there (its answer), or not possible with this operator. */
export type WithdrawResult = { kind: 'withdrawn' } | { kind: 'paid'; answer: OperatorAnswer } | { kind: 'cannot' };

export interface PaymentRequested {
  operatorReference?: string;
  redirectUrl?: string;
}

export interface RefundRequest {
  refundId: string;
  paymentIntent: string;
  attemptId: string;
  paymentReference: string | null;
  amount: number;
  currency: string;
  phoneNumber: string | null;
  callbackUrl: string;
  reason: string | null;
}

export type RefundResult =
  | { kind: 'succeeded'; operatorReference?: string }
  | { kind: 'failed'; code: DeclineCode; operatorCode?: string }
  | { kind: 'pending'; operatorReference?: string }
  /** The operator holds no refund of ours by this reference (`refundOutcome` only). */
  | { kind: 'not_found' };

/** A payout to a wallet (DESIGN.md section 17), through the operator's disbursement API. */
export interface DisbursementRequest {
  /** `po_…`: the source of the operator-side reference, the same on every retry. */
  payoutId: string;
  amount: number;
  currency: string;
  /** E.164, in full: only for the operator's API, never logged. */
  phoneNumber: string;
  /** Where the operator's per-request callback or result goes (`{PUBLIC_BASE_URL}/operators/{operator}/…`). */
  callbackUrl: string;
}

export type DisbursementResult =
  | { kind: 'paid'; operatorReference?: string }
  | { kind: 'failed'; code: PayoutFailureCode; operatorCode?: string }
  | { kind: 'pending'; operatorReference?: string }
  /** The operator holds no transfer of ours by this reference (`payoutOutcome` only). */
  | { kind: 'not_found' };

export interface OperatorConnector {
  /**
   * Asks the operator to send a payout. Exactly once towards the operator: idempotent
   * on `payoutId` (MTN's `X-Reference-Id`, Wave's `idempotency-key`, a claim per
   * payout for Daraja's B2C). Throws on an infrastructure fault, never a failure.
   */
  payout(request: DisbursementRequest): Promise<DisbursementResult>;
  /** The operator's current answer about a payout, from its own record (status GET, recorded result, Transaction Status), never assumed. */
  payoutOutcome(request: DisbursementRequest, operatorReference?: string): Promise<DisbursementResult>;

  /** Asks the operator for the payment (a push to the payer's phone, a checkout session). */
  requestPayment(request: PaymentAttemptRequest): Promise<PaymentRequested>;
  /** The operator's current answer about an attempt (for callbacks' "look again" and for polling). */
  outcome(attemptId: string, operatorReference?: string): Promise<OperatorResult>;
  /**
   * Asks the operator to give `amount` of the payment back. Idempotent on `refundId`
   * (the operator-side reference): a retried job asks again. Throws on an
   * infrastructure fault (timeout, 5xx), which is retried, never a failure.
   */
  refund(request: RefundRequest): Promise<RefundResult>;
  /**
   * The operator's current answer about a refund asked for with `refund`, read from
   * the operator's own record (MTN's refund GET, Wave's session, Daraja's recorded
   * `Result` or its Transaction Status), never assumed.
   */
  refundOutcome(request: RefundRequest, operatorReference?: string): Promise<RefundResult>;
  /** Closes an attempt the payer has not paid, where the operator allows it (Wave). */
  withdraw(attemptId: string, operatorReference?: string): Promise<WithdrawResult>;
  /** One cheap authenticated call (a token): resolves when the operator answers. Used while the account's breaker is open. */
  probe(): Promise<void>;
}

export type OperatorConnectors = ReadonlyMap<string, OperatorConnector>;

/**
 * The operator answered, and its answer is a refusal of the request itself (bad
 * input, credentials refused): retrying the same request cannot succeed. Not an
 * infrastructure error. `declineCode` is set when the refusal is about the payer
 * (an unknown number), so the attempt can be declined at once.
 */
export class OperatorRequestError extends Error {
  constructor(
    readonly operator: string,
    readonly status: number,
    readonly operatorCode: string | undefined,
    readonly declineCode?: DeclineCode,
    /** False when the request itself never left (its token was refused): the operator certainly created nothing. */
    readonly sent: boolean = true,
  ) {
    super(`${operator} refused the request (${status}${operatorCode ? ` ${operatorCode}` : ''})`);
    this.name = 'OperatorRequestError';
  }
}

/** What the connectors share: injected, never built here. */
export interface ConnectorDeps {
  /** For the token refresh lock only. */
  redis: Redis;
  /** M-Pesa keeps its per-attempt claims and recorded callbacks here. */
  db: Db;
  /** Namespace of Redis keys (`QUEUE_PREFIX`). */
  prefix: string;
  /** The service key of the callback URLs' tokens (common/service-keys.ts, `operator-callbacks`). */
  callbackKey: () => Promise<Buffer>;
  now?: () => number;
}

/** What a connector is built with: the shared deps, the clock and the operator timeout. */
export type BuildDeps = ConnectorDeps & { now: () => number; timeoutMs: number };

/** `{PUBLIC_BASE_URL}/operators/{operator}/{path}`: where an operator's callbacks arrive. */
export function operatorCallbackUrl(publicBaseUrl: string, operator: string, path: string): string {
  return `${publicBaseUrl.replace(/\/+$/, '')}/operators/${operator}/${path}`;
}

