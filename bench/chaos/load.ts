/**
 * The clients of a chaos run: keyed creates started at a steady rate, each retried
 * with the same key and body on 409, 429, 503, a connection error or a timeout, with
 * capped, fully jittered exponential backoff (and never sooner than a Retry-After
 * asks), the way a careful integration retries. Each attempt goes to the next api
 * in turn, as a load balancer without health checks would send it. After its 200, a
 * key may be sent once more, to check the replay, and the intent may be confirmed
 * (with a key of its own, retried the same way). With `--refunds`, a share of the
 * confirmed intents is refunded once it succeeded (polled through the api): wholly,
 * or in two or three parts whose last takes what remains, each keyed and retried.
 */
import http from 'node:http';
import { idTime } from '../../common/ids.js';

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

export interface KeyRecord {
  key: string;
  body: string;
  startedMs: number;
  attempts: Attempt[];
  /** The first 200. */
  answer: Answer | null;
  /** A non-retryable answer that ended the key (e.g. a 500): the verdict fails. */
  terminal: string | null;
  /** The deliberate second request after the 200, if sent. */
  replay: { attempts: Attempt[]; answer: Answer | null; terminal: string | null } | null;
  /** The confirm of the created intent (its own key), if sent. */
  confirm: { key: string; attempts: Attempt[]; answer: Answer | null; terminal: string | null } | null;
  /** The refunds of the intent, once it succeeded, if asked for. */
  refunds: RefundRecord[] | null;
}

/** One refund request: its key, its amount (null: what remains), and how it was answered. */
export interface RefundRecord {
  key: string;
  intent: string;
  amount: number | null;
  attempts: Attempt[];
  answer: Answer | null;
  terminal: string | null;
}

/** Every confirm pays in xof (the create's currency) with an MTN Côte d'Ivoire number the simulator approves. */
export const CONFIRM_BODY = JSON.stringify({ operator: 'mtn_momo', phone_number: '+2250500000000' });
/** A payment to refund pays with a number whose refunds the simulator refuses (`payer_account_blocked`) this often. */
const REFUND_FAILS_SHARE = 0.2;
const CONFIRM_REFUNDS_FAIL = JSON.stringify({ operator: 'mtn_momo', phone_number: '+2250500000020' });

export interface LoadOptions {
  apiUrls: string[];
  apiKey: string;
  rate: number;
  durationS: number;
  requestTimeoutMs: number;
  replayFraction: number;
  confirmFraction: number;
  /** Fraction of the confirmed intents refunded once they succeeded. */
  refundFraction: number;
  /** Epoch ms after which nothing is retried any more. */
  giveUpMs: () => number;
  random: () => number;
  runId: string;
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
 * One POST on a keep-alive connection. node:http rather than fetch: with hundreds
 * of requests in flight, fetch's per-request cost made the tool itself the
 * bottleneck, and its delays were then blamed on the service.
 */
function post(agent: http.Agent, url: string, headers: Record<string, string>, body: string, timeoutMs: number, method = 'POST'): Promise<Reply> {
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

export class Load {
  readonly keys: KeyRecord[] = [];
  private next = 0;
  private readonly running = new Set<Promise<void>>();
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: 1024 });

  constructor(private readonly options: LoadOptions) {}

  /** Starts keys at the rate for the duration; resolves when every key (and replay) is settled. */
  async run(startMs: number): Promise<void> {
    const total = Math.round(this.options.rate * this.options.durationS);
    for (let i = 0; i < total; i++) {
      const due = startMs + (i * 1000) / this.options.rate;
      const wait = due - Date.now();
      if (wait > 0) await sleep(wait);
      const record: KeyRecord = {
        key: `chaos-${this.options.runId}-${i}`,
        // XOF: the currency MTN MoMo takes from the confirm's +225 number.
        body: JSON.stringify({ amount: 1000 + i, currency: 'xof', metadata: { chaos_key: `chaos-${this.options.runId}-${i}` } }),
        startedMs: Date.now(),
        attempts: [],
        answer: null,
        terminal: null,
        replay: null,
        confirm: null,
        refunds: null,
      };
      this.keys.push(record);
      this.track(this.drive(record));
    }
    while (this.running.size > 0) await Promise.all([...this.running]);
    this.agent.destroy();
  }

