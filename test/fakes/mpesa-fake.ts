/**
 * A local Safaricom Daraja (OAuth, M-Pesa Express, Reversal, Transaction Status),
 * written from Daraja's API pages, developer.safaricom.co.ke/apis/… (the connector,
 * worker/operators/mpesa/, names them). Strict where they are clear:
 *
 * - `GET /oauth/v1/generate?grant_type=client_credentials` with HTTP Basic
 *   `consumerKey:consumerSecret`: a wrong grant type is 400 `400.008.02`, wrong
 *   credentials 400 `400.008.01`. Answers `{access_token, expires_in: "3599"}`.
 * - Every other call: `Authorization: Bearer` with a token it issued, else
 *   `404.001.03` "Invalid Access Token".
 * - STK push: `BusinessShortCode` and `PartyB` the short code, `Password` =
 *   base64(short code + passkey + `Timestamp`) (else 500 `500.001.1001` "Wrong
 *   credentials"), `Timestamp` as YYYYMMDDHHmmss (else 400 `400.002.02` "Invalid
 *   Timestamp"), `PhoneNumber`/`PartyA` as 2547XXXXXXXX or 2541XXXXXXXX (else 400
 *   "Invalid PhoneNumber"), a whole `Amount` of at least 1, `CallBackURL`,
 *   `AccountReference` ≤ 12 and `TransactionDesc` ≤ 13 characters. Every push
 *   counts as one prompt on the payer's phone: Daraja has no idempotency key.
 * - STK query: 500 `500.001.1001` "The transaction is being processed" while the
 *   payer has not answered, then `ResultCode`.
 * - Reversal: the initiator's name and credential (else the `Result` says 2001),
 *   a known receipt (else R000002), reversed once (then R000001); answered at once
 *   with `OriginatorConversationID`, the `Result` POSTed to `ResultURL` when the
 *   test delivers it (`deliverReversal`).
 *
 * The payer is played by the test: `settle` applies the outcome set for the payer's
 * number (`ResultCode` 0 by default) and POSTs Daraja's `stkCallback` to the
 * push's `CallBackURL`, unless `dropCallbacks` (alias `dropStkCallbacks`): the
 * callback is lost, the push is still settled (the STK query and the Transaction
 * Status API see it).
 *
 * Transaction Status (`POST /mpesa/transactionstatus/v1/query`), documented on
 * Daraja's TransactionStatus page:
 * - Documented: the fields `Initiator`, `SecurityCredential`, `CommandID`
 *   ("TransactionStatusQuery" only), `TransactionID` (the M-Pesa receipt) or
 *   `OriginalConversationID` ("the Originator Conversation ID of the transaction"),
 *   `PartyA` (the short code), `IdentifierType` ("4 – Organization shortcode"),
 *   `ResultURL`, `QueueTimeOutURL`, `Remarks` (≤ 100), `Occasion` (optional, ≤ 100);
 *   the synchronous `{OriginatorConversationID, ConversationID, ResponseCode: "0",
 *   ResponseDescription: "Accept the service request successfully."}`; the Result
 *   POSTed to `ResultURL`: `{Result: {ResultType: 0, ResultCode: 0, ResultDesc,
 *   OriginatorConversationID, ConversationID, TransactionID, ResultParameters:
 *   {ResultParameter: [{Key, Value}…]}, ReferenceData: {ReferenceItem: {Key:
 *   "Occasion", Value?}}}}` with the keys DebitPartyName, CreditPartyName,
 *   OriginatorConversationID, InitiatedTime, DebitPartyCharges, TransactionReason,
 *   ReasonType, TransactionStatus (Completed, Cancelled, Declined or Expired),
 *   FinalisedTime, Amount, ConversationID, ReceiptNo; the page's sample has a
 *   placeholder `TransactionID` ("MBN0000000") beside the real `ReceiptNo`, and so
 *   has this fake: read `ReceiptNo`. Its sync errors are `400.003.02` Bad Request.
 * - Inferred from clients and public reports: `OriginatorConversationID` is taken
 *   as a synonym of `OriginalConversationID` (clients send it so, e.g.
 *   mpesa-sdk-kotlin's TransactionStatusRequest); a wrong initiator gives a Result
 *   with ResultCode 2001 "The initiator information is invalid." and no
 *   parameters (a Daraja answer published in an issue); an unknown transaction
 *   gives ResultCode 2032 "The transaction receipt number does not exist." with no
 *   parameters (a sandbox answer published by a public project); an STK push is
 *   found by its `CheckoutRequestID` given as the conversation id, and only once
 *   completed (ResultCode 0): a pending or failed push is unknown (2032); a
 *   reversal is found by its `OriginatorConversationID` or its receipt, as a
 *   Completed transaction with the reversal's receipt as `ReceiptNo`, and a
 *   reversal that failed is unknown (2032); the original of a reversed receipt
 *   still reads Completed (Daraja documents no "Reversed" status); the ReasonType
 *   and party-name values are made up in Daraja's style.
 *
 * B2C (`POST /mpesa/b2c/v3/paymentrequest`), from Daraja's B2C page: `OriginatorConversationID`
 * (ours, optional), `InitiatorName`, `SecurityCredential`, `CommandID` (SalaryPayment,
 * BusinessPayment or PromotionPayment), a whole `Amount` of at least 10 (Daraja's
 * minimum for B2C is inferred from public reports), `PartyA` the short code, `PartyB`
 * 2547…/2541…, `Remarks`, `QueueTimeOutURL`, `ResultURL`; answered at once with
 * `{ConversationID, OriginatorConversationID, ResponseCode: "0"}`, the `Result`
 * POSTed to `ResultURL` right after (`ResultCode` 0 with a `TransactionID` and
 * `ResultParameters`, or the code set for the recipient in `b2cOutcomes`). Daraja has
 * no idempotency key: every accepted request pays, and `paidFor(originatorConversationId)`
 * counts them. Transaction Status finds a paid B2C by its `OriginatorConversationID`.
 * `loseB2cResults = true`: the payment is made, its `Result` never sent.
 *
 * Misbehaviours, each off until a test asks (the shared ones are in fake-server.ts):
 *
 * - Throttling (`server.throttleNext`): Daraja documents its rate limits as HTTP 500
 *   `{requestId, errorCode: "500.003.02", errorMessage: "Error Occurred: Spike Arrest
 *   Violation"}` (or `500.003.03` "Error Occurred: Quota Violation", with
 *   `throttleError = 'quota-violation'`) on the M-Pesa Express, Reversal and
 *   Transaction Status pages, so a throttled answer here is a 500, not a 429. The
 *   `Retry-After` header the shared server adds is not documented by Daraja.
 * - `configError('merchant' | 'credentials' | null)`: every STK push is answered
 *   HTTP 500 `{requestId, errorCode: "500.001.1001", errorMessage: "Merchant does not
 *   exist"}` or "Wrong credentials" (M-Pesa Express page, common error codes).
 * - `loseReversalResults = true`: a reversal requested meanwhile is made (the receipt
 *   is in `reversedReceipts`, Transaction Status finds it) but its `Result` is never
 *   POSTed to its ResultURL, even by `deliverReversal`.
 * - `loseStatusResults = true`: a Transaction Status query is accepted but its
 *   `Result` never arrives. `transactionStatusQueries` counts the queries.
 */
