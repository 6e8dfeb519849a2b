/**
 * Safaricom Daraja: M-Pesa Express (the STK push and its query) for payments, the
 * Reversal API for refunds (full only).
 *
 * Sources followed:
 * - Daraja's API pages (developer.safaricom.co.ke/apis: Authorization, M-Pesa
 *   Express Simulate and Query, Reversals) and its error-code list: the OAuth GET
 *   `/oauth/v1/generate?grant_type=client_credentials` (Basic key:secret, answering
 *   `expires_in` as a string of seconds), the STK push body (`Password` =
 *   base64(short code + passkey + timestamp), `Timestamp` YYYYMMDDHHmmss), the query,
 *   `ResultCode`s (0, 1, 1032, 1037, 2001, …) and the reversal's asynchronous
 *   `Result` at `ResultURL`.
 * - Widely used clients for the shapes: the `mpesa` crates (Rust, docs.rs), the
 *   dart_mpesa and mpesa-sdk-kotlin packages, mpesarb (Ruby).
 *
 * Ambiguities, and the choice made:
 * - The STK query answers a push still waiting for the payer with HTTP 500,
 *   `errorCode` 500.001.1001, "The transaction is being processed": that one 500 is
 *   read as pending; every other 5xx is the operator unavailable.
 * - A wrong `Password` is also a 500 (500.001.1001 "Wrong credentials"): it is an
 *   infrastructure fault here (retried until the attempt's window closes), since no
 *   4xx distinguishes it; the log shows it.
 * - An invalid token: Daraja answers 404.001.03 "Invalid Access Token" (HTTP 404 in
 *   the published examples, 401 reported by some clients); both drop the token.
 * - `Timestamp` is East Africa Time (UTC+3), as Safaricom's portal and most
 *   clients send it; the Password is computed from the same string.
 * - `TransactionType` CustomerPayBillOnline with `PartyB` = the short code: a till
 *   number (CustomerBuyGoodsOnline, a different PartyB) is not covered by the config
 *   group of DESIGN section 12.
 * - `AccountReference` is at most 12 characters (the intent id's last 12),
 *   `TransactionDesc` at most 13.
 * - The STK query does not give the M-Pesa receipt (`MpesaReceiptNumber`) that a
 *   reversal needs; only the STK callback carries it. See "Callbacks" below.
 * - `RecieverIdentifierType` (Daraja's spelling) is "11" for a reversal, as the
 *   portal's sample sends; `ReceiverParty` is the short code.
 * - Daraja's guidance warns against URLs containing words such as "mpesa" or
 *   "safaricom" in `CallBackURL`; DESIGN section 12's `/operators/mpesa/…` does, and
 *   the lead should confirm it with the sandbox (docs/payments.md, "Live operators").
 *
 * Idempotency (Daraja has no idempotency key): before a push or a reversal, a claim
 * for the attempt (or refund) is inserted in MongoDB (`mpesa_requests`, _id
 * `stk:<attemptId>` or `reversal:<refundId>`). A retried job that finds the claim
 * with Daraja's id reuses it and sends nothing; one that finds a claim without it
 * knows an earlier try may have reached Safaricom: while that try could still be in
 * flight it waits (a retryable fault), after that it never sends again (the payer
 * is asked at most once), and the attempt's fate is then read from a callback that
 * names it (below), or ends with the attempt's window. A try that Daraja answered
 * with a refusal (a 4xx or 5xx), or that never left (no token, a refused
 * connection), frees the claim.
 *
 * Callbacks: Daraja's callbacks are unsigned. Each URL we give carries the attempt
 * (or refund) id and a token, HMAC-SHA256 of that id under the consumer secret, so a
 * callback without the right token is ignored; `recordStkCallback` and
 * `recordReversalResult` (common/operator-callbacks.ts, shared with the api's
 * routes) keep what a genuine one says in `mpesa_results`. For a
 * payment that is only the receipt number (for refunds) and Daraja's id when a crash
 * lost it: the outcome itself always comes from the STK query. For a reversal there
 * is no query: the recorded `Result` is the answer.
 */
