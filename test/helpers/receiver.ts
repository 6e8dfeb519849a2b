/**
 * A real local webhook receiver (node:http on 127.0.0.1, a free port) that records
 * every request byte for byte and answers as each path's script says.
 */
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sleep } from './service.js';

export interface Received {
  path: string;
  method: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** Set once the receiver's side of the exchange is over (answered, or the client left). */
  closed: boolean;
}

/** How to answer one request; `hang` keeps it open until the client goes away. */
export type Reply = { status: number; body?: string; headers?: Record<string, string> } | { hang: true };

/** Answers the nth request (0-based) to a path. */
export type Script = (n: number, received: Received) => Reply;

export class Receiver {
  readonly requests: Received[] = [];
  private readonly scripts = new Map<string, Script>();
  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  static async start(): Promise<Receiver> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const receiver = new Receiver(server, (server.address() as AddressInfo).port);
    server.on('request', (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const path = req.url ?? '/';
        const received: Received = { path, method: req.method ?? '', headers: req.headers, body: Buffer.concat(chunks), closed: false };
        const n = receiver.requests.filter((r) => r.path === path).length;
        receiver.requests.push(received);
        res.on('close', () => {
          received.closed = true;
        });
        receiver.answer(res, (receiver.scripts.get(path) ?? ok)(n, received));
      });
    });
    return receiver;
  }

  private answer(res: ServerResponse, reply: Reply): void {
    if ('hang' in reply) return;
    res.writeHead(reply.status, { 'Content-Type': 'text/plain', ...reply.headers });
    res.end(reply.body ?? '');
  }

  /** Scripts the answers for `path`; unscripted paths answer 200. */
  on(path: string, script: Script): this {
    this.scripts.set(path, script);
    return this;
  }

  url(path: string, host = '127.0.0.1'): string {
    return `http://${host}:${this.port}${path}`;
  }

  received(path: string): Received[] {
    return this.requests.filter((r) => r.path === path);
  }

  /** Waits until `path` has received at least `count` requests. */
  async waitFor(path: string, count = 1, timeoutMs = 60_000): Promise<Received[]> {
    const deadline = Date.now() + timeoutMs;
    while (this.received(path).length < count) {
      if (Date.now() > deadline) throw new Error(`${path} received ${this.received(path).length} of ${count} requests`);
      await sleep(50);
    }
    return this.received(path);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

const ok: Script = () => ({ status: 200, body: 'ok' });

export { until } from './service.js';