import { randomBytes } from 'node:crypto';
import { FakeServer, header, sendCallback, type FakeAnswer, type FakeRequest } from './fake-server.js';

export interface MpesaFakeConfig {
  consumerKey: string;
  consumerSecret: string;
  shortcode: string;
  passkey: string;
  initiatorName: string;
  securityCredential: string;
}

interface Push {
  checkoutRequestId: string;
  merchantRequestId: string;
  phone: string;
  amount: number;
  callbackUrl: string;
  resultCode: number | null;
  receipt?: string;
  transactionType?: string;
  createdAt?: number;
  settledAt?: number;
}

interface B2c {
  originatorConversationId: string;
  conversationId: string;
  phone: string;
  amount: number;
  resultUrl: string;
  resultCode: number;
  receipt?: string;
  at: number;
}

interface Reversal {
  originatorConversationId: string;
  resultUrl: string;
  result: Record<string, unknown>;
  /** The push reversed, when the reversal was made. */
  reversed?: Push;
  /** The reversal's own receipt, when it was made. */
  receipt?: string;
  at?: number;
  /** Its Result is never sent (`loseReversalResults` when it was requested). */
  lost?: boolean;
}

export interface StatusQuery {
  originatorConversationId: string;
  conversationId: string;
  resultUrl: string;
  result: { Result: Record<string, unknown> };
  /** Its Result is never sent (`loseStatusResults` when it was asked). */
  lost: boolean;
  sent: boolean;
}

