/**
 * A local Safaricom Daraja (OAuth, M-Pesa Express, Reversal), written from Daraja's
 * API pages (the connector, worker/operators/mpesa.ts, names them). Strict where
 * they are clear:
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
 *   test delivers it.
 *
 * The payer is played by the test: `settle` applies the outcome set for the payer's
 * number (`ResultCode` 0 by default) and POSTs Daraja's `stkCallback` to the
 * push's `CallBackURL`, unless callbacks are dropped.
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
}

interface Reversal {
  originatorConversationId: string;
  resultUrl: string;
  result: Record<string, unknown>;
}

const RESULT_DESCRIPTIONS: Record<number, string> = {
  0: 'The service request is processed successfully.',
  1: 'The balance is insufficient for the transaction.',
  1032: 'Request cancelled by user',
  1037: 'DS timeout user cannot be reached',
  2001: 'The initiator information is invalid.',
};

export class MpesaFake {
  readonly server: FakeServer;
  readonly pushes = new Map<string, Push>();
  readonly reversals = new Map<string, Reversal>();
  readonly reversedReceipts = new Set<string>();
  /** The `ResultCode` a payer's number gets when settled (default 0). */
  readonly outcomes = new Map<string, number>();
  dropCallbacks = false;
  tokensIssued = 0;
  private readonly tokens = new Set<string>();

  constructor(private readonly config: MpesaFakeConfig) {
    this.server = new FakeServer((request) => this.route(request));
  }

  async start(): Promise<this> {
    await this.server.start();
    return this;
  }

  stop(): Promise<void> {
    return this.server.stop();
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

  /** The payer answers the push: its result is set, and Daraja calls back. */
  async settle(checkoutRequestId: string): Promise<void> {
    const push = this.pushes.get(checkoutRequestId);
    if (!push) throw new Error(`no push ${checkoutRequestId}`);
    push.resultCode = this.outcomes.get(push.phone) ?? 0;
    if (push.resultCode === 0) push.receipt = randomBytes(5).toString('hex').toUpperCase();
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

  /** Sends a reversal's `Result` to its `ResultURL` (Daraja's asynchronous answer). */
  async deliverReversal(originatorConversationId: string): Promise<void> {
    const reversal = this.reversals.get(originatorConversationId);
    if (!reversal) throw new Error(`no reversal ${originatorConversationId}`);
    await sendCallback(reversal.resultUrl, { Result: reversal.result }).catch(() => undefined);
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
    this.reversals.set(originatorConversationId, {
      originatorConversationId,
      resultUrl: body.ResultURL as string,
      result: {
        ResultType: 0, ResultCode: resultCode, ResultDesc: resultDesc, OriginatorConversationID: originatorConversationId,
        ConversationID: conversationId, TransactionID: resultCode === 0 ? `R${randomBytes(4).toString('hex').toUpperCase()}` : receipt,
      },
    });
    return { status: 200, body: { OriginatorConversationID: originatorConversationId, ConversationID: conversationId, ResponseCode: '0', ResponseDescription: 'Accept the service request successfully.' } };
  }
}

function error(status: number, errorCode: string, errorMessage: string): FakeAnswer {
  return { status, body: { requestId: randomBytes(6).toString('hex'), errorCode, errorMessage } };
}
