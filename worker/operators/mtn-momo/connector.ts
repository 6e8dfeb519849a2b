/**
 * MTN MoMo Open API: Collection `requesttopay` for payments, Disbursement `refund`
 * for refunds.
 *
 * Sources followed:
 * - MTN MoMo developer portal, API documentation and "Common Error Codes"
 *   (momodeveloper.mtn.com/api-documentation, /content/html_widgets/3fbhs.html):
 *   409 `RESOURCE_ALREADY_EXIST` for a reused X-Reference-Id, 401 "Access denied due
 *   to invalid subscription key", 404 `RESOURCE_NOT_FOUND` from the status GET, 400
 *   when X-Reference-Id is not a UUID version 4.
 * - The Collection and Disbursement swagger (token, requesttopay, refund and their
 *   status GETs; `ErrorReason` codes such as PAYER_NOT_FOUND, NOT_ENOUGH_FUNDS,
 *   APPROVAL_REJECTED, EXPIRED, INTERNAL_PROCESSING_ERROR, SERVICE_UNAVAILABLE).
 * - Widely used clients for the shapes the portal leaves implicit: sparkplug/momoapi
 *   (node, python, ruby), regisbamba/momoapi-java, cynojine/Mtn-MoMo-php-Sdk.
 *
 * Ambiguities, and the choice made:
 * - `reason` on a FAILED transfer is a string in the sandbox ("APPROVAL_REJECTED")
 *   and an `ErrorReason` object `{code, message}` in the swagger: both are read.
 * - The sandbox also shows statuses REJECTED, TIMEOUT and ONGOING besides PENDING,
 *   SUCCESSFUL and FAILED: REJECTED and TIMEOUT are final declines, anything else
 *   not final is pending.
 * - A 404 from the status GET of a reference we sent: the request may not have
 *   reached MTN yet (our POST timed out before MTN stored it). It is read as pending;
 *   the attempt's window closes it if MTN never knew it.
 * - Refunds: the portal shows `/disbursement/v1_0/refund` and `/v2_0/refund` (the
 *   latter adds nothing we need); v1_0 is used. `referenceIdToRefund` is the
 *   requesttopay's X-Reference-Id, derived again from the attempt id.
 * - The token answer's `expires_in` is in seconds (3600); the cache refreshes a
 *   minute early.
 * - The amount is the major unit as a string ("1500"); the swagger types it as a
 *   string without saying whether decimals are allowed; two-decimal currencies send
 *   "12.50".
 *
 * Idempotency: the X-Reference-Id is a UUID derived from the attempt id (SHA-256,
 * shaped as version 4), so a retried job sends the same one, and MTN's 409 "already
 * exists" is the proof that the first request was stored: success.
 */
import type { MtnMomoConfig, MtnMomoProductConfig } from '../../../common/config.js';
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
  type DisbursementRequest,
  type DisbursementResult,
} from '../connector.js';
import { callOperator, field, text, type OperatorResponse } from '../operator-http.js';
import { TokenCache } from '../token-cache.js';
import { MTN_REASONS, msisdn, mtnDecline, mtnPayoutFailure, mtnReferenceId } from './wire.js';

const OPERATOR = 'mtn_momo';

type Product = 'collection' | 'disbursement';

