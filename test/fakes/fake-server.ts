/**
 * What the operator fakes share: a node:http server on a free loopback port, a log of
 * what was asked, and the ways an operator argues back. Each fake (mtn-momo-fake.ts,
 * mpesa-fake.ts, wave-fake.ts) routes the requests as its operator's documentation
 * describes; the misbehaviours below are all off until a test asks for one.
 *
 * - `failNext(count, status, body?, match?)`: the next matching requests are answered
 *   `status` without being handled (the operator did nothing): a gateway or backend
 *   refusing before the operation.
 * - `throttleNext(count, retryAfterS, match?)`: the next matching requests are answered
 *   as the operator's gateway throttles (HTTP 429 and `Retry-After: <s>` unless the
 *   fake says otherwise, with the operator's own throttling body), without being
 *   handled. Each is kept in `throttled`.
 * - `down()` / `up()` / `outage(ms)`: while down, every request is answered 503
 *   without being handled: an outage, which ends.
 * - `dropAnswerNext(count, match?)`: the next matching requests ARE handled (the
 *   operator did the work, its callbacks follow), then the connection is destroyed
 *   before a byte of the answer is written: the answer is lost on the way back, the
 *   caller sees a reset socket. Counted in `answersDropped`.
 * - `delayMs`: every answer waits this long after the request was handled.
 *
 * The injections are kept in the order they were asked for; a request takes the first
 * one that matches it and still has a count left (an outage comes before all of them).
 * Every request that reached the server is in `log`, whatever its answer.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface FakeRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage['headers'];
  raw: string;
  /** The JSON body, or undefined when there is none or it is not JSON. */
  body: unknown;
}

export interface FakeAnswer {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export type Route = (request: FakeRequest) => FakeAnswer | Promise<FakeAnswer>;

export type RequestMatch = (request: FakeRequest) => boolean;

export interface FakeServerOptions {
  /**
   * The body of a throttled answer, as the operator writes it: a value, or built from
   * the `Retry-After` seconds and the request. Default `{ error: 'rate limited' }`.
   */
  throttleBody?: unknown | ((retryAfterS: number, request: FakeRequest) => unknown);
  /** The HTTP status of a throttled answer (default 429). */
  throttleStatus?: number;
  /** The body of the 503 answered while down (default `{ error: 'service unavailable' }`). */
  unavailableBody?: unknown;
}

type Injection =
  | { kind: 'fail'; left: number; match: RequestMatch; status: number; body: unknown }
  | { kind: 'throttle'; left: number; match: RequestMatch; retryAfterS: number }
  | { kind: 'drop'; left: number; match: RequestMatch };

const ANY: RequestMatch = () => true;

export class FakeServer {
  readonly log: FakeRequest[] = [];
  /** The requests answered as throttled (`throttleNext`), in order. */
  readonly throttled: FakeRequest[] = [];
  /** How many handled requests had their answer lost (`dropAnswerNext`). */
  answersDropped = 0;
  /** Answers slower than this (ms), after the request has been handled (the operator did the work). */
  delayMs = 0;
  private injections: Injection[] = [];
  private downSince: number | null = null;
  private readonly outageTimers = new Set<NodeJS.Timeout>();
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();

  constructor(
    private readonly route: Route,
    private readonly options: FakeServerOptions = {},
  ) {}

  /**
   * The next `count` requests that `match` (default: any) get `status` and `body`
   * (default `{ error: 'injected failure' }`) without being handled.
   */
  failNext(count = 1, status = 500, body?: unknown, match: RequestMatch = ANY): void {
    if (count > 0) this.injections.push({ kind: 'fail', left: count, match, status, body: body === undefined ? { error: 'injected failure' } : body });
  }

  /**
   * The next `count` requests that `match` (default: any) are throttled: the fake's
   * throttle status (429 unless it says otherwise), `Retry-After: <retryAfterS>` and
   * its operator's throttling body, without being handled. Each is kept in `throttled`.
   */
  throttleNext(count: number, retryAfterS: number, match: RequestMatch = ANY): void {
    if (count > 0) this.injections.push({ kind: 'throttle', left: count, match, retryAfterS });
  }

