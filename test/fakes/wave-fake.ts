/**
 * A local Wave Checkout API, written from Wave's API reference and webhook guide
 * (the connector, worker/operators/wave.ts, names them). Strict where they are clear:
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
 *   `checkout-refund-failed`); the same `idempotency-key` replays the first answer.
 *
 * The payer is played by the test: `pay`, `failPayment` (the session stays open with
 * `last_payment_error`) and `expire`; each sends the webhook Wave would, signed with
 * the webhook secret, unless webhooks are dropped.
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
  when_created: string;
  when_expires: string;
}

export class WaveFake {
  readonly server: FakeServer;
  readonly sessions = new Map<string, WaveSession>();
  readonly refunded = new Set<string>();
  /** Where Wave sends webhooks (registered in the Business Portal). */
  webhookUrl: string | null = null;
  dropWebhooks = false;
  readonly webhooksSent: Array<{ type: string; body: string; signature: string }> = [];
  private readonly replays = new Map<string, FakeAnswer>();

  constructor(private readonly apiKey: string, private readonly webhookSecret: string) {
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

  sessionsFor(clientReference: string): WaveSession[] {
    return [...this.sessions.values()].filter((s) => s.client_reference === clientReference);
  }

  async pay(sessionId: string): Promise<void> {
    const session = this.session(sessionId);
    Object.assign(session, { checkout_status: 'complete', payment_status: 'succeeded', transaction_id: `T_${randomBytes(6).toString('hex').toUpperCase()}` });
    await this.webhook('checkout.session.completed', session);
  }

  async failPayment(sessionId: string, code: string): Promise<void> {
    const session = this.session(sessionId);
    session.last_payment_error = { code, message: code.replace(/-/g, ' ') };
    await this.webhook('checkout.session.payment_failed', session);
  }

  async expire(sessionId: string): Promise<void> {
    Object.assign(this.session(sessionId), { checkout_status: 'expired', payment_status: 'cancelled' });
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
    if (request.method === 'GET' && request.path === '/v1/checkout/sessions/search') {
      return { status: 200, body: { result: this.sessionsFor(request.query.get('client_reference') ?? '') } };
    }
    const refund = /^\/v1\/checkout\/sessions\/([^/]+)\/refund$/.exec(request.path);
    if (request.method === 'POST' && refund) return this.idempotent(request, () => this.refund(decodeURIComponent(refund[1]!)));
    const one = /^\/v1\/checkout\/sessions\/([^/]+)$/.exec(request.path);
    if (request.method === 'GET' && one) {
      const session = this.sessions.get(decodeURIComponent(one[1]!));
      return session ? { status: 200, body: session } : notFound();
    }
    return { status: 404, body: { code: 'not-found', message: 'Not found.' } };
  }

  private idempotent(request: FakeRequest, handle: () => FakeAnswer): FakeAnswer {
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
    return { status: 200 };
  }
}

function notFound(): FakeAnswer {
  return { status: 404, body: { code: 'checkout-session-not-found', message: 'Checkout session not found.' } };
}