export function mtnMomoConnector(config: MtnMomoConfig, deps: BuildDeps): OperatorConnector {
  const tokens: Record<Product, TokenCache> = {
    collection: tokenCache('collection', config.collection),
    disbursement: tokenCache('disbursement', config.disbursement),
  };

  function tokenCache(product: Product, credentials: MtnMomoProductConfig): TokenCache {
    return new TokenCache({
      redis: deps.redis,
      lockKey: `${deps.prefix}:operator-token-lock:mtn_momo:${config.targetEnvironment}:${product}`,
      now: deps.now,
      marginMs: 60_000,
      lockWaitMs: deps.timeoutMs + 5_000,
      issue: async () => {
        const basic = Buffer.from(`${credentials.userId}:${credentials.apiKey}`).toString('base64');
        const answer = await callOperator({
          operator: OPERATOR,
          method: 'POST',
          url: `${config.baseUrl}/${product}/token/`,
          headers: { authorization: `Basic ${basic}`, 'ocp-apim-subscription-key': credentials.subscriptionKey },
          timeoutMs: deps.timeoutMs,
        });
        const token = text(answer.body, 'access_token');
        // A 429 or a 5xx was thrown as no answer (operator-http.ts); a refusal here means nothing was sent.
        if (answer.status !== 200 || !token) throw new OperatorRequestError(OPERATOR, answer.status, `${product}_token_refused`, undefined, false);
        return { token, expiresInS: Number(field(answer.body, 'expires_in') ?? 3600) || 3600 };
      },
    });
  }

  /** One call with the product's token; a 401 drops the token and tries once more with a fresh one. */
  async function call(product: Product, method: 'GET' | 'POST', path: string, extra: Record<string, string>, body?: unknown): Promise<OperatorResponse> {
    const credentials = config[product];
    for (let round = 0; ; round++) {
      const token = await tokens[product].get();
      const answer = await callOperator({
        operator: OPERATOR,
        method,
        url: `${config.baseUrl}${path}`,
        headers: {
          authorization: `Bearer ${token}`,
          'x-target-environment': config.targetEnvironment,
          'ocp-apim-subscription-key': credentials.subscriptionKey,
          ...extra,
        },
        body,
        timeoutMs: deps.timeoutMs,
      });
      if (answer.status !== 401 || round > 0) return answer;
      tokens[product].invalidate(token);
    }
  }

  function refused(answer: OperatorResponse): OperatorRequestError {
    const code = text(answer.body, 'code');
    return new OperatorRequestError(OPERATOR, answer.status, code, code === 'PAYER_NOT_FOUND' ? 'payer_not_found' : undefined);
  }

  /** The status GET of a request-to-pay or a refund, read into its parts; null when MTN holds no such reference (404). */
  async function status(product: Product, path: string): Promise<{ status: string; reason: unknown; transactionId?: string } | null> {
    const answer = await call(product, 'GET', path, {});
    if (answer.status === 404) return null;
    if (answer.status !== 200) throw refused(answer);
    return { status: text(answer.body, 'status') ?? '', reason: field(answer.body, 'reason'), transactionId: text(answer.body, 'financialTransactionId') };
  }

  return {
    async requestPayment(request: PaymentAttemptRequest): Promise<PaymentRequested> {
      const referenceId = mtnReferenceId(request.attemptId);
      const answer = await call('collection', 'POST', '/collection/v1_0/requesttopay', {
        'x-reference-id': referenceId,
        'x-callback-url': request.callbackUrl,
      }, {
        amount: majorUnits(request.amount, request.currency),
        currency: request.currency.toUpperCase(),
        externalId: request.attemptId,
        payer: { partyIdType: 'MSISDN', partyId: msisdn(request.phoneNumber) },
        payerMessage: `Payment ${request.paymentIntent}`,
        payeeNote: request.paymentIntent,
      });
      // 409: this reference was stored by an earlier try of this same attempt.
      if (answer.status === 202 || answer.status === 409) return { operatorReference: referenceId };
      throw refused(answer);
    },

    async outcome(attemptId: string, operatorReference?: string): Promise<OperatorResult> {
      const referenceId = operatorReference ?? mtnReferenceId(attemptId);
      const found = await status('collection', `/collection/v1_0/requesttopay/${encodeURIComponent(referenceId)}`);
      if (!found) return { kind: 'not_found' };
      switch (found.status) {
        case 'SUCCESSFUL':
          return { kind: 'succeeded', ...(found.transactionId ? { operatorReference: found.transactionId } : {}) };
        case 'FAILED':
          return { kind: 'declined', ...mtnDecline(found.reason) };
        case 'REJECTED':
          return { kind: 'declined', code: 'payer_declined', operatorCode: 'REJECTED' };
        case 'TIMEOUT':
          return { kind: 'declined', code: 'approval_timeout', operatorCode: 'TIMEOUT' };
        default:
          return { kind: 'pending' };
      }
    },

    async refund(request: RefundRequest): Promise<RefundResult> {
      const referenceId = mtnReferenceId(`refund:${request.refundId}`);
      const answer = await call('disbursement', 'POST', '/disbursement/v1_0/refund', {
        'x-reference-id': referenceId,
        'x-callback-url': request.callbackUrl,
      }, {
        amount: majorUnits(request.amount, request.currency),
        currency: request.currency.toUpperCase(),
        externalId: request.refundId,
        payerMessage: `Refund ${request.paymentIntent}`,
        payeeNote: request.refundId,
        referenceIdToRefund: mtnReferenceId(request.attemptId),
      });
      if (answer.status === 202 || answer.status === 409) return { kind: 'pending', operatorReference: referenceId };
      // Refused (the payment unknown to MTN, the amount too large, a malformed request):
      // final only once MTN's own record shows it created nothing by this reference.
      const code = text(answer.body, 'code');
      const recorded = await this.refundOutcome(request, referenceId);
      if (recorded.kind !== 'not_found') return recorded;
      return { kind: 'failed', code: code === 'PAYER_NOT_FOUND' || code === 'NOT_ENOUGH_FUNDS' ? MTN_REASONS[code]! : 'operator_request_rejected', operatorCode: code ?? String(answer.status) };
    },

    async refundOutcome(request: RefundRequest, operatorReference?: string): Promise<RefundResult> {
      const referenceId = operatorReference ?? mtnReferenceId(`refund:${request.refundId}`);
      const found = await status('disbursement', `/disbursement/v1_0/refund/${encodeURIComponent(referenceId)}`);
      if (!found) return { kind: 'not_found' };
      if (found.status === 'SUCCESSFUL') return { kind: 'succeeded', operatorReference: found.transactionId ?? referenceId };
      if (found.status === 'FAILED') return { kind: 'failed', ...mtnDecline(found.reason) };
      return { kind: 'pending', operatorReference: referenceId };
    },

    /**
     * Disbursement `transfer` (DESIGN section 17): the X-Reference-Id is derived from
     * the payout id, so a retry sends the same one and MTN's 409 proves the first was
     * stored. A refusal is final only once MTN's record shows no transfer by it.
     */
    async payout(request: DisbursementRequest): Promise<DisbursementResult> {
      const referenceId = mtnReferenceId(`payout:${request.payoutId}`);
      const answer = await call('disbursement', 'POST', '/disbursement/v1_0/transfer', {
        'x-reference-id': referenceId,
        'x-callback-url': request.callbackUrl,
      }, {
        amount: majorUnits(request.amount, request.currency),
        currency: request.currency.toUpperCase(),
        externalId: request.payoutId,
        payee: { partyIdType: 'MSISDN', partyId: msisdn(request.phoneNumber) },
        payerMessage: `Payout ${request.payoutId}`,
        payeeNote: request.payoutId,
      });
      if (answer.status === 202 || answer.status === 409) return { kind: 'pending', operatorReference: referenceId };
      const recorded = await this.payoutOutcome(request, referenceId);
      if (recorded.kind !== 'not_found') return recorded;
      const code = text(answer.body, 'code');
      return { kind: 'failed', code: code === 'PAYEE_NOT_FOUND' ? 'recipient_not_found' : 'operator_request_rejected', operatorCode: code ?? String(answer.status) };
    },

    async payoutOutcome(request: DisbursementRequest, operatorReference?: string): Promise<DisbursementResult> {
      const referenceId = operatorReference ?? mtnReferenceId(`payout:${request.payoutId}`);
      const found = await status('disbursement', `/disbursement/v1_0/transfer/${encodeURIComponent(referenceId)}`);
      if (!found) return { kind: 'not_found' };
      if (found.status === 'SUCCESSFUL') return { kind: 'paid', operatorReference: found.transactionId ?? referenceId };
      if (found.status === 'FAILED') return { kind: 'failed', ...mtnPayoutFailure(found.reason) };
      return { kind: 'pending', operatorReference: referenceId };
    },

    /** An MTN prompt on the payer's phone cannot be withdrawn: only MTN's own answer ends it. */
    async withdraw() {
      return { kind: 'cannot' as const };
    },

    /** A status GET of a reference nobody made: any answer (404) is an answer. */
    async probe(): Promise<void> {
      await status('collection', `/collection/v1_0/requesttopay/${mtnReferenceId('probe')}`);
    },
  };
}
