/**
 * A local Wave Checkout API (and the Balance API's transaction list), written from
 * Wave's API reference (docs.wave.com/checkout, /balance-api) and webhook guide (the
 * connector, worker/operators/wave/, names them). Strict where they are clear:
 *
 * - Every call needs `Authorization: Bearer <api key>`: none is 401
 *   `missing-auth-header`, another scheme 401 `invalid-auth`, an unknown key 401
 *   `no-matching-api-key`.
 * - `POST /v1/checkout/sessions`: `amount` (a decimal string), `currency`,
 *   `success_url` and `error_url` (https) are required, else 400
 *   `request-validation-error`; the same `idempotency-key` returns the session it
 *   created first and creates nothing.
 * - `GET /v1/checkout/sessions/:id` (404 `checkout-session-not-found`), `GET
 *   /v1/checkout/sessions/search?client_reference=…` (`{result: [...]}`).
 * - `POST /v1/checkout/sessions/:id/refund`: only a succeeded session (else 400
 *   `checkout-refund-failed`); the same `idempotency-key` replays the first answer
 *   (an empty 200).
 * - `POST /v1/checkout/sessions/:id/expire` (listed among the Checkout endpoints): an
 *   open session becomes `checkout_status: "expired"` (`payment_status:
 *   "cancelled"`, `when_completed` set) and the answer is an empty 200 (as the
 *   reference's clients read it, e.g. wave-api-client's `expireSession`: "An empty
 *   response upon success"). A session that is not open (paid, or already expired) is
 *   refused HTTP 409 `{code: "checkout-session-not-open", message}`: INFERRED, the
 *   public material we could read names no code for this refusal (a published
 *   summary of the reference says "409 if the session is already completed or
 *   expired"); change `expireRefusal` to try another. Counted in `expireCalls`.
 *   No webhook: Wave's guide lists only checkout.session.completed and
 *   checkout.session.payment_failed.
 * - After a refund the checkout session is unchanged (still `payment_status:
 *   "succeeded"`): the documented session object has no refund field and its
 *   `payment_status` is only processing, cancelled or succeeded. The refund shows in
 *   the Balance API, `GET /v1/transactions?date=YYYY-MM-DD` (`{page_info, date,
 *   items}`), as an item with `transaction_type: "api_checkout_refund"`, a negative
 *   `amount`, `is_reversal: true` and the session's `checkout_api_session_id`
 *   (beside the payment's `api_checkout` item), as wave-api-client types the
 *   documented transaction list. So a refund whose answer was lost is settled by
 *   asking the refund again under the same `idempotency-key` (the first answer
 *   replayed), or by that transaction list, not by the session.
 *
 * The payer is played by the test: `pay`, `failPayment` / `failTry` (a failed try:
 * the session stays open with `last_payment_error`, the payer may try again) and
 * `expire` (the session's own expiry); each sends the webhook Wave would, signed with
 * the webhook secret, unless webhooks are dropped (expiry sends none).
 *
 * Payouts, from Wave's Payout API reference (docs.wave.com/payout): `POST /v1/payout`
 * with `currency`, `receive_amount` (a decimal string) and `mobile` (E.164) required,
 * `client_reference` and `payment_reason` optional, and an `idempotency-key` (a
 * repeated key answers the first payout and sends nothing); `GET /v1/payout/:id` (404
 * `payout-not-found`, inferred); `GET /v1/payouts/search?client_reference=…`
 * (`{result: [...]}`). A payout is `succeeded` at once, or `failed` with the
 * `payout_error: {error_code, error_message}` set for its mobile in `payoutErrors`;
 * with `holdPayouts = true` it stays `processing` until `settlePayout`.
 * `paidFor(clientReference)` counts the succeeded payouts of one reference.
 *
 * Misbehaviours, each off until a test asks (the shared ones are in fake-server.ts):
 *
 * - Throttling (`server.throttleNext`): 429 with `{code: "too-many-requests",
 *   message}`. `too-many-requests` is among the error codes Wave documents for its
 *   Payout API (as wave-api-client lists them); the Checkout reference names no
 *   rate-limit code, and the 429 status is inferred.
 * - `honourIdempotencyKey = false`: the `idempotency-key` header is ignored, so a
 *   repeated session create makes a new session and a repeated refund of a refunded
 *   session answers 400 `checkout-refund-failed`.
 * - A refund whose answer is lost: `server.dropAnswerNext(1, (r) =>
 *   r.path.endsWith('/refund'))` refunds (see above), the caller sees a reset socket.
 */
import { randomBytes } from 'node:crypto';
import { signWaveWebhook } from '../../worker/operators/wave/callbacks.js';
import { FakeServer, header, sendCallback, type FakeAnswer, type FakeRequest } from './fake-server.js';

