/**
 * Wave Checkout API: a checkout session per attempt, the payer redirected to its
 * `wave_launch_url`, the session GET for the outcome, and the session's refund.
 * Wave's signed webhooks are checked by `verifyWaveSignature`
 * (./callbacks.ts), which the api's webhook route uses.
 *
 * Sources followed:
 * - Wave's Checkout API reference (docs.wave.com/checkout): `POST
 *   /v1/checkout/sessions`, `GET /v1/checkout/sessions/:id`, `GET
 *   /v1/checkout/sessions/search?client_reference=…`, `POST
 *   /v1/checkout/sessions/:id/refund`; Bearer API keys; the error body `{code,
 *   message}` with codes such as `missing-auth-header`, `invalid-auth`,
 *   `api-key-revoked`, `request-validation-error`, `checkout-session-not-found`,
 *   `checkout-refund-failed`; the session's `checkout_status` (open, complete,
 *   expired), `payment_status` (processing, cancelled, succeeded) and
 *   `last_payment_error.code` (blocked-account, cross-border-payment-not-allowed,
 *   customer-age-restricted, insufficient-funds, kyb-limits-exceeded,
 *   payer-mobile-mismatch, payment-failure).
 * - Wave's webhook guide (docs.wave.com/webhook): the "signing secret" strategy's
 *   `Wave-Signature: t=<timestamp>,v1=<hex>[,v1=<hex>…]` header, the HMAC-SHA256 of
 *   the timestamp followed directly by the raw body, keyed with the secret.
 * - Open-source clients for the shapes: 0xc007b/wave-api-client (TypeScript), and
 *   the PHP verification routine Wave's guide shows, as copied in public projects.
 *
 * Ambiguities, and the choice made:
 * - The signed string: Wave's example concatenates timestamp and body with no
 *   separator (unlike Stripe's `t.body`); followed as written.
 * - A replay window is not stated: signatures older (or newer) than 5 minutes are
 *   refused, as Stripe and Standard Webhooks do.
 * - `success_url` and `error_url` are required: both are the confirm's `return_url`,
 *   or, when the merchant gave none, the request's `callbackUrl` (a page of ours).
 * - A failed payment leaves the session `open` (the payer may try again) with
 *   `last_payment_error` set: that is still pending; only `expired` is final, its
 *   decline taken from `last_payment_error` when there is one, else
 *   `approval_timeout`.
 * - Refunds: the reference shows no refund object and no partial amount; the whole
 *   session is refunded and a 200 means done. The `idempotency-key` header is sent
 *   with the refund too (the refund id), so a retry replays the first answer; where
 *   Wave would not honour it, a retried refund of a refunded session would answer
 *   `checkout-refund-failed`, which is why `refundOutcome` asks the same request
 *   again rather than reading a status.
 * - Amounts are strings in major units; XOF has no decimals.
 * - `restrict_payer_mobile` is not sent: as Wave's default, the payer may pay from
 *   another Wave account than the confirm's phone number (the number is for the
 *   merchant's records). Sending it would add `payer-mobile-mismatch` declines.
 */
import type { WaveConfig } from '../../../common/config.js';
import { majorUnits } from '../amounts.js';
import {
  OperatorRequestError,
  type BuildDeps,
  type OperatorConnector,
  type OperatorResult,
  type PaymentAttemptRequest,
  type PaymentRequested,
  type RefundRequest,
  type RefundResult,
  type WithdrawResult,
  type DisbursementRequest,
  type DisbursementResult,
} from '../connector.js';
import { callOperator, field, text, type OperatorResponse } from '../operator-http.js';
import { wavePayoutOutcome, waveRefundListed, waveSessionOutcome } from './wire.js';

const OPERATOR = 'wave';

