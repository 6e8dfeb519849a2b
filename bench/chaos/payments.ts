/**
 * The payment clients of a chaos run (`--payments`): a share of the created intents
 * is confirmed by its client with MTN MoMo and the test number +2250700000000 (the
 * simulator approves it), with a key of its own, retried like a create; the client
 * then polls the intent (GET /v1/payment_intents/:id) until it is final, within its
 * budget (120 s from its first confirm request), as a checkout page waiting for the
 * outcome would. Polls start at 300 ms apart and slow to one a second, so that the
 * confirm → final time reads finely when the service is quick, without the polls
 * flooding it when it stalls. With `--refunds`, a share of the succeeded payments
 * is then refunded (load.ts `refundIntent`), while the faults go on.
 */
import type { Client } from './client.js';
import { refundIntent, REFUND_FAILS_SHARE, type Answer, type Attempt, type KeyRecord, type PaymentRecord } from './load.js';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export const PAYMENT_BODY = JSON.stringify({ operator: 'mtn_momo', phone_number: '+2250700000000' });
/** The same payment, but the simulator then refuses its refunds (`payer_account_blocked`). */
const PAYMENT_REFUNDS_FAIL = JSON.stringify({ operator: 'mtn_momo', phone_number: '+2250700000020' });
const FIRST_POLL_MS = 300;
const POLL_CAP_MS = 1000;

/** What an intent's client takes for final: succeeded, canceled, expired, or declined (back to `new` with its error). */
export function finalStatus(intent: { status: string; last_payment_error?: unknown }): string | null {
  if (intent.status === 'succeeded' || intent.status === 'canceled' || intent.status === 'expired') return intent.status;
  if (intent.status === 'new' && intent.last_payment_error) return 'declined';
  return null;
}

export interface PaymentOptions {
  /** Fraction of the created intents confirmed. */
  share: number;
  /** Fraction of the succeeded payments refunded. */
  refundFraction: number;
  /** How long a client waits for its payment to be final, from its first confirm request. */
  budgetMs: number;
  random: () => number;
}

export class Payments {
  constructor(
    private readonly client: Client,
    private readonly options: PaymentOptions,
  ) {}

  /** Confirms a share of the created intents, waits for each to be final, and refunds a share of those that succeeded. */
  async pay(record: KeyRecord, intent: string): Promise<void> {
    if (this.options.random() >= this.options.share) return;
    const refunding = this.options.random() < this.options.refundFraction;
    const body = refunding && this.options.random() < REFUND_FAILS_SHARE ? PAYMENT_REFUNDS_FAIL : PAYMENT_BODY;
    const confirm = { key: `${record.key}-confirm`, attempts: [] as Attempt[], answer: null as Answer | null, terminal: null as string | null };
    record.confirm = confirm;
    const payment: PaymentRecord = { startedMs: Date.now(), finalMs: null, status: null, polls: 0, pollFailures: 0 };
    record.payment = payment;
    const done = await this.client.send(confirm.key, body, confirm.attempts, `/v1/payment_intents/${intent}/confirm`);
    confirm.answer = done.answer;
    confirm.terminal = done.terminal;
    if (!done.answer) return;
    const answered = JSON.parse(done.answer.body) as { status: string; last_payment_error?: unknown };
    payment.status = finalStatus(answered) ?? answered.status;
    if (finalStatus(answered)) payment.finalMs = done.answer.atMs;
    else await this.untilFinal(intent, payment);
    if (payment.status === 'succeeded' && refunding) await refundIntent(this.client, record, intent, this.options.random);
  }

  private async untilFinal(intent: string, payment: PaymentRecord): Promise<void> {
    const deadline = payment.startedMs + this.options.budgetMs;
    for (let wait = FIRST_POLL_MS; Date.now() + wait < deadline; wait = Math.min(POLL_CAP_MS, wait * 1.5)) {
      await sleep(wait);
      payment.polls++;
      const seen = await this.client.get<{ status: string; last_payment_error?: unknown }>(`/v1/payment_intents/${intent}`);
      if (!seen) {
        payment.pollFailures++;
        continue;
      }
      const final = finalStatus(seen);
      payment.status = final ?? seen.status;
      if (final) {
        payment.finalMs = Date.now();
        return;
      }
    }
  }
}