const RESULT_DESCRIPTIONS: Record<number, string> = {
  0: 'The service request is processed successfully.',
  1: 'The balance is insufficient for the transaction.',
  1032: 'Request cancelled by user',
  1037: 'DS timeout user cannot be reached',
  2001: 'The initiator information is invalid.',
};

/** Daraja's Transaction Status code for a transaction it does not know (see the header). */
export const MPESA_STATUS_NOT_FOUND = { code: 2032, desc: 'The transaction receipt number does not exist.' } as const;

const CONFIG_ERRORS = { merchant: 'Merchant does not exist', credentials: 'Wrong credentials' } as const;
const THROTTLE_ERRORS = {
  'spike-arrest': ['500.003.02', 'Error Occurred: Spike Arrest Violation'],
  'quota-violation': ['500.003.03', 'Error Occurred: Quota Violation'],
} as const;

export class MpesaFake {
  readonly server: FakeServer;
  readonly pushes = new Map<string, Push>();
  readonly reversals = new Map<string, Reversal>();
  readonly reversedReceipts = new Set<string>();
  /** B2C payments, by ConversationID. */
  readonly b2cPayments = new Map<string, B2c>();
  /** The `ResultCode` a B2C recipient's number gets (default 0). */
  readonly b2cOutcomes = new Map<string, number>();
  /** B2C payments made while true have their `Result` lost. */
  loseB2cResults = false;
  /** The `ResultCode` a payer's number gets when settled (default 0). */
  readonly outcomes = new Map<string, number>();
  /** STK callbacks are not sent while true (the push is still settled). */
  dropCallbacks = false;
  tokensIssued = 0;
  /** Which of Daraja's documented rate-limit errors a throttled answer is. */
  throttleError: keyof typeof THROTTLE_ERRORS = 'spike-arrest';
  /** Reversals requested while true are made, but their Result is never sent. */
  loseReversalResults = false;
  /** Transaction Status queries asked while true are accepted, but their Result is never sent. */
  loseStatusResults = false;
  /** Waits this long (ms) before POSTing a Transaction Status Result. */
  statusResultDelayMs = 0;
  /** Transaction Status queries that reached the API (accepted or not). */
  transactionStatusQueries = 0;
  /** The accepted Transaction Status queries, by their OriginatorConversationID. */
  readonly statusQueries = new Map<string, StatusQuery>();
  private configErrorKind: keyof typeof CONFIG_ERRORS | null = null;
  private readonly tokens = new Set<string>();
  private readonly timers = new Set<NodeJS.Timeout>();

  constructor(private readonly config: MpesaFakeConfig) {
    this.server = new FakeServer((request) => this.route(request), {
      throttleStatus: 500,
      throttleBody: () => {
        const [errorCode, errorMessage] = THROTTLE_ERRORS[this.throttleError];
        return { requestId: randomBytes(6).toString('hex'), errorCode, errorMessage };
      },
    });
  }

  async start(): Promise<this> {
    await this.server.start();
    return this;
  }

  stop(): Promise<void> {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    return this.server.stop();
  }

  /** The same switch as `dropCallbacks`: STK callbacks lost. */
  get dropStkCallbacks(): boolean {
    return this.dropCallbacks;
  }

  set dropStkCallbacks(drop: boolean) {
    this.dropCallbacks = drop;
  }

  /**
   * A configuration error at Safaricom: every STK push is answered HTTP 500
   * `500.001.1001` "Merchant does not exist" ('merchant') or "Wrong credentials"
   * ('credentials'); `null` ends it.
   */
  configError(kind: 'merchant' | 'credentials' | null): void {
    this.configErrorKind = kind;
  }

  get url(): string {
    return this.server.url;
  }

  /** How many STK pushes (prompts on a phone) named this callback URL's attempt. */
  pushesFor(attemptId: string): number {
    return [...this.pushes.values()].filter((p) => new URL(p.callbackUrl).searchParams.get('attempt') === attemptId).length;
  }