import type { MpesaConfig } from '../../common/config.js';
import type { DeclineCode } from '../../common/lifecycle.js';
import { isDuplicateKey } from '../../common/mongo.js';
import { MPESA_COLLECTIONS, mpesaCallbackToken, type ResultDoc } from '../../common/operator-callbacks.js';
import { OperatorUnavailableError } from '../../common/infra-errors.js';
import { wholeMajorUnits } from './amounts.js';
import {
  OperatorRequestError,
  type ConnectorDeps,
  type OperatorConnector,
  type OperatorResult,
  type PaymentAttemptRequest,
  type PaymentRequested,
  type RefundRequest,
  type RefundResult,
} from './connector.js';
import { callOperator, neverSent, text, type OperatorResponse } from './operator-http.js';
import { TokenCache } from './token-cache.js';

const OPERATOR = 'mpesa';

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

/** Reversal `ResultCode`s that mean the money is back with the payer. */
const REVERSED = new Set(['0', 'R000001']);

interface ClaimDoc {
  _id: string;
  created_at: number;
  /** Daraja's id once it answered: the STK push's CheckoutRequestID, the reversal's OriginatorConversationID. */
  operator_id?: string;
}

/** `YYYYMMDDHHmmss` in East Africa Time (UTC+3). */
export function mpesaTimestamp(nowMs: number): string {
  return new Date(nowMs + 3 * 3600_000).toISOString().replace(/[-T:]/g, '').slice(0, 14);
}

export function mpesaPassword(config: Pick<MpesaConfig, 'shortcode' | 'passkey'>, timestamp: string): string {
  return Buffer.from(`${config.shortcode}${config.passkey}${timestamp}`).toString('base64');
}

function withParams(url: string, params: Record<string, string>): string {
  const target = new URL(url);
  for (const [name, value] of Object.entries(params)) target.searchParams.set(name, value);
  return target.toString();
}

type Claim = { kind: 'mine' } | { kind: 'answered'; operatorId: string } | { kind: 'unknown' };