export interface WaveSession {
  id: string;
  amount: string;
  currency: string;
  business_name: string;
  checkout_status: 'open' | 'complete' | 'expired';
  payment_status: 'processing' | 'cancelled' | 'succeeded';
  client_reference: string | null;
  success_url: string;
  error_url: string;
  last_payment_error: { code: string; message: string } | null;
  transaction_id?: string;
  wave_launch_url: string;
  /** When the session was completed or expired (not for open sessions). */
  when_completed?: string;
  when_created: string;
  when_expires: string;
}

/** An item of the Balance API's transaction list (`GET /v1/transactions`). */
export interface WaveTransaction {
  timestamp: string;
  transaction_id: string;
  transaction_type: 'api_checkout' | 'api_checkout_refund';
  amount: string;
  fee: string;
  currency: string;
  is_reversal: boolean;
  client_reference?: string;
  checkout_api_session_id: string;
}

interface WavePayout {
  id: string;
  currency: string;
  receive_amount: string;
  fee: string;
  mobile: string;
  name: string | null;
  client_reference: string | null;
  payment_reason: string | null;
  status: 'processing' | 'succeeded' | 'failed' | 'reversed';
  timestamp: string;
  payout_error?: { error_code: string; error_message: string };
}

export class WaveFake {
  readonly server: FakeServer;
  readonly sessions = new Map<string, WaveSession>();
  readonly refunded = new Set<string>();
  readonly payouts = new Map<string, WavePayout>();
  /** The `payout_error.error_code` a recipient's mobile gets (default: paid). */
  readonly payoutErrors = new Map<string, string>();
  /** Payouts stay `processing` until `settlePayout` while true. */
  holdPayouts = false;
  /** Where Wave sends webhooks (registered in the Business Portal). */
  webhookUrl: string | null = null;
  dropWebhooks = false;
  readonly webhooksSent: Array<{ type: string; body: string; signature: string }> = [];
  /** The wallet's transactions, as the Balance API lists them. */
  readonly transactions: WaveTransaction[] = [];
  /** `POST …/expire` calls that reached the API (whatever their answer). */
  expireCalls = 0;
  /** A repeated `idempotency-key` replays the first answer (Wave's documented behaviour) while true. */
  honourIdempotencyKey = true;
  /** The answer to expiring a session that is not open (see the header: inferred). */
  expireRefusal: FakeAnswer = { status: 409, body: { code: 'checkout-session-not-open', message: 'The checkout session is not open.' } };
  private readonly replays = new Map<string, FakeAnswer>();