  pushFor(attemptId: string): Push | undefined {
    return [...this.pushes.values()].find((p) => new URL(p.callbackUrl).searchParams.get('attempt') === attemptId);
  }

  /** How many B2C payments were made (paid) for this OriginatorConversationID. */
  paidFor(originatorConversationId: string): number {
    return [...this.b2cPayments.values()].filter((b) => b.originatorConversationId === originatorConversationId && b.resultCode === 0).length;
  }

  /** The payer answers the push: its result is set, and Daraja calls back. */
  async settle(checkoutRequestId: string): Promise<void> {
    const push = this.pushes.get(checkoutRequestId);
    if (!push) throw new Error(`no push ${checkoutRequestId}`);
    push.resultCode = this.outcomes.get(push.phone) ?? 0;
    push.settledAt = Date.now();
    if (push.resultCode === 0) push.receipt = receiptNo();
    if (!this.dropCallbacks) await sendCallback(push.callbackUrl, this.stkCallback(push)).catch(() => undefined);
  }

  stkCallback(push: Push): unknown {
    const stkCallback: Record<string, unknown> = {
      MerchantRequestID: push.merchantRequestId,
      CheckoutRequestID: push.checkoutRequestId,
      ResultCode: push.resultCode,
      ResultDesc: RESULT_DESCRIPTIONS[push.resultCode ?? 0] ?? 'Failed',
    };
    if (push.resultCode === 0) {
      stkCallback.CallbackMetadata = {
        Item: [
          { Name: 'Amount', Value: push.amount },
          { Name: 'MpesaReceiptNumber', Value: push.receipt },
          { Name: 'TransactionDate', Value: 20261126104500 },
          { Name: 'PhoneNumber', Value: Number(push.phone) },
        ],
      };
    }
    return { Body: { stkCallback } };
  }

  /**
   * Sends a reversal's `Result` to its `ResultURL` (Daraja's asynchronous answer);
   * nothing when its Result is lost (`loseReversalResults`).
   */
  async deliverReversal(originatorConversationId: string): Promise<void> {
    const reversal = this.reversals.get(originatorConversationId);
    if (!reversal) throw new Error(`no reversal ${originatorConversationId}`);
    if (reversal.lost || this.loseReversalResults) return;
    await sendCallback(reversal.resultUrl, { Result: reversal.result }).catch(() => undefined);
  }

  /** Sends (again) a Transaction Status `Result` to its `ResultURL`; nothing when it is lost. */
  async deliverStatusResult(originatorConversationId: string): Promise<void> {
    const query = this.statusQueries.get(originatorConversationId);
    if (!query) throw new Error(`no status query ${originatorConversationId}`);
    if (query.lost) return;
    query.sent = true;
    await sendCallback(query.resultUrl, query.result).catch(() => undefined);
  }

  private route(request: FakeRequest): FakeAnswer {
    if (request.method === 'GET' && request.path === '/oauth/v1/generate') return this.token(request);
    const bearer = /^Bearer (.+)$/.exec(header(request, 'authorization') ?? '')?.[1];
    if (!bearer || !this.tokens.has(bearer)) return error(404, '404.001.03', 'Invalid Access Token');
    if (request.method !== 'POST') return error(404, '404.001.01', 'Resource not found');
    const body = (request.body ?? {}) as Record<string, unknown>;
    switch (request.path) {
      case '/mpesa/stkpush/v1/processrequest':
        return this.push(body);
      case '/mpesa/stkpushquery/v1/query':
        return this.query(body);
      case '/mpesa/reversal/v1/request':
        return this.reverse(body);
      case '/mpesa/transactionstatus/v1/query':
        return this.transactionStatus(body);
      case '/mpesa/b2c/v3/paymentrequest':
        return this.b2c(body);
      default:
        return error(404, '404.001.01', 'Resource not found');
    }
  }

  private token(request: FakeRequest): FakeAnswer {
    if (request.query.get('grant_type') !== 'client_credentials') return error(400, '400.008.02', 'Invalid grant type passed');
    const basic = Buffer.from(`${this.config.consumerKey}:${this.config.consumerSecret}`).toString('base64');
    if (header(request, 'authorization') !== `Basic ${basic}`) return error(400, '400.008.01', 'Invalid Authentication passed');
    const token = randomBytes(18).toString('base64url');
    this.tokens.add(token);
    this.tokensIssued++;
    return { status: 200, body: { access_token: token, expires_in: '3599' } };
  }