export function mpesaConnector(config: MpesaConfig, deps: ConnectorDeps & { now: () => number; timeoutMs: number }): OperatorConnector {
  const requests = deps.db.collection<ClaimDoc>(MPESA_COLLECTIONS.requests);
  const results = deps.db.collection<ResultDoc>(MPESA_COLLECTIONS.results);
  /** A claim without Daraja's id younger than this may still belong to a request in flight. */
  const inFlightMs = 2 * deps.timeoutMs + 5_000;

  const tokens = new TokenCache({
    redis: deps.redis,
    lockKey: `${deps.prefix}:operator-token-lock:mpesa`,
    now: deps.now,
    marginMs: 60_000,
    lockWaitMs: deps.timeoutMs + 5_000,
    issue: async () => {
      const basic = Buffer.from(`${config.consumerKey}:${config.consumerSecret}`).toString('base64');
      const answer = await callOperator({
        operator: OPERATOR,
        method: 'GET',
        url: `${config.baseUrl}/oauth/v1/generate?grant_type=client_credentials`,
        headers: { authorization: `Basic ${basic}` },
        timeoutMs: deps.timeoutMs,
      });
      const token = text(answer.body, 'access_token');
      if (answer.status !== 200 || !token) throw new OperatorRequestError(OPERATOR, answer.status, text(answer.body, 'errorCode') ?? 'token_refused');
      return { token, expiresInS: Number(text(answer.body, 'expires_in') ?? 3599) || 3599 };
    },
  });

  /** One call with the token; `onSend` runs just before the request leaves (after any token fetch). */
  async function call(path: string, body: unknown, answers5xx?: (status: number, body: unknown) => boolean, onSend?: () => void): Promise<OperatorResponse> {
    for (let round = 0; ; round++) {
      const token = await tokens.get();
      onSend?.();
      const answer = await callOperator({
        operator: OPERATOR,
        method: 'POST',
        url: `${config.baseUrl}${path}`,
        headers: { authorization: `Bearer ${token}` },
        body,
        timeoutMs: deps.timeoutMs,
        answers5xx,
      });
      const tokenRefused = answer.status === 401 || text(answer.body, 'errorCode') === '404.001.03';
      if (!tokenRefused || round > 0) return answer;
      tokens.invalidate(token);
    }
  }

  /** Takes the claim for `id`, or says what an earlier try left. */
  async function claim(id: string): Promise<Claim> {
    const found = await requests.findOne({ _id: id });
    if (!found) {
      try {
        await requests.insertOne({ _id: id, created_at: deps.now() });
        return { kind: 'mine' };
      } catch (err) {
        if (!isDuplicateKey(err)) throw err;
        throw new OperatorUnavailableError(OPERATOR, 'in_flight', 'another try of this request is in flight');
      }
    }
    if (found.operator_id) return { kind: 'answered', operatorId: found.operator_id };
    if (deps.now() - found.created_at < inFlightMs) throw new OperatorUnavailableError(OPERATOR, 'in_flight', 'an earlier try of this request may still be in flight');
    return { kind: 'unknown' };
  }

  /**
   * Sends the claimed request. The claim is freed when Daraja refused it, or it never
   * left (the token could not be had, the connection was refused); it is kept when
   * its fate is unknown (a timeout, a connection lost after sending).
   */
  async function send(id: string, path: string, body: unknown): Promise<OperatorResponse> {
    let answer: OperatorResponse;
    let sent = false;
    try {
      answer = await call(path, body, undefined, () => {
        sent = true;
      });
    } catch (err) {
      const refused = err instanceof OperatorUnavailableError && err.reason === 'status';
      if (!sent || refused || neverSent(err) || err instanceof OperatorRequestError) await requests.deleteOne({ _id: id });
      throw err;
    }
    if (answer.status !== 200 || text(answer.body, 'ResponseCode') !== '0') await requests.deleteOne({ _id: id });
    return answer;
  }

  const password = () => {
    const timestamp = mpesaTimestamp(deps.now());
    return { Timestamp: timestamp, Password: mpesaPassword(config, timestamp) };
  };

  const stillProcessing = (status: number, body: unknown) => status === 500 && /being processed/i.test(text(body, 'errorMessage') ?? '');

  /** Daraja's id of an attempt's push: from the claim, or from a genuine callback when a crash lost it. */
  async function checkoutIdOf(attemptId: string): Promise<string | undefined> {
    const claimed = await requests.findOne({ _id: `stk:${attemptId}` });
    if (claimed?.operator_id) return claimed.operator_id;
    return (await results.findOne({ _id: `stk:${attemptId}` }))?.operator_id;
  }

  return {
    async requestPayment(request: PaymentAttemptRequest): Promise<PaymentRequested> {
      const amount = wholeMajorUnits(request.amount, request.currency);
      if (amount === null || amount < 1) throw new OperatorRequestError(OPERATOR, 400, 'amount_not_whole_shillings');
      const id = `stk:${request.attemptId}`;
      const claimed = await claim(id);
      if (claimed.kind === 'answered') return { operatorReference: claimed.operatorId };
      // An earlier try may have pushed: never push twice. A callback naming the attempt, or its window, settles it.
      if (claimed.kind === 'unknown') return {};
      const phone = request.phoneNumber.replace(/^\+/, '');
      const answer = await send(id, '/mpesa/stkpush/v1/processrequest', {
        BusinessShortCode: config.shortcode,
        ...password(),
        TransactionType: 'CustomerPayBillOnline',
        Amount: amount,
        PartyA: phone,
        PartyB: config.shortcode,
        PhoneNumber: phone,
        CallBackURL: withParams(request.callbackUrl, { attempt: request.attemptId, t: mpesaCallbackToken(config, request.attemptId) }),
        AccountReference: request.paymentIntent.slice(-12),
        TransactionDesc: 'Payment',
      });
      const checkoutId = text(answer.body, 'CheckoutRequestID');
      if (answer.status !== 200 || text(answer.body, 'ResponseCode') !== '0' || !checkoutId) {
        const message = text(answer.body, 'errorMessage') ?? '';
        const payerUnknown = /PhoneNumber|PartyA/i.test(message);
        throw new OperatorRequestError(OPERATOR, answer.status, text(answer.body, 'errorCode') ?? text(answer.body, 'ResponseCode'), payerUnknown ? 'payer_not_found' : undefined);
      }
      await requests.updateOne({ _id: id }, { $set: { operator_id: checkoutId } });
      return { operatorReference: checkoutId };
    },

    async outcome(attemptId: string, operatorReference?: string): Promise<OperatorResult> {
      const checkoutId = operatorReference ?? (await checkoutIdOf(attemptId));
      if (!checkoutId) return { kind: 'pending' };
      const answer = await call('/mpesa/stkpushquery/v1/query', { BusinessShortCode: config.shortcode, ...password(), CheckoutRequestID: checkoutId }, stillProcessing);
      if (stillProcessing(answer.status, answer.body)) return { kind: 'pending' };
      const resultCode = text(answer.body, 'ResultCode');
      if (answer.status !== 200 || resultCode === undefined) throw new OperatorRequestError(OPERATOR, answer.status, text(answer.body, 'errorCode'));
      if (resultCode === '0') {
        const receipt = (await results.findOne({ _id: `stk:${attemptId}` }))?.receipt;
        return { kind: 'succeeded', ...(receipt ? { operatorReference: receipt } : {}) };
      }
      return { kind: 'declined', code: MPESA_RESULT_CODES[resultCode] ?? 'generic_decline', operatorCode: resultCode };
    },

    async refund(request: RefundRequest): Promise<RefundResult> {
      const amount = wholeMajorUnits(request.amount, request.currency);
      const recorded = await results.findOne({ _id: `stk:${request.attemptId}` });
      const receipt = recorded?.result_code === '0' ? recorded.receipt : undefined;
      const transactionId = receipt ?? (request.paymentReference && /^[A-Z0-9]{10}$/.test(request.paymentReference) ? request.paymentReference : undefined);
      // Without the receipt (the STK callback never came) nothing can be reversed through the API.
      if (!transactionId) return { kind: 'failed', code: 'generic_decline', operatorCode: 'receipt_unknown' };
      if (amount === null || (recorded?.amount !== undefined && recorded.amount !== amount)) {
        return { kind: 'failed', code: 'generic_decline', operatorCode: 'partial_reversal_unsupported' };
      }
      const id = `reversal:${request.refundId}`;
      const claimed = await claim(id);
      if (claimed.kind === 'answered') return { kind: 'pending', operatorReference: claimed.operatorId };
      if (claimed.kind === 'unknown') return { kind: 'pending' };
      const answer = await send(id, '/mpesa/reversal/v1/request', {
        Initiator: config.initiatorName,
        SecurityCredential: config.securityCredential,
        CommandID: 'TransactionReversal',
        TransactionID: transactionId,
        Amount: amount,
        ReceiverParty: config.shortcode,
        RecieverIdentifierType: '11',
        ResultURL: withParams(request.callbackUrl, { refund: request.refundId, t: mpesaCallbackToken(config, request.refundId) }),
        QueueTimeOutURL: withParams(request.callbackUrl, { refund: request.refundId, t: mpesaCallbackToken(config, request.refundId) }),
        Remarks: 'Refund',
        Occasion: request.refundId.slice(0, 100),
      });
      const conversationId = text(answer.body, 'OriginatorConversationID');
      if (answer.status !== 200 || text(answer.body, 'ResponseCode') !== '0' || !conversationId) {
        return { kind: 'failed', code: 'generic_decline', operatorCode: text(answer.body, 'errorCode') ?? text(answer.body, 'ResponseCode') ?? String(answer.status) };
      }
      await requests.updateOne({ _id: id }, { $set: { operator_id: conversationId } });
      return { kind: 'pending', operatorReference: conversationId };
    },

    async refundOutcome(refundId: string, operatorReference?: string): Promise<RefundResult> {
      const recorded = await results.findOne({ _id: `reversal:${refundId}` });
      if (!recorded) return { kind: 'pending', ...(operatorReference ? { operatorReference } : {}) };
      if (REVERSED.has(recorded.result_code)) return { kind: 'succeeded', ...(recorded.receipt ? { operatorReference: recorded.receipt } : {}) };
      return { kind: 'failed', code: 'generic_decline', operatorCode: recorded.result_code };
    },
  };
}
