/**
 * A local MTN MoMo Open API (Collection and Disbursement), written from MTN's
 * developer portal documentation (the connector, worker/operators/mtn-momo/, names
 * the sources). Strict where the documentation is clear:
 *
 * - `POST /{product}/token/`: HTTP Basic `userId:apiKey` and the product's
 *   `Ocp-Apim-Subscription-Key`; a missing or wrong subscription key is APIM's 401
 *   "Access denied due to invalid subscription key…", wrong credentials 401
 *   `{"error":"login_failed"}`. Answers `{access_token, token_type, expires_in}`.
 * - Every other call: a Bearer token issued for that product (else 401), its
 *   subscription key, `X-Target-Environment` equal to the configured one (else 403
 *   NOT_ALLOWED_TARGET_ENVIRONMENT), `X-Reference-Id` a UUID version 4 on creations
 *   (else 400), a reused reference 409 RESOURCE_ALREADY_EXIST, an unknown one 404
 *   RESOURCE_NOT_FOUND on the status GET.
 * - A request-to-pay is PENDING until the test settles it (`settle`), as the payer
 *   does on the phone; then it takes the outcome set for the payer's number and the
 *   fake sends MTN's callback (a PUT of the transfer's body to `X-Callback-Url`),
 *   unless callbacks are dropped, as MTN's single unretried callback can be.
 *
 * Misbehaviours, each off until a test asks (the shared ones are in fake-server.ts):
 *
 * - Throttling (`server.throttleNext`): MTN's gateway is Azure API Management (its
 *   401 bodies above are APIM's); APIM's `rate-limit` policy answers 429 with
 *   `Retry-After` and `{"statusCode":429,"message":"Rate limit is exceeded. Try again
 *   in N seconds."}` (Microsoft Learn, "Implement rate limiting in Azure API
 *   Management"). That MTN keeps APIM's default body is inferred, not stated by MTN.
 * - The sandbox's currency (`enforceSandboxCurrency = true`, with `targetEnvironment
 *   'sandbox'`): a requesttopay or refund in any currency but EUR is answered HTTP
 *   500 `{"code":"INVALID_CURRENCY","message":"Currency not supported."}`. MTN's
 *   sandbox notebook (github.com/MoMoOpenAPI/MoMoOpenAPI_SandBox, home.md) states
 *   "use the currency as EUR in the SandBox" and tests a 500 whose `message` ends
 *   "Currency not supported."; the `code` is as observed and published by a public
 *   MoMo client's README, not by MTN. Off by default: the existing tests pay XOF in
 *   'sandbox'. `configError('currency')` refuses every currency so, in any environment.
 * - The sandbox's test numbers (always on in 'sandbox', only for a payer with no
 *   `outcomes` entry), from the same notebook's table: 46733123450 Failed,
 *   46733123451 Rejected, 46733123452 Timeout, 46733123454 Pending, any other number
 *   (its example 56733123453) Success. Applied when the test settles the transfer;
 *   the `reason` codes (INTERNAL_PROCESSING_ERROR, APPROVAL_REJECTED, EXPIRED) are
 *   MTN's documented ErrorReason values, their pairing with the numbers is inferred;
 *   the Pending number stays PENDING (no callback) however often it is settled.
 * - `approveAfter(referenceId, ms)`: the payer approves late (`settle` after `ms`).
 * - `autoSettleRefunds = true`: a refund is SUCCESSFUL as soon as it is created (its
 *   callback follows); otherwise it is PENDING until `settle(refundReference)`.
 *
 * Disbursement `transfer` (payouts), from MTN's Disbursement swagger (POST
 * `/disbursement/v1_0/transfer` with `X-Reference-Id`, body `{amount, currency,
 * externalId, payee: {partyIdType: "MSISDN", partyId}, payerMessage, payeeNote}`, 202;
 * `GET /disbursement/v1_0/transfer/{referenceId}` with `status` and, when FAILED, a
 * `reason`). A transfer is SUCCESSFUL as soon as it is created (its callback
 * follows), or FAILED with the reason set for the payee in `payeeOutcomes`; with
 * `holdTransfers = true` it stays PENDING until `settle`. `paidTo(externalId)`
 * counts the SUCCESSFUL transfers of one payout, whatever their references.
 */
import { randomBytes } from 'node:crypto';
import { FakeServer, header, sendCallback, type FakeAnswer, type FakeRequest } from './fake-server.js';