  /**
   * The next `count` requests that `match` (default: any) are handled, their effects
   * kept, then their connection is destroyed before any answer is written.
   */
  dropAnswerNext(count = 1, match: RequestMatch = ANY): void {
    if (count > 0) this.injections.push({ kind: 'drop', left: count, match });
  }

  /** Forgets the injections not yet used (failures, throttles, lost answers). */
  clearInjections(): void {
    this.injections = [];
  }

  /** From now on every request is answered 503, unhandled, until `up()`. */
  down(): void {
    this.downSince ??= Date.now();
  }

  /** Ends an outage (`down()` or `outage(ms)`). */
  up(): void {
    this.downSince = null;
    for (const timer of this.outageTimers) clearTimeout(timer);
    this.outageTimers.clear();
  }

  /** Down now, up again after `ms`; resolves when the outage is over. */
  outage(ms: number): Promise<void> {
    this.down();
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.outageTimers.delete(timer);
        if (this.outageTimers.size === 0) this.downSince = null;
        resolve();
      }, ms);
      this.outageTimers.add(timer);
    });
  }

  get isDown(): boolean {
    return this.downSince !== null;
  }

  get url(): string {
    const address = this.server?.address() as AddressInfo | null;
    if (!address) throw new Error('fake not started');
    return `http://127.0.0.1:${address.port}`;
  }

  /** How many requests reached `method path` (exact path). */
  count(method: string, path: string): number {
    return this.log.filter((r) => r.method === method && r.path === path).length;
  }

  /** How many requests reached the server that `predicate` accepts. */
  countMatching(predicate: RequestMatch): number {
    return this.log.filter(predicate).length;
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => void this.handle(req, res));
    this.server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    return this;
  }

  async stop(): Promise<void> {
    this.up();
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  /** The first injection that takes `request`, its count used. */
  private take(request: FakeRequest): Injection | null {
    for (const injection of this.injections) {
      if (injection.left > 0 && injection.match(request)) {
        injection.left--;
        this.injections = this.injections.filter((i) => i.left > 0);
        return injection;
      }
    }
    return null;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    const url = new URL(req.url ?? '/', 'http://fake');
    let body: unknown;
    try {
      body = raw ? JSON.parse(raw) : undefined;
    } catch {
      body = undefined;
    }
    const request: FakeRequest = { method: req.method ?? 'GET', path: url.pathname, query: url.searchParams, headers: req.headers, raw, body };
    this.log.push(request);
    let answer: FakeAnswer;
    let drop = false;
    const injection = this.isDown ? null : this.take(request);
    if (this.isDown) {
      answer = { status: 503, body: this.options.unavailableBody ?? { error: 'service unavailable' } };
    } else if (injection?.kind === 'fail') {
      answer = { status: injection.status, body: injection.body };
    } else if (injection?.kind === 'throttle') {
      this.throttled.push(request);
      const shape = this.options.throttleBody;
      const throttleBody = typeof shape === 'function' ? (shape as (s: number, r: FakeRequest) => unknown)(injection.retryAfterS, request) : shape;
      answer = {
        status: this.options.throttleStatus ?? 429,
        body: throttleBody === undefined ? { error: 'rate limited' } : throttleBody,
        headers: { 'retry-after': String(injection.retryAfterS) },
      };
    } else {
      drop = injection?.kind === 'drop';
      answer = await this.route(request);
    }
    if (this.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, this.delayMs));
    if (drop) {
      this.answersDropped++;
      // Nothing written: the caller sees the connection reset with no status line.
      res.socket?.resetAndDestroy();
      res.destroy();
      return;
    }
    if (res.destroyed) return;
    const payload = answer.body === undefined ? '' : typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body);
    res.writeHead(answer.status, { ...(payload ? { 'content-type': 'application/json' } : {}), ...answer.headers });
    res.end(payload);
  }
}

/** Sends a callback the way an operator does: a JSON POST (or PUT), its answer ignored. */
export async function sendCallback(url: string, body: unknown, method: 'POST' | 'PUT' = 'POST', headers: Record<string, string> = {}): Promise<number> {
  const response = await fetch(url, { method, headers: { 'content-type': 'application/json', ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) });
  await response.arrayBuffer();
  return response.status;
}

export function header(request: FakeRequest, name: string): string | undefined {
  const value = request.headers[name.toLowerCase()];
  return Array.isArray(value) ? value[0] : value;
}
