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
 * (or refund, or status query) and a token, HMAC-SHA256 of it under the service key
 * `operator-callbacks` (not the consumer secret: rotating it strands no callback), so
 * a callback without the right token is ignored; `recordStkCallback`,
 * `recordReversalResult` and `recordTransactionStatus` (./callbacks.ts, shared with
 * the api's routes) keep what a genuine one says in `mpesa_results`.
 *
 * Lost answers (DESIGN section 14): a payment whose STK callback never came has no
 * receipt to reverse; Daraja's Transaction Status API (asynchronous, by the push's
 * CheckoutRequestID as `OriginalConversationID`) recovers it, and the refund waits
 * for it. A reversal whose `Result` never came is asked about the same way, by its
 * OriginatorConversationID. Assumed, not documented: that Transaction Status finds
 * an STK push by its CheckoutRequestID (if it does not, such a refund fails at
 * `OPERATOR_REFUND_LIMIT_MS` with `operator_unavailable`, and nothing is reversed). For a
 * payment that is only the receipt number (for refunds) and Daraja's id when a crash
 * lost it: the outcome itself always comes from the STK query. For a reversal there
 * is no query: the recorded `Result` is the answer.
 */
import type { MpesaConfig } from '../../../common/config.js';
import { isDuplicateKey } from '../../../common/mongo.js';
import { OperatorUnavailableError } from '../../../common/infra-errors.js';
import { wholeMajorUnits } from '../amounts.js';
import { MPESA_COLLECTIONS, mpesaCallbackToken, type ResultDoc } from './callbacks.js';
import { MPESA_B2C_RESULT_CODES, MPESA_RESULT_CODES, mpesaPassword, mpesaTimestamp, REVERSED, STATUS_REVERSED } from './wire.js';
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
import { callOperator, neverSent, text, type OperatorResponse } from '../operator-http.js';
import { TokenCache } from '../token-cache.js';

const OPERATOR = 'mpesa';

interface ClaimDoc {
  _id: string;
  created_at: number;
  /** Daraja's id once it answered: the STK push's CheckoutRequestID, the reversal's OriginatorConversationID. */
  operator_id?: string;
}

function withParams(url: string, params: Record<string, string>): string {
  const target = new URL(url);
  for (const [name, value] of Object.entries(params)) target.searchParams.set(name, value);
  return target.toString();
}

/** How often a Transaction Status query may be sent for one subject. */
const STATUS_EVERY_MS = 60_000;


type Claim = { kind: 'mine' } | { kind: 'answered'; operatorId: string } | { kind: 'unknown' };