export interface MtnCredentials {
  subscriptionKey: string;
  userId: string;
  apiKey: string;
}

export type MtnOutcome = { status: 'SUCCESSFUL' } | { status: 'FAILED'; reason: string };

interface Transfer {
  product: 'collection' | 'disbursement';
  /** A disbursement's: a refund, or a transfer to a payee (a payout). */
  kind?: 'refund' | 'transfer';
  referenceId: string;
  body: Record<string, unknown>;
  payer: string;
  status: 'PENDING' | 'SUCCESSFUL' | 'FAILED';
  reason?: string;
  financialTransactionId?: string;
  callbackUrl?: string;
}

/**
 * MTN's sandbox test payers (MoMoOpenAPI_SandBox home.md, "Test GetPaid Functions
 * Status"): the outcome a settle gives them; 'PENDING' never resolves. Any other
 * number succeeds.
 */
export const MTN_SANDBOX_PAYERS: Readonly<Record<string, MtnOutcome | 'PENDING'>> = {
  '46733123450': { status: 'FAILED', reason: 'INTERNAL_PROCESSING_ERROR' },
  '46733123451': { status: 'FAILED', reason: 'APPROVAL_REJECTED' },
  '46733123452': { status: 'FAILED', reason: 'EXPIRED' },
  '46733123454': 'PENDING',
};

export interface MtnFakeOptions {
  enforceSandboxCurrency?: boolean;
  autoSettleRefunds?: boolean;
}

/** MTN's sandbox answer to a currency other than EUR (HTTP 500). */
export const MTN_CURRENCY_NOT_SUPPORTED = { code: 'INVALID_CURRENCY', message: 'Currency not supported.' } as const;

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;
const INVALID_KEY = { statusCode: 401, message: 'Access denied due to invalid subscription key. Make sure to provide a valid key for an active subscription.' };

export class MtnMomoFake {
  readonly server: FakeServer;
  readonly transfers = new Map<string, Transfer>();
  /** The outcome a payer's number gets when settled (default SUCCESSFUL). */
  readonly outcomes = new Map<string, MtnOutcome>();
  /** Callbacks are recorded but not sent while true. */
  dropCallbacks = false;
  readonly callbacksSent: string[] = [];
  /** Lifetime announced with each token, in seconds. */
  tokenExpiresIn = 3600;
  tokensIssued = 0;
  /** With `targetEnvironment` 'sandbox': a currency other than EUR is MTN's sandbox 500. */
  enforceSandboxCurrency = false;
  /** A refund is SUCCESSFUL as soon as it is created (else PENDING until `settle`). */
  autoSettleRefunds = false;
  /** A transfer stays PENDING until `settle` (else it is decided as soon as it is created). */
  holdTransfers = false;
  /** Set: a decided transfer's callback is sent first, and its 202 given this many ms after (a callback that overtakes the answer). */
  callbackBeforeAnswerMs: number | null = null;
  /** The FAILED reason a payee's number gets on a transfer (default SUCCESSFUL). */
  readonly payeeOutcomes = new Map<string, string>();
  private configErrorKind: 'currency' | null = null;
  private readonly tokens = new Map<string, 'collection' | 'disbursement'>();
  private readonly timers = new Set<NodeJS.Timeout>();

  constructor(
    readonly targetEnvironment: string,
    private readonly credentials: { collection: MtnCredentials; disbursement: MtnCredentials },
    options: MtnFakeOptions = {},
  ) {
    this.enforceSandboxCurrency = options.enforceSandboxCurrency ?? false;
    this.autoSettleRefunds = options.autoSettleRefunds ?? false;
    this.server = new FakeServer((request) => this.route(request), {
      throttleBody: (retryAfterS: number) => ({ statusCode: 429, message: `Rate limit is exceeded. Try again in ${retryAfterS} seconds.` }),
    });
  }