  /** The checks shared by the push and the query: short code, timestamp, password. */
  private credentials(body: Record<string, unknown>): FakeAnswer | null {
    if (body.BusinessShortCode !== this.config.shortcode) return error(400, '400.002.02', 'Bad Request - Invalid BusinessShortCode');
    if (typeof body.Timestamp !== 'string' || !/^\d{14}$/.test(body.Timestamp)) return error(400, '400.002.02', 'Bad Request - Invalid Timestamp');
    const expected = Buffer.from(`${this.config.shortcode}${this.config.passkey}${body.Timestamp}`).toString('base64');
    if (body.Password !== expected) return error(500, '500.001.1001', 'Wrong credentials');
    return null;
  }

  private push(body: Record<string, unknown>): FakeAnswer {
    if (this.configErrorKind) return error(500, '500.001.1001', CONFIG_ERRORS[this.configErrorKind]);
    const refused = this.credentials(body);
    if (refused) return refused;
    const phone = /^254[17]\d{8}$/;
    if (typeof body.PhoneNumber !== 'string' || !phone.test(body.PhoneNumber) || body.PartyA !== body.PhoneNumber) {
      return error(400, '400.002.02', 'Bad Request - Invalid PhoneNumber');
    }
    if (!['CustomerPayBillOnline', 'CustomerBuyGoodsOnline'].includes(body.TransactionType as string)) return error(400, '400.002.02', 'Bad Request - Invalid TransactionType');
    if (!Number.isInteger(body.Amount) || (body.Amount as number) < 1) return error(400, '400.002.02', 'Bad Request - Invalid Amount');
    if (body.PartyB !== this.config.shortcode) return error(400, '400.002.02', 'Bad Request - Invalid PartyB');
    if (typeof body.CallBackURL !== 'string' || !/^https?:\/\//.test(body.CallBackURL)) return error(400, '400.002.02', 'Bad Request - Invalid CallBackURL');
    if (typeof body.AccountReference !== 'string' || body.AccountReference.length > 12) return error(400, '400.002.02', 'Bad Request - Invalid AccountReference');
    if (typeof body.TransactionDesc !== 'string' || body.TransactionDesc.length > 13) return error(400, '400.002.02', 'Bad Request - Invalid TransactionDesc');
    const push: Push = {
      checkoutRequestId: `ws_CO_${randomBytes(8).toString('hex')}`,
      merchantRequestId: `${randomBytes(3).toString('hex')}-${this.pushes.size + 1}`,
      phone: body.PhoneNumber,
      amount: body.Amount as number,
      callbackUrl: body.CallBackURL,
      resultCode: null,
      transactionType: body.TransactionType as string,
      createdAt: Date.now(),
    };
    this.pushes.set(push.checkoutRequestId, push);
    return {
      status: 200,
      body: {
        MerchantRequestID: push.merchantRequestId,
        CheckoutRequestID: push.checkoutRequestId,
        ResponseCode: '0',
        ResponseDescription: 'Success. Request accepted for processing',
        CustomerMessage: 'Success. Request accepted for processing',
      },
    };
  }

  private query(body: Record<string, unknown>): FakeAnswer {
    const refused = this.credentials(body);
    if (refused) return refused;
    const push = this.pushes.get(body.CheckoutRequestID as string);
    if (!push) return error(400, '400.002.02', 'Bad Request - Invalid CheckoutRequestID');
    if (push.resultCode === null) return error(500, '500.001.1001', 'The transaction is being processed');
    return {
      status: 200,
      body: {
        ResponseCode: '0',
        ResponseDescription: 'The service request has been accepted successsfully',
        MerchantRequestID: push.merchantRequestId,
        CheckoutRequestID: push.checkoutRequestId,
        ResultCode: String(push.resultCode),
        ResultDesc: RESULT_DESCRIPTIONS[push.resultCode] ?? 'Failed',
      },
    };
  }

  private reverse(body: Record<string, unknown>): FakeAnswer {
    for (const name of ['Initiator', 'SecurityCredential', 'TransactionID', 'ResultURL', 'QueueTimeOutURL', 'Remarks']) {
      if (typeof body[name] !== 'string' || body[name] === '') return error(400, '400.002.02', `Bad Request - Invalid ${name}`);
    }
    if (body.CommandID !== 'TransactionReversal') return error(400, '400.002.02', 'Bad Request - Invalid CommandID');
    if (body.ReceiverParty !== this.config.shortcode) return error(400, '400.002.02', 'Bad Request - Invalid ReceiverParty');
    const originatorConversationId = `${randomBytes(4).toString('hex')}-${this.reversals.size + 1}`;
    const conversationId = `AG_${randomBytes(8).toString('hex')}`;
    const receipt = body.TransactionID as string;
    const known = [...this.pushes.values()].find((p) => p.receipt === receipt);
    let resultCode: number | string = 0;
    let resultDesc = 'The service request is processed successfully.';
    if (body.Initiator !== this.config.initiatorName || body.SecurityCredential !== this.config.securityCredential) {
      [resultCode, resultDesc] = [2001, 'The initiator information is invalid.'];
    } else if (!known) {
      [resultCode, resultDesc] = ['R000002', 'The OriginalTransactionID is invalid.'];
    } else if (this.reversedReceipts.has(receipt)) {
      [resultCode, resultDesc] = ['R000001', 'The transaction has already been reversed.'];
    } else {
      this.reversedReceipts.add(receipt);
    }
    const reversalReceipt = resultCode === 0 ? `R${randomBytes(4).toString('hex').toUpperCase()}` : undefined;
    this.reversals.set(originatorConversationId, {
      originatorConversationId,
      resultUrl: body.ResultURL as string,
      result: {
        ResultType: 0, ResultCode: resultCode, ResultDesc: resultDesc, OriginatorConversationID: originatorConversationId,
        ConversationID: conversationId, TransactionID: reversalReceipt ?? receipt,
      },
      ...(reversalReceipt ? { reversed: known, receipt: reversalReceipt, at: Date.now() } : {}),
      ...(this.loseReversalResults ? { lost: true } : {}),
    });
    return { status: 200, body: { OriginatorConversationID: originatorConversationId, ConversationID: conversationId, ResponseCode: '0', ResponseDescription: 'Accept the service request successfully.' } };
  }

  private b2c(body: Record<string, unknown>): FakeAnswer {
    for (const name of ['InitiatorName', 'SecurityCredential', 'ResultURL', 'QueueTimeOutURL', 'Remarks']) {
      if (typeof body[name] !== 'string' || body[name] === '') return error(400, '400.002.02', `Bad Request - Invalid ${name}`);
    }
    if (!['SalaryPayment', 'BusinessPayment', 'PromotionPayment'].includes(body.CommandID as string)) return error(400, '400.002.02', 'Bad Request - Invalid CommandID');
    if (String(body.PartyA) !== this.config.shortcode) return error(400, '400.002.02', 'Bad Request - Invalid PartyA');
    const phone = String(body.PartyB ?? '');
    if (!/^254[17]\d{8}$/.test(phone)) return error(400, '400.002.02', 'Bad Request - Invalid PartyB');
    const amount = Number(body.Amount);
    if (!Number.isInteger(amount) || amount < 10) return error(400, '400.002.02', 'Bad Request - Invalid Amount');
    const originatorConversationId = typeof body.OriginatorConversationID === 'string' && body.OriginatorConversationID !== '' ? body.OriginatorConversationID : `${randomBytes(4).toString('hex')}-b2c`;
    const conversationId = `AG_${eat(Date.now()).slice(0, 8)}_${randomBytes(8).toString('hex')}`;
    const initiatorOk = body.InitiatorName === this.config.initiatorName && body.SecurityCredential === this.config.securityCredential;
    const resultCode = initiatorOk ? (this.b2cOutcomes.get(phone) ?? 0) : 2001;
    const payment: B2c = { originatorConversationId, conversationId, phone, amount, resultUrl: body.ResultURL as string, resultCode, at: Date.now(), ...(resultCode === 0 ? { receipt: receiptNo() } : {}) };
    this.b2cPayments.set(conversationId, payment);
    if (!this.loseB2cResults) {
      const result = {
        ResultType: 0,
        ResultCode: resultCode,
        ResultDesc: RESULT_DESCRIPTIONS[resultCode] ?? 'The transaction failed.',
        OriginatorConversationID: originatorConversationId,
        ConversationID: conversationId,
        TransactionID: payment.receipt ?? placeholder(),
        ...(payment.receipt
          ? { ResultParameters: { ResultParameter: [{ Key: 'TransactionAmount', Value: amount }, { Key: 'TransactionReceipt', Value: payment.receipt }, { Key: 'ReceiverPartyPublicName', Value: `${phone} - Fake Recipient` }] } }
          : {}),
      };
      setImmediate(() => void sendCallback(payment.resultUrl, { Result: result }).catch(() => undefined));
    }
    return { status: 200, body: { ConversationID: conversationId, OriginatorConversationID: originatorConversationId, ResponseCode: '0', ResponseDescription: 'Accept the service request successfully.' } };
  }

  /**
   * Daraja's Transaction Status query: checked, answered at once, its Result POSTed
   * to `ResultURL` afterwards (unless lost). What it finds is described in the header.
   */
  private transactionStatus(body: Record<string, unknown>): FakeAnswer {
    this.transactionStatusQueries++;
    const bad = (name: string) => error(400, '400.003.02', `Bad Request - Invalid ${name}`);
    for (const name of ['Initiator', 'SecurityCredential']) {
      if (typeof body[name] !== 'string' || body[name] === '') return bad(name);
    }
    if (body.CommandID !== 'TransactionStatusQuery') return bad('CommandID');
    const given = (name: string) => (typeof body[name] === 'string' && body[name] !== '' ? (body[name] as string) : undefined);
    const transactionId = given('TransactionID');
    const conversation = given('OriginalConversationID') ?? given('OriginatorConversationID');
    if (!transactionId && !conversation) return bad('TransactionID');
    if ((typeof body.PartyA !== 'string' && typeof body.PartyA !== 'number') || String(body.PartyA) !== this.config.shortcode) return bad('PartyA');
    if (String(body.IdentifierType) !== '4') return bad('IdentifierType');
    for (const name of ['ResultURL', 'QueueTimeOutURL']) {
      if (typeof body[name] !== 'string' || !/^https?:\/\//.test(body[name] as string)) return bad(name);
    }
    if (typeof body.Remarks !== 'string' || body.Remarks === '' || body.Remarks.length > 100) return bad('Remarks');
    if (body.Occasion !== undefined && (typeof body.Occasion !== 'string' || body.Occasion.length > 100)) return bad('Occasion');

    const originatorConversationId = `${randomBytes(4).toString('hex')}-${randomBytes(4).toString('hex')}-1`;
    const conversationId = `AG_${eat(Date.now()).slice(0, 8)}_${randomBytes(8).toString('hex')}`;
    const referenceData = { ReferenceItem: typeof body.Occasion === 'string' && body.Occasion !== '' ? { Key: 'Occasion', Value: body.Occasion } : { Key: 'Occasion' } };
    const head = { ResultType: 0, OriginatorConversationID: originatorConversationId, ConversationID: conversationId };
    let result: Record<string, unknown>;
    const found = this.lookUp(transactionId, conversation);
    if (body.Initiator !== this.config.initiatorName || body.SecurityCredential !== this.config.securityCredential) {
      result = { ...head, ResultCode: 2001, ResultDesc: RESULT_DESCRIPTIONS[2001], TransactionID: placeholder(), ReferenceData: referenceData };
    } else if (!found) {
      result = { ...head, ResultCode: MPESA_STATUS_NOT_FOUND.code, ResultDesc: MPESA_STATUS_NOT_FOUND.desc, TransactionID: placeholder(), ReferenceData: referenceData };
    } else {
      result = {
        ...head,
        ResultCode: 0,
        ResultDesc: RESULT_DESCRIPTIONS[0],
        TransactionID: placeholder(found.receipt),
        ResultParameters: { ResultParameter: this.statusParameters(found) },
        ReferenceData: referenceData,
      };
    }
    const query: StatusQuery = {
      originatorConversationId,
      conversationId,
      resultUrl: body.ResultURL as string,
      result: { Result: result },
      lost: this.loseStatusResults,
      sent: false,
    };
    this.statusQueries.set(originatorConversationId, query);
    if (!query.lost) {
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        void this.deliverStatusResult(originatorConversationId);
      }, this.statusResultDelayMs);
      this.timers.add(timer);
    }
    return { status: 200, body: { OriginatorConversationID: originatorConversationId, ConversationID: conversationId, ResponseCode: '0', ResponseDescription: 'Accept the service request successfully.' } };
  }

