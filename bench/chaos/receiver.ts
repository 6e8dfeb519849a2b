/**
 * The webhook consumer of a chaos run: a local HTTP server that checks every
 * delivery's Standard Webhooks signature against the endpoint's secret and keeps
 * the ids of the events it received intact. It answers 200 at once, as a receiver
 * should.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { verifyWebhook, WebhookVerificationError } from '../../common/webhooks/verify.js';

export class VerifyingReceiver {
  /** Event ids received with a valid signature, and how many times each. */
  readonly verified = new Map<string, number>();
  deliveries = 0;
  badSignatures = 0;
  /** Deliveries before the secret was known (none expected: the endpoint is created first). */
  unverifiable = 0;
  secret: string | null = null;

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(): Promise<VerifyingReceiver> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const receiver = new VerifyingReceiver(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`);
    server.on('request', (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        receiver.receive(req.headers, Buffer.concat(chunks));
        res.writeHead(200, { 'Content-Type': 'text/plain' }).end('ok');
      });
      req.on('error', () => res.destroy());
    });
    return receiver;
  }

  private receive(headers: Record<string, string | string[] | undefined>, body: Buffer): void {
    this.deliveries++;
    if (this.secret === null) {
      this.unverifiable++;
      return;
    }
    try {
      const event = verifyWebhook<{ id: string }>(this.secret, headers, body);
      if (event.id !== headers['webhook-id']) throw new WebhookVerificationError('event id differs from webhook-id');
      this.verified.set(event.id, (this.verified.get(event.id) ?? 0) + 1);
    } catch (err) {
      if (!(err instanceof WebhookVerificationError)) throw err;
      this.badSignatures++;
    }
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