export function mpesaConnector(config: MpesaConfig, deps: BuildDeps): OperatorConnector {
  const requests = deps.db.collection<ClaimDoc>(MPESA_COLLECTIONS.requests);
  const results = deps.db.collection<ResultDoc>(MPESA_COLLECTIONS.results);
  /** A claim without Daraja's id younger than this may still belong to a request in flight. */
  const inFlightMs = 2 * deps.timeoutMs + 5_000;
  /** How long a reversal's own `Result` is waited for before Transaction Status is asked. */
  const statusAfterMs = Math.max(5 * deps.timeoutMs, 10_000);

  const tokens = new TokenCache({
    redis: deps.redis,
    lockKey: `${deps.prefix}:operator-token-lock:mpesa:${config.shortcode}`,
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
      // A 429 or a 5xx was thrown as no answer (operator-http.ts); a refusal here means nothing was sent.
      if (answer.status !== 200 || !token) throw new OperatorRequestError(OPERATOR, answer.status, text(answer.body, 'errorCode') ?? 'token_refused', undefined, false);
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
  async function checkoutIdOf(attemptId: string): Promise<{ id?: string; claimed: boolean }> {
    const claimed = await requests.findOne({ _id: `stk:${attemptId}` });
    if (claimed?.operator_id) return { id: claimed.operator_id, claimed: true };
    const id = (await results.findOne({ _id: `stk:${attemptId}` }))?.operator_id;
    return { ...(id ? { id } : {}), claimed: claimed !== null };
  }

  /** A callback URL of ours for `subject`, with its token under the callbacks' service key. */
  async function callbackUrl(base: string, param: string, subject: string, tokenSubject = subject): Promise<string> {
    return withParams(base, { [param]: subject, t: mpesaCallbackToken(await deps.callbackKey(), tokenSubject) });
  }

  /**
   * Asks Daraja's Transaction Status API about `subject` (`stk:<attempt>`: the
   * payment, by its CheckoutRequestID; `reversal:<refund>`: the reversal, by its
   * OriginatorConversationID; both sent as the documented `OriginalConversationID`), at most once per `STATUS_EVERY_MS` for each. The
   * answer is asynchronous: it arrives at our ResultURL and is recorded as
   * `status:<subject>` (./callbacks.ts).
   */
  async function askStatus(subject: string, by: { TransactionID?: string; OriginalConversationID?: string }, resultBase: string): Promise<void> {
    const bucket = Math.floor(deps.now() / STATUS_EVERY_MS);
    try {
      await requests.insertOne({ _id: `txstatus:${subject}:${bucket}`, created_at: deps.now() });
    } catch (err) {
      if (isDuplicateKey(err)) return;
      throw err;
    }
    const url = await callbackUrl(resultBase, 'status', subject, `status:${subject}`);
    const answer = await call('/mpesa/transactionstatus/v1/query', {
      Initiator: config.initiatorName,
      SecurityCredential: config.securityCredential,
      CommandID: 'TransactionStatusQuery',
      ...by,
      PartyA: config.shortcode,
      IdentifierType: '4',
      ResultURL: url,
      QueueTimeOutURL: url,
      Remarks: 'Status',
      Occasion: subject.slice(0, 100),
    });
    if (answer.status !== 200 || text(answer.body, 'ResponseCode') !== '0') {
      // Refused: the next bucket may ask again. Nothing is decided on it.
      await requests.deleteOne({ _id: `txstatus:${subject}:${bucket}` });
      throw new OperatorRequestError(OPERATOR, answer.status, text(answer.body, 'errorCode') ?? text(answer.body, 'ResponseCode'));
    }
  }

  /** The payment's receipt: from its STK callback, else from a Transaction Status answer (asked for when missing). */
  async function receiptOf(request: RefundRequest): Promise<string | undefined> {
    const recorded = await results.findOne({ _id: `stk:${request.attemptId}` });
    if (recorded?.result_code === '0' && recorded.receipt) return recorded.receipt;
    if (request.paymentReference && /^[A-Z0-9]{10}$/.test(request.paymentReference)) return request.paymentReference;
    const status = await results.findOne({ _id: `status:stk:${request.attemptId}` });
    if (status?.result_code === '0' && status.receipt) return status.receipt;
    const checkout = await checkoutIdOf(request.attemptId);
    if (checkout.id) await askStatus(`stk:${request.attemptId}`, { OriginalConversationID: checkout.id }, request.callbackUrl);
    return undefined;
  }

  /** Sends the reversal of `receipt` for the refund, once (its claim). */
  async function reverse(request: RefundRequest, receipt: string, amount: number): Promise<RefundResult> {
    const id = `reversal:${request.refundId}`;
    const claimed = await claim(id);
    if (claimed.kind === 'answered') return { kind: 'pending', operatorReference: claimed.operatorId };
    if (claimed.kind === 'unknown') return { kind: 'pending' };
    const resultUrl = await callbackUrl(request.callbackUrl, 'refund', request.refundId);
    const answer = await send(id, '/mpesa/reversal/v1/request', {
      Initiator: config.initiatorName,
      SecurityCredential: config.securityCredential,
      CommandID: 'TransactionReversal',
      TransactionID: receipt,
      Amount: amount,
      ReceiverParty: config.shortcode,
      RecieverIdentifierType: '11',
      ResultURL: resultUrl,
      QueueTimeOutURL: resultUrl,
      Remarks: 'Refund',
      Occasion: request.refundId.slice(0, 100),
    });
    const conversationId = text(answer.body, 'OriginatorConversationID');
    if (answer.status !== 200 || text(answer.body, 'ResponseCode') !== '0' || !conversationId) {
      return { kind: 'failed', code: 'operator_request_rejected', operatorCode: text(answer.body, 'errorCode') ?? text(answer.body, 'ResponseCode') ?? String(answer.status) };
    }
    await requests.updateOne({ _id: id }, { $set: { operator_id: conversationId } });
    return { kind: 'pending', operatorReference: conversationId };
  }

  return {
    async requestPayment(request: PaymentAttemptRequest): Promise<PaymentRequested> {
      // Daraja is Safaricom Kenya's: shillings, +254 numbers (common/operator-accounts.ts routes nothing else here).
      if (request.currency.toLowerCase() !== 'kes' || !request.phoneNumber.startsWith('+254')) {
        throw new OperatorRequestError(OPERATOR, 400, 'kenya_only', undefined, false);
      }
      const amount = wholeMajorUnits(request.amount, request.currency);
      if (amount === null || amount < 1) throw new OperatorRequestError(OPERATOR, 400, 'amount_not_whole_shillings', undefined, false);
      const id = `stk:${request.attemptId}`;
      const claimed = await claim(id);
      if (claimed.kind === 'answered') return { operatorReference: claimed.operatorId };
      // An earlier try may have pushed: never push twice. A callback naming the attempt, or its checks, settle it.
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
        CallBackURL: await callbackUrl(request.callbackUrl, 'attempt', request.attemptId),
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
      const known = operatorReference ? { id: operatorReference, claimed: true } : await checkoutIdOf(attemptId);
      // No claim and no callback: Daraja was never asked (a refused push frees its claim).
      if (!known.id) return known.claimed ? { kind: 'pending' } : { kind: 'not_found' };
      const answer = await call('/mpesa/stkpushquery/v1/query', { BusinessShortCode: config.shortcode, ...password(), CheckoutRequestID: known.id }, stillProcessing);
      if (stillProcessing(answer.status, answer.body)) return { kind: 'pending' };
      const resultCode = text(answer.body, 'ResultCode');
      if (answer.status !== 200 || resultCode === undefined) throw new OperatorRequestError(OPERATOR, answer.status, text(answer.body, 'errorCode'));
      if (resultCode === '0') {
        const receipt = (await results.findOne({ _id: `stk:${attemptId}` }))?.receipt;
        return { kind: 'succeeded', ...(receipt ? { operatorReference: receipt } : {}) };
      }
      // A code Daraja does not document is not a decline we can name: still pending, asked again.
      const code = MPESA_RESULT_CODES[resultCode];
      return code ? { kind: 'declined', code, operatorCode: resultCode } : { kind: 'pending' };
    },

    async refund(request: RefundRequest): Promise<RefundResult> {
      const amount = wholeMajorUnits(request.amount, request.currency);
      const recorded = await results.findOne({ _id: `stk:${request.attemptId}` });
      if (amount === null || (recorded?.amount !== undefined && recorded.amount !== amount)) {
        return { kind: 'failed', code: 'generic_decline', operatorCode: 'partial_reversal_unsupported' };
      }
      // Without the receipt (the STK callback never came) the Transaction Status API is
      // asked for it; the refund's next poll reverses once it is known.
      const receipt = await receiptOf(request);
      if (!receipt) return { kind: 'pending' };
      return reverse(request, receipt, amount);
    },

    async refundOutcome(request: RefundRequest, operatorReference?: string): Promise<RefundResult> {
      const recorded = await results.findOne({ _id: `reversal:${request.refundId}` });
      if (recorded) {
        if (REVERSED.has(recorded.result_code)) return { kind: 'succeeded', ...(recorded.receipt ? { operatorReference: recorded.receipt } : {}) };
        return { kind: 'failed', code: 'generic_decline', operatorCode: recorded.result_code };
      }
      const claimed = await requests.findOne({ _id: `reversal:${request.refundId}` });
      // Not sent yet (the receipt was being looked up): ask again, which sends it once the receipt is known.
      if (!claimed) return this.refund(request);
      const conversation = claimed.operator_id ?? operatorReference;
      if (!conversation) return { kind: 'pending' };
      // The reversal's `Result` has not come: Daraja's Transaction Status tells.
      const status = await results.findOne({ _id: `status:reversal:${request.refundId}` });
      if (status?.result_code === '0' && status.transaction_status && STATUS_REVERSED.has(status.transaction_status)) {
        return { kind: 'succeeded', ...(status.receipt ? { operatorReference: status.receipt } : {}) };
      }
      if (deps.now() - claimed.created_at >= statusAfterMs) {
        await askStatus(`reversal:${request.refundId}`, { OriginalConversationID: conversation }, request.callbackUrl);
      }
      return { kind: 'pending', operatorReference: conversation };
    },

    /**
     * B2C (`/mpesa/b2c/v3/paymentrequest`, CommandID BusinessPayment), once per payout:
     * Daraja has no idempotency key, so the request is claimed (`b2c:<payout>`) as a
     * push is, and a try whose fate is unknown is never sent again; its `Result` at
     * our ResultURL, or Transaction Status, tells.
     */
    async payout(request: DisbursementRequest): Promise<DisbursementResult> {
      if (request.currency.toLowerCase() !== 'kes' || !request.phoneNumber.startsWith('+254')) return { kind: 'failed', code: 'operator_request_rejected', operatorCode: 'kenya_only' };
      const amount = wholeMajorUnits(request.amount, request.currency);
      if (amount === null || amount < 1) return { kind: 'failed', code: 'operator_request_rejected', operatorCode: 'amount_not_whole_shillings' };
      const id = `b2c:${request.payoutId}`;
      const claimed = await claim(id);
      if (claimed.kind === 'answered') return { kind: 'pending', operatorReference: claimed.operatorId };
      if (claimed.kind === 'unknown') return { kind: 'pending' };
      const resultUrl = await callbackUrl(request.callbackUrl, 'payout', request.payoutId);
      const answer = await send(id, '/mpesa/b2c/v3/paymentrequest', {
        OriginatorConversationID: request.payoutId,
        InitiatorName: config.initiatorName,
        SecurityCredential: config.securityCredential,
        CommandID: 'BusinessPayment',
        Amount: amount,
        PartyA: config.shortcode,
        PartyB: request.phoneNumber.replace(/^\+/, ''),
        Remarks: 'Payout',
        QueueTimeOutURL: resultUrl,
        ResultURL: resultUrl,
        Occasion: request.payoutId.slice(0, 100),
      });
      const conversationId = text(answer.body, 'ConversationID');
      if (answer.status !== 200 || text(answer.body, 'ResponseCode') !== '0' || !conversationId) {
        return { kind: 'failed', code: 'operator_request_rejected', operatorCode: text(answer.body, 'errorCode') ?? text(answer.body, 'ResponseCode') ?? String(answer.status) };
      }
      await requests.updateOne({ _id: id }, { $set: { operator_id: conversationId } });
      return { kind: 'pending', operatorReference: conversationId };
    },

    async payoutOutcome(request: DisbursementRequest, operatorReference?: string): Promise<DisbursementResult> {
      const recorded = await results.findOne({ _id: `b2c:${request.payoutId}` });
      if (recorded) {
        if (recorded.result_code === '0') return { kind: 'paid', ...(recorded.receipt ? { operatorReference: recorded.receipt } : {}) };
        return { kind: 'failed', code: MPESA_B2C_RESULT_CODES[recorded.result_code] ?? 'generic_failure', operatorCode: recorded.result_code };
      }
      const claimed = await requests.findOne({ _id: `b2c:${request.payoutId}` });
      if (!claimed) return { kind: 'not_found' };
      // The `Result` has not come: Daraja's Transaction Status tells, by our OriginatorConversationID.
      const status = await results.findOne({ _id: `status:b2c:${request.payoutId}` });
      if (status?.result_code === '0' && status.transaction_status === 'Completed') return { kind: 'paid', ...(status.receipt ? { operatorReference: status.receipt } : {}) };
      if (deps.now() - claimed.created_at >= statusAfterMs) {
        await askStatus(`b2c:${request.payoutId}`, { OriginalConversationID: request.payoutId }, request.callbackUrl);
      }
      return { kind: 'pending', ...((claimed.operator_id ?? operatorReference) ? { operatorReference: claimed.operator_id ?? operatorReference } : {}) };
    },

    /** An M-Pesa prompt on the payer's phone cannot be withdrawn: only Daraja's answer ends it. */
    async withdraw() {
      return { kind: 'cannot' as const };
    },

    /** A fresh OAuth token: Daraja answered. */
    async probe(): Promise<void> {
      await tokens.probe();
    },
  };
}