  /** The completed transaction a status query names: a paid push, or a reversal made. */
  private lookUp(transactionId: string | undefined, conversation: string | undefined): StatusFound | null {
    for (const push of this.pushes.values()) {
      if (push.resultCode !== 0 || !push.receipt) continue;
      if ((transactionId && push.receipt === transactionId) || (conversation && push.checkoutRequestId === conversation)) {
        return { kind: 'payment', receipt: push.receipt, phone: push.phone, amount: push.amount, transactionType: push.transactionType, initiatedAt: push.createdAt ?? Date.now(), finalisedAt: push.settledAt ?? Date.now(), conversation: push.checkoutRequestId };
      }
    }
    for (const payment of this.b2cPayments.values()) {
      if (!payment.receipt) continue;
      if ((transactionId && payment.receipt === transactionId) || (conversation && payment.originatorConversationId === conversation)) {
        return { kind: 'payout', receipt: payment.receipt, phone: payment.phone, amount: payment.amount, initiatedAt: payment.at, finalisedAt: payment.at, conversation: payment.originatorConversationId };
      }
    }
    for (const reversal of this.reversals.values()) {
      if (!reversal.receipt || !reversal.reversed) continue;
      if ((transactionId && reversal.receipt === transactionId) || (conversation && reversal.originatorConversationId === conversation)) {
        const at = reversal.at ?? Date.now();
        return { kind: 'reversal', receipt: reversal.receipt, phone: reversal.reversed.phone, amount: reversal.reversed.amount, initiatedAt: at, finalisedAt: at, conversation: reversal.originatorConversationId };
      }
    }
    return null;
  }

