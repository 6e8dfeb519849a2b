/**
 * What the operator fakes share: a node:http server on a free loopback port, the
 * controls every test needs (fail the next requests with a 500, answer slowly), and
 * a log of what was asked. Each fake (mtn-momo-fake.ts, mpesa-fake.ts, wave-fake.ts)
 * routes the requests as its operator's documentation describes.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

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

export class FakeServer {
  readonly log: FakeRequest[] = [];
  /** Answers slower than this (ms), after the request has been handled (the operator did the work). */
  delayMs = 0;
  private failures = 0;
  private failStatus = 500;
  private server: Server | null = null;
  private readonly sockets = new Set<import('node:net').Socket>();

  constructor(private readonly route: Route) {}

  /** The next `count` requests get `status` without being handled (the operator did nothing). */
  failNext(count = 1, status = 500): void {
    this.failures = count;
    this.failStatus = status;
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
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
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
    if (this.failures > 0) {
      this.failures--;
      answer = { status: this.failStatus, body: { error: 'injected failure' } };
    } else {
      answer = await this.route(request);
    }
    if (this.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, this.delayMs));
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