  constructor(private readonly apiKey: string, private readonly webhookSecret: string) {
    this.server = new FakeServer((request) => this.route(request), {
      throttleBody: { code: 'too-many-requests', message: 'Too many requests. Please retry later.' },
    });
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

  sessionsFor(clientReference: string): WaveSession[] {
    return [...this.sessions.values()].filter((s) => s.client_reference === clientReference);
  }

  async pay(sessionId: string): Promise<void> {
    const session = this.session(sessionId);
    const now = new Date().toISOString();
    Object.assign(session, { checkout_status: 'complete', payment_status: 'succeeded', transaction_id: `T_${randomBytes(6).toString('hex').toUpperCase()}`, when_completed: now });
    this.transactions.push({
      timestamp: now, transaction_id: session.transaction_id!, transaction_type: 'api_checkout', amount: session.amount, fee: '0', currency: session.currency,
      is_reversal: false, ...(session.client_reference ? { client_reference: session.client_reference } : {}), checkout_api_session_id: session.id,
    });
    await this.webhook('checkout.session.completed', session);
  }

  /** A failed try: the session stays open with `last_payment_error` (the payer may try again), and Wave's webhook. */
  async failPayment(sessionId: string, code: string): Promise<void> {
    const session = this.session(sessionId);
    session.last_payment_error = { code, message: code.replace(/-/g, ' ') };
    await this.webhook('checkout.session.payment_failed', session);
  }

  /** The same as `failPayment`. */
  failTry(sessionId: string, code: string): Promise<void> {
    return this.failPayment(sessionId, code);
  }

  /** The session expires by itself (its `when_expires` passed): no webhook. */
  async expire(sessionId: string): Promise<void> {
    Object.assign(this.session(sessionId), { checkout_status: 'expired', payment_status: 'cancelled', when_completed: new Date().toISOString() });
  }

  /** Whether the session's money went back (a refund was made). */
  isRefunded(sessionId: string): boolean {
    return this.refunded.has(sessionId);
  }

  /** The body and header of a webhook about `session`, signed as Wave signs them (at `timestampS`). */
  signedWebhook(type: string, session: WaveSession, timestampS = Math.floor(Date.now() / 1000), secret = this.webhookSecret): { body: string; signature: string } {
    const body = JSON.stringify({ id: `EV_${randomBytes(8).toString('hex')}`, type, data: session });
    return { body, signature: signWaveWebhook(secret, body, timestampS) };
  }

  private session(id: string): WaveSession {
    const session = this.sessions.get(id);
    if (!session) throw new Error(`no session ${id}`);
    return session;
  }

  private async webhook(type: string, session: WaveSession): Promise<void> {
    const signed = this.signedWebhook(type, session);
    this.webhooksSent.push({ type, ...signed });
    if (this.webhookUrl && !this.dropWebhooks) {
      await sendCallback(this.webhookUrl, signed.body, 'POST', { 'wave-signature': signed.signature }).catch(() => undefined);
    }
  }

  private route(request: FakeRequest): FakeAnswer {
    const authorization = header(request, 'authorization');
    if (!authorization) return { status: 401, body: { code: 'missing-auth-header', message: 'Your request should include an HTTP auth header.' } };
    const bearer = /^Bearer (.+)$/.exec(authorization)?.[1];
    if (!bearer) return { status: 401, body: { code: 'invalid-auth', message: "Your HTTP auth header can't be processed." } };
    if (bearer !== this.apiKey) return { status: 401, body: { code: 'no-matching-api-key', message: "The key you provided doesn't exist in our system." } };

    if (request.method === 'POST' && request.path === '/v1/checkout/sessions') return this.idempotent(request, () => this.create(request));
    if (request.method === 'POST' && request.path === '/v1/payout') return this.idempotent(request, () => this.createPayout(request));
    if (request.method === 'GET' && request.path === '/v1/payouts/search') {
      return { status: 200, body: { result: [...this.payouts.values()].filter((p) => p.client_reference === request.query.get('client_reference')) } };
    }
    const payout = /^\/v1\/payout\/([^/]+)$/.exec(request.path);
    if (request.method === 'GET' && payout) {
      const found = this.payouts.get(decodeURIComponent(payout[1]!));
      return found ? { status: 200, body: found } : { status: 404, body: { code: 'payout-not-found', message: 'No such payout.' } };
    }
    if (request.method === 'GET' && request.path === '/v1/checkout/sessions/search') {
      return { status: 200, body: { result: this.sessionsFor(request.query.get('client_reference') ?? '') } };
    }
    const refund = /^\/v1\/checkout\/sessions\/([^/]+)\/refund$/.exec(request.path);
    if (request.method === 'POST' && refund) return this.idempotent(request, () => this.refund(decodeURIComponent(refund[1]!)));
    const expire = /^\/v1\/checkout\/sessions\/([^/]+)\/expire$/.exec(request.path);
    if (request.method === 'POST' && expire) return this.expireSession(decodeURIComponent(expire[1]!));
    if (request.method === 'GET' && request.path === '/v1/transactions') return this.listTransactions(request);
    const one = /^\/v1\/checkout\/sessions\/([^/]+)$/.exec(request.path);
    if (request.method === 'GET' && one) {
      const session = this.sessions.get(decodeURIComponent(one[1]!));
      return session ? { status: 200, body: session } : notFound();
    }
    return { status: 404, body: { code: 'not-found', message: 'Not found.' } };
  }

  /** How many payouts with this `client_reference` were paid. */
  paidFor(clientReference: string): number {
    return [...this.payouts.values()].filter((p) => p.client_reference === clientReference && p.status === 'succeeded').length;
  }

  /** A held payout ends: paid, or failed with the error set for its mobile. */
  settlePayout(id: string): void {
    const payout = this.payouts.get(id);
    if (!payout) throw new Error(`no payout ${id}`);
    this.decidePayout(payout);
  }

  private decidePayout(payout: WavePayout): void {
    const code = this.payoutErrors.get(payout.mobile);
    payout.status = code ? 'failed' : 'succeeded';
    if (code) payout.payout_error = { error_code: code, error_message: code.replace(/-/g, ' ') };
  }

  private createPayout(request: FakeRequest): FakeAnswer {
    if (!header(request, 'idempotency-key')) return { status: 400, body: { code: 'missing-idempotency-key', message: 'Payouts need an idempotency-key header.' } };
    const body = (request.body ?? {}) as Record<string, unknown>;
    const details: Array<{ loc: string[]; msg: string }> = [];
    if (typeof body.receive_amount !== 'string' || !/^\d+(\.\d{1,2})?$/.test(body.receive_amount)) details.push({ loc: ['receive_amount'], msg: 'a decimal string is required' });
    if (typeof body.currency !== 'string' || !/^[A-Z]{3}$/.test(body.currency)) details.push({ loc: ['currency'], msg: 'a currency code is required' });
    if (typeof body.mobile !== 'string' || !/^\+[1-9]\d{7,14}$/.test(body.mobile)) details.push({ loc: ['mobile'], msg: 'an E.164 number is required' });
    if (details.length > 0) return { status: 400, body: { code: 'request-validation-error', message: 'Request invalid', details } };
    const payout: WavePayout = {
      id: `pt-${randomBytes(8).toString('hex')}`,
      currency: body.currency as string,
      receive_amount: body.receive_amount as string,
      fee: '0',
      mobile: body.mobile as string,
      name: typeof body.name === 'string' ? body.name : null,
      client_reference: typeof body.client_reference === 'string' ? body.client_reference : null,
      payment_reason: typeof body.payment_reason === 'string' ? body.payment_reason : null,
      status: 'processing',
      timestamp: new Date().toISOString(),
    };
    this.payouts.set(payout.id, payout);
    if (!this.holdPayouts) this.decidePayout(payout);
    return { status: 200, body: { ...payout } };
  }

  private idempotent(request: FakeRequest, handle: () => FakeAnswer): FakeAnswer {
    if (!this.honourIdempotencyKey) return handle();
    const key = header(request, 'idempotency-key');
    const slot = key ? `${request.path}\n${key}` : null;
    const replay = slot ? this.replays.get(slot) : undefined;
    if (replay) return replay;
    const answer = handle();
    if (slot && answer.status < 500) this.replays.set(slot, answer);
    return answer;
  }

  private create(request: FakeRequest): FakeAnswer {
    const body = (request.body ?? {}) as Record<string, unknown>;
    const details: Array<{ loc: string[]; msg: string }> = [];
    if (typeof body.amount !== 'string' || !/^\d+(\.\d{1,2})?$/.test(body.amount)) details.push({ loc: ['amount'], msg: 'a decimal string is required' });
    if (typeof body.currency !== 'string' || !/^[A-Z]{3}$/.test(body.currency)) details.push({ loc: ['currency'], msg: 'a currency code is required' });
    for (const name of ['success_url', 'error_url']) {
      if (typeof body[name] !== 'string' || !/^https:\/\//.test(body[name] as string)) details.push({ loc: [name], msg: 'an https URL is required' });
    }
    if (details.length) return { status: 400, body: { code: 'request-validation-error', message: 'Request validation failed.', details } };
    const id = `cos-${randomBytes(9).toString('hex')}`;
    const now = Date.now();
    const session: WaveSession = {
      id,
      amount: body.amount as string,
      currency: body.currency as string,
      business_name: 'Fake Business',
      checkout_status: 'open',
      payment_status: 'processing',
      client_reference: typeof body.client_reference === 'string' ? body.client_reference : null,
      success_url: body.success_url as string,
      error_url: body.error_url as string,
      last_payment_error: null,
      wave_launch_url: `https://pay.wave.example/c/${id}`,
      when_created: new Date(now).toISOString(),
      when_expires: new Date(now + 30 * 60_000).toISOString(),
    };
    this.sessions.set(id, session);
    return { status: 200, body: session };
  }

  private refund(id: string): FakeAnswer {
    const session = this.sessions.get(id);
    if (!session) return notFound();
    if (session.payment_status !== 'succeeded' || this.refunded.has(id)) {
      return { status: 400, body: { code: 'checkout-refund-failed', message: 'The checkout session cannot be refunded.' } };
    }
    this.refunded.add(id);
    this.transactions.push({
      timestamp: new Date().toISOString(), transaction_id: `T_${randomBytes(6).toString('hex').toUpperCase()}`, transaction_type: 'api_checkout_refund',
      amount: `-${session.amount}`, fee: '0', currency: session.currency, is_reversal: true,
      ...(session.client_reference ? { client_reference: session.client_reference } : {}), checkout_api_session_id: session.id,
    });
    return { status: 200 };
  }

  private expireSession(id: string): FakeAnswer {
    this.expireCalls++;
    const session = this.sessions.get(id);
    if (!session) return notFound();
    if (session.checkout_status !== 'open') return this.expireRefusal;
    Object.assign(session, { checkout_status: 'expired', payment_status: 'cancelled', when_completed: new Date().toISOString() });
    return { status: 200 };
  }

  /** The Balance API's list of one day's transactions (`date`, default today, UTC), in one page. */
  private listTransactions(request: FakeRequest): FakeAnswer {
    const date = request.query.get('date') ?? new Date().toISOString().slice(0, 10);
    if (!/^\d{4}-\d{2}-\d{2}$/.test(date)) {
      return { status: 400, body: { code: 'request-validation-error', message: 'Request validation failed.', details: [{ loc: ['date'], msg: 'a date YYYY-MM-DD is required' }] } };
    }
    const items = this.transactions.filter((t) => t.timestamp.slice(0, 10) === date);
    return { status: 200, body: { page_info: { start_cursor: null, end_cursor: null, has_next_page: false }, date, items } };
  }
}

function notFound(): FakeAnswer {
  return { status: 404, body: { code: 'checkout-session-not-found', message: 'Checkout session not found.' } };
}
