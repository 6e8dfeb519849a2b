/**
 * The clients of a chaos run: keyed creates started at a steady rate, each retried
 * through the shared client (client.ts). After its 200, a key may be sent once more,
 * to check the replay, and the intent may be confirmed (with a key of its own,
 * retried the same way), or, with `--payments`, handed to the payment clients
 * (payments.ts). With `--refunds`, a share of the confirmed intents is refunded once
 * it succeeded: wholly, or in two or three parts whose last takes what remains, each
 * keyed and retried.
 */
import { idTime } from '../../common/ids.js';
import type { Answer, Attempt, Client } from './client.js';

export type { Answer, Attempt } from './client.js';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

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
  /** With `--payments`: how the payment's client saw it end (payments.ts). */
  payment?: PaymentRecord;
}

/** A payment as its client saw it: from its first confirm request until it was final, or its budget ran out. */
export interface PaymentRecord {
  /** Epoch ms of the first confirm request. */
  startedMs: number;
  /** Epoch ms when a poll (or the confirm's answer) first showed it final; null: never within the budget. */
  finalMs: number | null;
  /** `succeeded`, `canceled`, `expired`, `declined` (back to `new` with an error), or the last status seen. */
  status: string | null;
  polls: number;
  /** Polls answered other than 200 (or not at all). */
  pollFailures: number;
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
export const REFUND_FAILS_SHARE = 0.2;
const CONFIRM_REFUNDS_FAIL = JSON.stringify({ operator: 'mtn_momo', phone_number: '+2250500000020' });

export interface LoadOptions {
  rate: number;
  durationS: number;
  replayFraction: number;
  confirmFraction: number;
  /** Fraction of the confirmed intents refunded once they succeeded. */
  refundFraction: number;
  /** Epoch ms after which nothing is retried any more. */
  giveUpMs: () => number;
  random: () => number;
  runId: string;
  /** Takes each created intent instead of the confirm above (the payment clients); resolves when done with it. */
  afterCreate?: (record: KeyRecord, intent: string) => Promise<void>;
}

/** Refunds a succeeded intent wholly or in parts, one keyed request after another, recorded in `record.refunds`. */
export async function refundIntent(client: Client, record: KeyRecord, intent: string, random: () => number): Promise<void> {
  const amount = (JSON.parse(record.body) as { amount: number }).amount;
  const parts = random() < 0.4 ? 1 : random() < 0.5 ? 2 : 3;
  const amounts: Array<number | null> = [...Array.from({ length: parts - 1 }, () => Math.floor(amount / parts)), null];
  record.refunds = [];
  for (const [j, part] of amounts.entries()) {
    const refund: RefundRecord = { key: `${record.key}-refund-${j}`, intent, amount: part, attempts: [], answer: null, terminal: null };
    record.refunds.push(refund);
    const body = JSON.stringify(part === null ? { payment_intent: intent } : { payment_intent: intent, amount: part });
    const done = await client.send(refund.key, body, refund.attempts, '/v1/refunds');
    refund.answer = done.answer;
    refund.terminal = done.terminal;
    if (!done.answer) return;
  }
}

export class Load {
  readonly keys: KeyRecord[] = [];
  private readonly running = new Set<Promise<void>>();

  constructor(
    private readonly client: Client,
    private readonly options: LoadOptions,
  ) {}

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
    this.client.close();
  }

  private track(work: Promise<void>): void {
    this.running.add(work);
    void work.finally(() => this.running.delete(work));
  }

  private async drive(record: KeyRecord): Promise<void> {
    const first = await this.client.send(record.key, record.body, record.attempts);
    record.answer = first.answer;
    record.terminal = first.terminal;
    if (!first.answer) return;
    if (this.options.afterCreate) this.track(this.options.afterCreate(record, first.answer.id));
    else if (this.options.random() < this.options.confirmFraction) this.track(this.confirm(record, first.answer.id));
    if (this.options.random() >= this.options.replayFraction) return;
    // Spread the replays over the next seconds, so that some cross a fault.
    await sleep(this.options.random() * 10_000);
    if (Date.now() > this.options.giveUpMs()) return;
    const replay = { attempts: [] as Attempt[], answer: null as Answer | null, terminal: null as string | null };
    record.replay = replay;
    const second = await this.client.send(record.key, record.body, replay.attempts);
    replay.answer = second.answer;
    replay.terminal = second.terminal;
  }

  private async confirm(record: KeyRecord, intent: string): Promise<void> {
    const confirm = { key: `${record.key}-confirm`, attempts: [] as Attempt[], answer: null as Answer | null, terminal: null as string | null };
    record.confirm = confirm;
    const refunding = this.options.random() < this.options.refundFraction;
    const body = refunding && this.options.random() < REFUND_FAILS_SHARE ? CONFIRM_REFUNDS_FAIL : CONFIRM_BODY;
    const done = await this.client.send(confirm.key, body, confirm.attempts, `/v1/payment_intents/${intent}/confirm`);
    confirm.answer = done.answer;
    confirm.terminal = done.terminal;
    if (done.answer && refunding && (await this.untilSucceeded(intent))) await refundIntent(this.client, record, intent, this.options.random);
  }

  /** Polls the intent through the apis until it succeeded (true) or ended otherwise (false). */
  private async untilSucceeded(intent: string): Promise<boolean> {
    while (Date.now() < this.options.giveUpMs()) {
      const status = (await this.client.get<{ status: string }>(`/v1/payment_intents/${intent}`))?.status;
      if (status === 'succeeded') return true;
      if (status === 'canceled' || status === 'expired') return false;
      await sleep(1000);
    }
    return false;
  }
}

/** True when the object was made before this request was sent: an answer that must be a replay. */
export function madeBefore(answer: Answer): boolean {
  return idTime(answer.id) < answer.sentMs;
}