  private statusParameters(found: StatusFound): Array<{ Key: string; Value?: unknown }> {
    const business = `${this.config.shortcode} - Fake Business`;
    const payer = `${found.phone} - Fake Payer`;
    const payment = found.kind === 'payment';
    const reason = payment ? (found.transactionType === 'CustomerBuyGoodsOnline' ? 'Buy Goods Online' : 'Pay Bill Online') : found.kind === 'payout' ? 'Business Payment' : 'Reversal';
    return [
      { Key: 'DebitPartyName', Value: payment ? payer : business },
      { Key: 'CreditPartyName', Value: payment ? business : payer },
      { Key: 'OriginatorConversationID', Value: found.conversation },
      { Key: 'InitiatedTime', Value: eat(found.initiatedAt) },
      { Key: 'DebitPartyCharges', Value: '' },
      { Key: 'TransactionReason' },
      { Key: 'ReasonType', Value: reason },
      { Key: 'TransactionStatus', Value: 'Completed' },
      { Key: 'FinalisedTime', Value: eat(found.finalisedAt) },
      { Key: 'Amount', Value: String(found.amount) },
      { Key: 'ConversationID', Value: `AG_${eat(found.initiatedAt).slice(0, 8)}_${found.receipt.toLowerCase()}` },
      { Key: 'ReceiptNo', Value: found.receipt },
    ];
  }
}

interface StatusFound {
  kind: 'payment' | 'reversal' | 'payout';
  receipt: string;
  phone: string;
  amount: number;
  transactionType?: string;
  initiatedAt: number;
  finalisedAt: number;
  conversation: string;
}

/** An M-Pesa receipt: ten upper-case letters and digits, as `QK12ABC345`. */
function receiptNo(): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
  return [...randomBytes(10)].map((b) => alphabet[b % alphabet.length]).join('');
}

/** The placeholder `TransactionID` of a status Result: the receipt's first three characters and seven zeros. */
function placeholder(receipt?: string): string {
  return `${(receipt ?? receiptNo()).slice(0, 3)}0000000`;
}

/** `YYYYMMDDHHmmss` in East Africa Time (UTC+3). */
function eat(ms: number): string {
  return new Date(ms + 3 * 3600_000).toISOString().replace(/[-T:]/g, '').slice(0, 14);
}

function error(status: number, errorCode: string, errorMessage: string): FakeAnswer {
  return { status, body: { requestId: randomBytes(6).toString('hex'), errorCode, errorMessage } };
}