  /**
   * A configuration error on MTN's side: with 'currency', every requesttopay and
   * refund is answered MTN's 500 "Currency not supported." whatever the
   * environment; `null` ends it.
   */
  configError(kind: 'currency' | null): void {
    this.configErrorKind = kind;
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

  get url(): string {
    return this.server.url;
  }

  /** How many creation requests (POSTs, whatever their answer) named this reference. */
  requestsFor(referenceId: string): number {
    return this.server.log.filter((r) => r.method === 'POST' && header(r, 'x-reference-id') === referenceId).length;
  }

  /** The same count as `requestsFor`: the POSTs that named this X-Reference-Id. */
  transfersPer(referenceId: string): number {
    return this.requestsFor(referenceId);
  }

  /** How many transfers to a payee named this `externalId` and succeeded. */
  paidTo(externalId: string): number {
    return [...this.transfers.values()].filter((t) => t.kind === 'transfer' && t.body.externalId === externalId && t.status === 'SUCCESSFUL').length;
  }

  /** The payer answers (or the refund is processed): the transfer takes its outcome and MTN calls back. */
  async settle(referenceId: string): Promise<void> {
    const transfer = this.transfers.get(referenceId);
    if (!transfer) throw new Error(`no transfer ${referenceId}`);
    if (!this.decide(transfer)) return;
    await this.notify(transfer);
  }

  /** The payer approves late: `settle` after `ms`; resolves once settled. */
  approveAfter(referenceId: string, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        this.settle(referenceId).then(resolve, () => resolve());
      }, ms);
      this.timers.add(timer);
    });
  }

  /** The outcome a payer's number gets: the test's, else the sandbox's test numbers, else SUCCESSFUL. */
  private outcomeFor(transfer: Transfer): MtnOutcome | 'PENDING' {
    if (transfer.kind === 'transfer') {
      const reason = this.payeeOutcomes.get(transfer.payer);
      return reason ? { status: 'FAILED', reason } : { status: 'SUCCESSFUL' };
    }
    if (transfer.product === 'disbursement') return { status: 'SUCCESSFUL' };
    const set = this.outcomes.get(transfer.payer);
    if (set) return set;
    if (this.targetEnvironment === 'sandbox') return MTN_SANDBOX_PAYERS[transfer.payer] ?? { status: 'SUCCESSFUL' };
    return { status: 'SUCCESSFUL' };
  }

  /** Applies the transfer's outcome; false when it stays PENDING. */
  private decide(transfer: Transfer): boolean {
    const outcome = this.outcomeFor(transfer);
    if (outcome === 'PENDING') return false;
    transfer.status = outcome.status;
    if (outcome.status === 'FAILED') transfer.reason = outcome.reason;
    else transfer.financialTransactionId = String(1_000_000_000 + this.transfers.size);
    return true;
  }

  /** MTN's one callback: a PUT of the transfer to its X-Callback-Url, unless dropped. */
  private async notify(transfer: Transfer): Promise<void> {
    if (transfer.callbackUrl && !this.dropCallbacks) {
      this.callbacksSent.push(transfer.referenceId);
      await sendCallback(transfer.callbackUrl, this.view(transfer), 'PUT').catch(() => undefined);
    }
  }

  private view(transfer: Transfer): Record<string, unknown> {
    return {
      ...transfer.body,
      ...(transfer.financialTransactionId ? { financialTransactionId: transfer.financialTransactionId } : {}),
      status: transfer.status,
      ...(transfer.reason ? { reason: { code: transfer.reason, message: transfer.reason.toLowerCase().replace(/_/g, ' ') } } : {}),
    };
  }

  private route(request: FakeRequest): FakeAnswer | Promise<FakeAnswer> {
    const match = /^\/(collection|disbursement)\/(.*)$/.exec(request.path);
    if (!match) return { status: 404, body: { statusCode: 404, message: 'Resource not found' } };
    const product = match[1] as 'collection' | 'disbursement';
    const rest = match[2]!;
    const credentials = this.credentials[product];
    if (header(request, 'ocp-apim-subscription-key') !== credentials.subscriptionKey) return { status: 401, body: INVALID_KEY };

    if (rest === 'token/' && request.method === 'POST') {
      const basic = Buffer.from(`${credentials.userId}:${credentials.apiKey}`).toString('base64');
      if (header(request, 'authorization') !== `Basic ${basic}`) return { status: 401, body: { error: 'login_failed' } };
      const token = randomBytes(24).toString('base64url');
      this.tokens.set(token, product);
      this.tokensIssued++;
      return { status: 200, body: { access_token: token, token_type: 'access_token', expires_in: this.tokenExpiresIn } };
    }

    const bearer = /^Bearer (.+)$/.exec(header(request, 'authorization') ?? '')?.[1];
    if (!bearer || this.tokens.get(bearer) !== product) return { status: 401, body: { code: 'UNAUTHORIZED', message: 'Authorization failed. Insufficient permissions.' } };
    if (header(request, 'x-target-environment') !== this.targetEnvironment) {
      return { status: 403, body: { code: 'NOT_ALLOWED_TARGET_ENVIRONMENT', message: 'Access to target environment is forbidden.' } };
    }

    const creation = (product === 'collection' && rest === 'v1_0/requesttopay') || (product === 'disbursement' && (rest === 'v1_0/refund' || rest === 'v1_0/transfer'));
    if (creation && request.method === 'POST') return this.create(product, request, rest === 'v1_0/transfer' ? 'transfer' : rest === 'v1_0/refund' ? 'refund' : undefined);
    const status = /^v1_0\/(requesttopay|refund|transfer)\/([^/]+)$/.exec(rest);
    if (status && request.method === 'GET') {
      const transfer = this.transfers.get(decodeURIComponent(status[2]!));
      const kind = status[1] === 'requesttopay' ? undefined : status[1];
      if (!transfer || transfer.product !== product || (product === 'disbursement' && (transfer.kind ?? 'refund') !== kind)) return { status: 404, body: { code: 'RESOURCE_NOT_FOUND', message: 'Requested resource was not found.' } };
      return { status: 200, body: this.view(transfer) };
    }
    return { status: 404, body: { statusCode: 404, message: 'Resource not found' } };
  }

  private create(product: 'collection' | 'disbursement', request: FakeRequest, kind?: 'refund' | 'transfer'): FakeAnswer | Promise<FakeAnswer> {
    const referenceId = header(request, 'x-reference-id') ?? '';
    if (!UUID_V4.test(referenceId)) return { status: 400, body: { code: 'INVALID_REFERENCE_ID', message: 'X-Reference-Id must be a UUID version 4.' } };
    const body = (request.body ?? {}) as Record<string, unknown>;
    const payer = body.payer as { partyIdType?: unknown; partyId?: unknown } | undefined;
    const amountOk = typeof body.amount === 'string' && /^\d+(\.\d{1,2})?$/.test(body.amount);
    const currencyOk = typeof body.currency === 'string' && /^[A-Z]{3}$/.test(body.currency);
    const payee = body.payee as { partyIdType?: unknown; partyId?: unknown } | undefined;
    const party = kind === 'transfer' ? payee : payer;
    const payerOk = kind === 'refund' || (party?.partyIdType === 'MSISDN' && typeof party.partyId === 'string' && /^\d{8,15}$/.test(party.partyId));
    const refundOk = kind !== 'refund' || typeof body.referenceIdToRefund === 'string';
    if (!amountOk || !currencyOk || !payerOk || !refundOk || typeof body.externalId !== 'string') {
      return { status: 400, body: { code: 'INVALID_REQUEST', message: 'Request does not follow the specification.' } };
    }
    if (this.configErrorKind === 'currency' || (this.enforceSandboxCurrency && this.targetEnvironment === 'sandbox' && body.currency !== 'EUR')) {
      return { status: 500, body: { ...MTN_CURRENCY_NOT_SUPPORTED } };
    }
    if (this.transfers.has(referenceId)) return { status: 409, body: { code: 'RESOURCE_ALREADY_EXIST', message: 'Duplicated reference id. Creation of resource failed.' } };
    if (kind === 'refund') {
      const original = this.transfers.get(body.referenceIdToRefund as string);
      if (!original || original.status !== 'SUCCESSFUL') return { status: 404, body: { code: 'RESOURCE_NOT_FOUND', message: 'Requested resource was not found.' } };
    }
    const transfer: Transfer = {
      product,
      referenceId,
      body,
      ...(kind ? { kind } : {}),
      payer: kind === 'refund' ? '' : (party!.partyId as string),
      status: 'PENDING',
      callbackUrl: header(request, 'x-callback-url'),
    };
    this.transfers.set(referenceId, transfer);
    if ((kind === 'refund' && this.autoSettleRefunds) || (kind === 'transfer' && !this.holdTransfers)) {
      this.decide(transfer);
      const late = this.callbackBeforeAnswerMs;
      if (late !== null) return this.notify(transfer).then(() => new Promise<FakeAnswer>((resolve) => setTimeout(() => resolve({ status: 202 }), late)));
      // The callback follows the 202, as MTN's does.
      setImmediate(() => void this.notify(transfer));
    }
    return { status: 202 };
  }
}
