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
 * Register a connector in `liveConnectors()` below, keyed by operator name, and
 * make `liveOperatorConfigured` (common/operator-status.ts) answer true for the same
 * operators, so that `GET /v1/operators` reports them. What each operator takes
 * (countries, currencies, bounds, refunds) is the catalog's (common/operator-catalog.ts).
 *
 * How they are wired into the lifecycle (callback routes, polling, where pending
 * attempts live) is written down in docs/payments.md, "Live operators".
 */
import type { Db } from 'mongodb';
import type { Redis } from 'ioredis';
import type { LiveOperatorsConfig } from '../../common/config.js';
import type { DeclineCode, OperatorAnswer } from '../../common/lifecycle.js';
import { OperatorUnavailableError } from '../../common/infra-errors.js';
import { recordOperatorCall } from '../../common/operator-status.js';
import { mtnMomoConnector } from './mtn-momo.js';
import { mpesaConnector } from './mpesa.js';
import { waveConnector } from './wave.js';

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

/** The operator's answer about an attempt: what decides a live intent (common/lifecycle.ts). */
export type OperatorResult = OperatorAnswer;

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
  | { kind: 'pending'; operatorReference?: string };

export interface OperatorConnector {
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
  /** The operator's current answer about a refund asked for with `refund`. */
  refundOutcome(refundId: string, operatorReference?: string): Promise<RefundResult>;
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
  now?: () => number;
}

/** `{PUBLIC_BASE_URL}/operators/{operator}/{path}`: where an operator's callbacks arrive. */
export function operatorCallbackUrl(publicBaseUrl: string, operator: string, path: string): string {
  return `${publicBaseUrl.replace(/\/+$/, '')}/operators/${operator}/${path}`;
}

/** The live connectors of this deployment: one per operator whose config group is complete. */
export function liveConnectors(config: { liveOperators: LiveOperatorsConfig }, deps: ConnectorDeps): OperatorConnectors {
  const { mtnMomo, mpesa, wave, timeoutMs } = config.liveOperators;
  const shared = { ...deps, now: deps.now ?? Date.now, timeoutMs };
  const connectors = new Map<string, OperatorConnector>();
  if (mtnMomo) connectors.set('mtn_momo', recordingHealth('mtn_momo', mtnMomoConnector(mtnMomo, shared), shared));
  if (mpesa) connectors.set('mpesa', recordingHealth('mpesa', mpesaConnector(mpesa, shared), shared));
  if (wave) connectors.set('wave', recordingHealth('wave', waveConnector(wave, shared), shared));
  return connectors;
}

/**
 * Counts each call's fate for `GET /v1/operators`' `degraded` (common/operator-status.ts):
 * answered, or no answer (`OperatorUnavailableError`). Counts only, best effort.
 */
function recordingHealth(operator: string, connector: OperatorConnector, deps: ConnectorDeps & { now: () => number }): OperatorConnector {
  const counted = <A extends unknown[], R>(call: (...args: A) => Promise<R>) => async (...args: A): Promise<R> => {
    try {
      const result = await call(...args);
      void recordOperatorCall(deps.redis, deps.prefix, operator, true, deps.now());
      return result;
    } catch (err) {
      void recordOperatorCall(deps.redis, deps.prefix, operator, !(err instanceof OperatorUnavailableError), deps.now());
      throw err;
    }
  };
  return {
    requestPayment: counted((request) => connector.requestPayment(request)),
    outcome: counted((attemptId, reference) => connector.outcome(attemptId, reference)),
    refund: counted((request) => connector.refund(request)),
    refundOutcome: counted((refundId, reference) => connector.refundOutcome(refundId, reference)),
  };
}