  private track(work: Promise<void>): void {
    this.running.add(work);
    void work.finally(() => this.running.delete(work));
  }

  private async drive(record: KeyRecord): Promise<void> {
    const first = await this.untilAnswered(record.key, record.body, record.attempts);
    record.answer = first.answer;
    record.terminal = first.terminal;
    if (!first.answer) return;
    const confirming = this.options.random() < this.options.confirmFraction ? this.confirm(record, first.answer.id) : null;
    if (confirming) this.track(confirming);
    if (this.options.random() >= this.options.replayFraction) return;
    // Spread the replays over the next seconds, so that some cross a fault.
    await sleep(this.options.random() * 10_000);
    if (Date.now() > this.options.giveUpMs()) return;
    const replay = { attempts: [] as Attempt[], answer: null as Answer | null, terminal: null as string | null };
    record.replay = replay;
    const second = await this.untilAnswered(record.key, record.body, replay.attempts);
    replay.answer = second.answer;
    replay.terminal = second.terminal;
  }

  private async confirm(record: KeyRecord, intent: string): Promise<void> {
    const confirm = { key: `${record.key}-confirm`, attempts: [] as Attempt[], answer: null as Answer | null, terminal: null as string | null };
    record.confirm = confirm;
    const refunding = this.options.random() < this.options.refundFraction;
    const body = refunding && this.options.random() < REFUND_FAILS_SHARE ? CONFIRM_REFUNDS_FAIL : CONFIRM_BODY;
    const done = await this.untilAnswered(confirm.key, body, confirm.attempts, `/v1/payment_intents/${intent}/confirm`);
    confirm.answer = done.answer;
    confirm.terminal = done.terminal;
    if (done.answer && refunding) await this.refund(record, intent);
  }

  /** Waits for the intent to succeed, then refunds it wholly or in parts, one keyed request after another. */
  private async refund(record: KeyRecord, intent: string): Promise<void> {
    if (!(await this.untilSucceeded(intent))) return;
    const amount = (JSON.parse(record.body) as { amount: number }).amount;
    const parts = this.options.random() < 0.4 ? 1 : this.options.random() < 0.5 ? 2 : 3;
    const amounts: Array<number | null> = [...Array.from({ length: parts - 1 }, () => Math.floor(amount / parts)), null];
    record.refunds = [];
    for (const [j, part] of amounts.entries()) {
      const refund: RefundRecord = { key: `${record.key}-refund-${j}`, intent, amount: part, attempts: [], answer: null, terminal: null };
      record.refunds.push(refund);
      const body = JSON.stringify(part === null ? { payment_intent: intent } : { payment_intent: intent, amount: part });
      const done = await this.untilAnswered(refund.key, body, refund.attempts, '/v1/refunds');
      refund.answer = done.answer;
      refund.terminal = done.terminal;
      if (!done.answer) return;
    }
  }

  /** Polls the intent through the apis until it succeeded (true) or ended otherwise (false). */
  private async untilSucceeded(intent: string): Promise<boolean> {
    while (Date.now() < this.options.giveUpMs()) {
      const url = this.options.apiUrls[this.next++ % this.options.apiUrls.length] as string;
      const res = await post(this.agent, `${url}/v1/payment_intents/${intent}`, { Authorization: `Bearer ${this.options.apiKey}` }, '', this.options.requestTimeoutMs, 'GET').catch(() => null);
      if (res?.status === 200) {
        const status = (JSON.parse(res.text) as { status: string }).status;
        if (status === 'succeeded') return true;
        if (status === 'canceled' || status === 'expired') return false;
      }
      await sleep(1000);
    }
    return false;
  }

  private async untilAnswered(
    key: string,
    body: string,
    attempts: Attempt[],
    path = '/v1/payment_intents',
  ): Promise<{ answer: Answer | null; terminal: string | null }> {
    for (let failures = 0; ; failures++) {
      const url = this.options.apiUrls[this.next++ % this.options.apiUrls.length] as string;
      const sentMs = Date.now();
      let outcome: string;
      let retryAfterMs = 0;
      try {
        const res = await post(
          this.agent,
          `${url}${path}`,
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
}

/** True when the object was made before this request was sent: an answer that must be a replay. */
export function madeBefore(answer: Answer): boolean {
  return idTime(answer.id) < answer.sentMs;
}