export function waveConnector(config: WaveConfig, deps: BuildDeps): OperatorConnector {
  function call(method: 'GET' | 'POST', path: string, body?: unknown, idempotencyKey?: string): Promise<OperatorResponse> {
    return callOperator({
      operator: OPERATOR,
      method,
      url: `${config.baseUrl}${path}`,
      headers: { authorization: `Bearer ${config.apiKey}`, ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}) },
      body,
      timeoutMs: deps.timeoutMs,
    });
  }

  const refused = (answer: OperatorResponse) => new OperatorRequestError(OPERATOR, answer.status, text(answer.body, 'code'));

  /** The session of an attempt: by its id when known, else found by our `client_reference`. */
  async function session(attemptId: string, sessionId?: string): Promise<unknown> {
    if (sessionId) {
      const answer = await call('GET', `/v1/checkout/sessions/${encodeURIComponent(sessionId)}`);
      if (answer.status === 404) return null;
      if (answer.status !== 200) throw refused(answer);
      return answer.body;
    }
    const answer = await call('GET', `/v1/checkout/sessions/search?client_reference=${encodeURIComponent(attemptId)}`);
    if (answer.status !== 200) throw refused(answer);
    const found = field(answer.body, 'result');
    return Array.isArray(found) && found.length > 0 ? found[0] : null;
  }

  /**
   * Whether Wave's Balance API lists a refund of the session, today or yesterday (UTC):
   * the operator's own record of money gone back, which a lost answer cannot hide.
   */
  async function refundListed(sessionId: string): Promise<boolean> {
    for (const daysAgo of [0, 1]) {
      const date = new Date(deps.now() - daysAgo * 86_400_000).toISOString().slice(0, 10);
      const answer = await call('GET', `/v1/transactions?date=${date}`);
      if (answer.status !== 200) throw refused(answer);
      if (waveRefundListed(field(answer.body, 'items'), sessionId)) return true;
    }
    return false;
  }

  /**
   * Refunds the session under the refund's idempotency key. A refusal is read against
   * Wave's record: a retry whose first try refunded (its answer lost, and the key not
   * honoured) finds the refund in the transaction list, and succeeds; only a session
   * with no refund listed makes it a failure.
   */
  async function refundSession(refundId: string, sessionId: string): Promise<RefundResult> {
    const answer = await call('POST', `/v1/checkout/sessions/${encodeURIComponent(sessionId)}/refund`, undefined, refundId);
    if (answer.status === 200) return { kind: 'succeeded', operatorReference: sessionId };
    const code = text(answer.body, 'code');
    if (code === 'checkout-session-not-found') return { kind: 'failed', code: 'operator_request_rejected', operatorCode: code };
    if (code !== 'checkout-refund-failed') throw refused(answer);
    if (await refundListed(sessionId)) return { kind: 'succeeded', operatorReference: sessionId };
    return { kind: 'failed', code: 'generic_decline', operatorCode: code };
  }

  return {
    async requestPayment(request: PaymentAttemptRequest): Promise<PaymentRequested> {
      const back = request.returnUrl ?? request.callbackUrl;
      const answer = await call('POST', '/v1/checkout/sessions', {
        amount: majorUnits(request.amount, request.currency),
        currency: request.currency.toUpperCase(),
        success_url: back,
        error_url: back,
        client_reference: request.attemptId,
      }, request.attemptId);
      const id = text(answer.body, 'id');
      const launch = text(answer.body, 'wave_launch_url');
      if (answer.status !== 200 || !id || !launch) throw refused(answer);
      return { operatorReference: id, redirectUrl: launch };
    },

    async outcome(attemptId: string, operatorReference?: string): Promise<OperatorResult> {
      const found = await session(attemptId, operatorReference);
      return found ? waveSessionOutcome(found) : { kind: 'not_found' };
    },

    async refund(request: RefundRequest): Promise<RefundResult> {
      const sessionId = request.paymentReference ?? text(await session(request.attemptId), 'id');
      if (!sessionId) return { kind: 'failed', code: 'operator_request_rejected', operatorCode: 'checkout-session-not-found' };
      return refundSession(request.refundId, sessionId);
    },

    /** No refund object to read: the session says whether its money went back; else the same request, under the same key. */
    async refundOutcome(request: RefundRequest, operatorReference?: string): Promise<RefundResult> {
      const sessionId = operatorReference ?? request.paymentReference ?? text(await session(request.attemptId), 'id');
      if (!sessionId) return { kind: 'not_found' };
      if (await refundListed(sessionId)) return { kind: 'succeeded', operatorReference: sessionId };
      return refundSession(request.refundId, sessionId);
    },

    /**
     * Expires the attempt's session (`POST /v1/checkout/sessions/:id/expire`), so its
     * `wave_launch_url` can no longer be paid. A session Wave will not expire is read:
     * paid, it is the attempt's answer; ended otherwise, there is nothing to withdraw.
     */
    async withdraw(attemptId: string, operatorReference?: string): Promise<WithdrawResult> {
      const sessionId = operatorReference ?? text(await session(attemptId), 'id');
      if (!sessionId) return { kind: 'withdrawn' };
      const answer = await call('POST', `/v1/checkout/sessions/${encodeURIComponent(sessionId)}/expire`);
      if (answer.status === 200) return { kind: 'withdrawn' };
      if (answer.status !== 200 && answer.status !== 404 && answer.status !== 409 && answer.status !== 400) throw refused(answer);
      const found = await session(attemptId, sessionId);
      const result = found ? waveSessionOutcome(found) : ({ kind: 'not_found' } as const);
      if (result.kind === 'succeeded') return { kind: 'paid', answer: result };
      if (result.kind === 'pending') throw refused(answer);
      return { kind: 'withdrawn' };
    },

    /**
     * Payout API `POST /v1/payout` under the payout's `idempotency-key` (a retry gets
     * the first answer). A refusal is read against Wave's record (the search by our
     * `client_reference`): only a payout Wave does not hold fails.
     */
    async payout(request: DisbursementRequest): Promise<DisbursementResult> {
      const answer = await call('POST', '/v1/payout', {
        currency: request.currency.toUpperCase(),
        receive_amount: majorUnits(request.amount, request.currency),
        mobile: request.phoneNumber,
        client_reference: request.payoutId,
        payment_reason: `Payout ${request.payoutId}`.slice(0, 40),
      }, request.payoutId);
      if (answer.status === 200 && text(answer.body, 'id')) return wavePayoutOutcome(answer.body);
      const recorded = await this.payoutOutcome(request);
      if (recorded.kind !== 'not_found') return recorded;
      const code = text(answer.body, 'code') ?? String(answer.status);
      return { kind: 'failed', code: code === 'recipient-not-found' ? 'recipient_not_found' : 'operator_request_rejected', operatorCode: code };
    },

    async payoutOutcome(request: DisbursementRequest, operatorReference?: string): Promise<DisbursementResult> {
      if (operatorReference) {
        const answer = await call('GET', `/v1/payout/${encodeURIComponent(operatorReference)}`);
        if (answer.status === 200) return wavePayoutOutcome(answer.body);
        if (answer.status !== 404) throw refused(answer);
      }
      const answer = await call('GET', `/v1/payouts/search?client_reference=${encodeURIComponent(request.payoutId)}`);
      if (answer.status !== 200) throw refused(answer);
      const found = field(answer.body, 'result');
      return Array.isArray(found) && found.length > 0 ? wavePayoutOutcome(found[0]) : { kind: 'not_found' };
    },

    async probe(): Promise<void> {
      await session('probe:0');
    },
  };
}
