/**
 * The HTTP client the chaos run's clients share (creates, confirms, refunds, polls):
 * keyed POSTs retried with the same key and body on 409, 429, 503, a connection
 * error or a timeout, with capped, fully jittered exponential backoff (and never
 * sooner than a Retry-After asks), the way a careful integration retries; and plain
 * GETs. Each request goes to the next api in turn, as a load balancer without health
 * checks would send it.
 */
import http from 'node:http';

const RETRYABLE_STATUSES = new Set([409, 429, 503]);
const BACKOFF_BASE_MS = 200;
const BACKOFF_CAP_MS = 5000;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** One request as the client saw it. */
export interface Attempt {
  /** Epoch ms when it was sent. */
  sentMs: number;
  durationMs: number;
  /** `200`, `409`, `503 processing_timeout`, `connection refused`, `timeout`… */
  outcome: string;
  replayed: boolean;
}

export interface Answer {
  /** Epoch ms of the 200. */
  atMs: number;
  sentMs: number;
  id: string;
  body: string;
  replayed: boolean;
}

export interface ClientOptions {
  apiUrls: string[];
  apiKey: string;
  requestTimeoutMs: number;
  /** Epoch ms after which nothing is retried any more. */
  giveUpMs: () => number;
  random: () => number;
}

class ClientTimeout extends Error {
  readonly code = 'CLIENT_TIMEOUT';
}

function outcomeOfError(err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'CLIENT_TIMEOUT') return 'timeout';
  if (code === 'ECONNREFUSED') return 'connection refused';
  if (code === 'ECONNRESET' || code === 'EPIPE') return 'connection reset';
  return `network error ${code ?? ''}`.trim();
}

interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

/**
 * One request on a keep-alive connection. node:http rather than fetch: with hundreds
 * of requests in flight, fetch's per-request cost made the tool itself the
 * bottleneck, and its delays were then blamed on the service.
 */
function request(agent: http.Agent, url: string, headers: Record<string, string>, body: string, timeoutMs: number, method = 'POST'): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, agent, headers: { ...headers, 'Content-Length': String(Buffer.byteLength(body)) } });
    const timer = setTimeout(() => req.destroy(new ClientTimeout(`no answer within ${timeoutMs} ms`)), timeoutMs);
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        clearTimeout(timer);
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') });
      });
      res.on('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
    });
    req.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    req.end(body);
  });
}

export class Client {
  private next = 0;
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: 1024 });

  constructor(readonly options: ClientOptions) {}

  private nextApi(): string {
    return this.options.apiUrls[this.next++ % this.options.apiUrls.length] as string;
  }

  /** GET `path` once; the parsed body of a 200, else null (any other answer, or none). */
  async get<T>(path: string): Promise<T | null> {
    const res = await request(this.agent, `${this.nextApi()}${path}`, { Authorization: `Bearer ${this.options.apiKey}` }, '', this.options.requestTimeoutMs, 'GET').catch(
      () => null,
    );
    return res?.status === 200 ? (JSON.parse(res.text) as T) : null;
  }

  /**
   * POSTs `body` with `key` until it is answered 200 (`answer`), answered otherwise
   * than retryably (`terminal`), or the run gives up (both null). Every request is
   * appended to `attempts`.
   */
  async send(key: string, body: string, attempts: Attempt[], path = '/v1/payment_intents'): Promise<{ answer: Answer | null; terminal: string | null }> {
    for (let failures = 0; ; failures++) {
      const sentMs = Date.now();
      let outcome: string;
      let retryAfterMs = 0;
      try {
        const res = await request(
          this.agent,
          `${this.nextApi()}${path}`,
          { Authorization: `Bearer ${this.options.apiKey}`, 'Content-Type': 'application/json', 'Idempotency-Key': key },
          body,
          this.options.requestTimeoutMs,
        );
        const text = res.text;
        const replayed = res.headers['idempotent-replayed'] === 'true';
        if (res.status === 200) {
          const atMs = Date.now();
          attempts.push({ sentMs, durationMs: atMs - sentMs, outcome: '200', replayed });
          const id = (JSON.parse(text) as { id: string }).id;
          return { answer: { atMs, sentMs, id, body: text, replayed }, terminal: null };
        }
        let code = '';
        try {
          code = (JSON.parse(text) as { error?: { code?: string } }).error?.code ?? '';
        } catch {
          // not the error envelope
        }
        outcome = `${res.status}${code ? ` ${code}` : ''}`;
        attempts.push({ sentMs, durationMs: Date.now() - sentMs, outcome, replayed });
        if (!RETRYABLE_STATUSES.has(res.status)) return { answer: null, terminal: outcome };
        retryAfterMs = Number(res.headers['retry-after'] ?? 0) * 1000;
      } catch (err) {
        outcome = outcomeOfError(err);
        attempts.push({ sentMs, durationMs: Date.now() - sentMs, outcome, replayed: false });
      }
      const backoff = this.options.random() * Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** failures);
      const delay = Math.max(backoff, Math.min(retryAfterMs, BACKOFF_CAP_MS));
      if (Date.now() + delay > this.options.giveUpMs()) return { answer: null, terminal: null };
      await sleep(delay);
    }
  }

  close(): void {
    this.agent.destroy();
  }
}
