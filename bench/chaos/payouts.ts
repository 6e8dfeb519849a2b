/**
 * The payout clients of a chaos run (`--payouts [R]`, DESIGN.md section 17), in live
 * mode against a local MTN MoMo fake (test/fakes/mtn-momo-fake.ts): the run funds a
 * live balance with one MTN payment its fake payer approves, then sends R keyed
 * payouts a second for the load's duration, through the storm of faults; each
 * client retries its POST like a create, then polls its payout until it is paid or
 * failed. A tenth go to a payee MTN does not know (`PAYEE_NOT_FOUND`).
 *
 * What must hold afterwards (`checkPayouts`):
 * - every answered payout key made exactly one payout (its `metadata.key`);
 * - every payout ended paid or failed, its end recorded once (one `payout.paid` or
 *   `payout.failed`, one `payout.created`);
 * - never paid twice at the operator: MTN's fake holds one successful transfer per
 *   paid payout, none per failed one, whatever references were used;
 * - the ledger balances: the balance's transactions sum to its `available`, which is
 *   the payments minus the paid payouts.
 */
import type { Db } from 'mongodb';
import { MtnMomoFake } from '../../test/fakes/mtn-momo-fake.js';
import { mtnReferenceId } from '../../worker/operators/mtn-momo/wire.js';
import { Client, type Attempt } from './client.js';
import type { Verdict } from './verdicts.js';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

const CREDENTIALS = {
  collection: { subscriptionKey: 'chaos-col-sub', userId: '0b4c6d3e-1111-4a2b-8c3d-00000000c0a5', apiKey: 'chaos-col-api-key' },
  disbursement: { subscriptionKey: 'chaos-dis-sub', userId: '0b4c6d3e-2222-4a2b-8c3d-00000000c0a5', apiKey: 'chaos-dis-api-key' },
};
const ENVIRONMENT = 'mtnivorycoast';
/** The funding payment: MTN's maximum for one payment in Côte d'Ivoire. */
const FUNDING = 1_500_000;
const AMOUNT = 1000;
const UNKNOWN_PAYEE = '+2250500099999';
const POLL_MS = 1000;

export interface PayoutRecord {
  key: string;
  attempts: Attempt[];
  id: string | null;
  terminal: string | null;
  status: string | null;
  finalMs: number | null;
}

export class PayoutStorm {
  readonly records: PayoutRecord[] = [];
  private fake!: MtnMomoFake;
  private client!: Client;

  constructor(private readonly options: { rate: number; durationS: number; runId: string }) {}

  /** Starts MTN's fake; the variables that point the fleet's live MTN account at it. */
  async start(): Promise<Record<string, string>> {
    this.fake = await new MtnMomoFake(ENVIRONMENT, CREDENTIALS).start();
    this.fake.payeeOutcomes.set(UNKNOWN_PAYEE.slice(1), 'PAYEE_NOT_FOUND');
    return {
      MTN_MOMO_BASE_URL: this.fake.url,
      MTN_MOMO_TARGET_ENVIRONMENT: ENVIRONMENT,
      MTN_MOMO_COLLECTION_SUBSCRIPTION_KEY: CREDENTIALS.collection.subscriptionKey,
      MTN_MOMO_COLLECTION_USER_ID: CREDENTIALS.collection.userId,
      MTN_MOMO_COLLECTION_API_KEY: CREDENTIALS.collection.apiKey,
      MTN_MOMO_DISBURSEMENT_SUBSCRIPTION_KEY: CREDENTIALS.disbursement.subscriptionKey,
      MTN_MOMO_DISBURSEMENT_USER_ID: CREDENTIALS.disbursement.userId,
      MTN_MOMO_DISBURSEMENT_API_KEY: CREDENTIALS.disbursement.apiKey,
      OPERATOR_POLL_SCHEDULE_MS: '1000,2000,4000',
    };
  }

  stop(): Promise<void> {
    this.client?.close();
    return this.fake?.stop() ?? Promise.resolve();
  }

  /** Funds the live key's xof balance with one MTN payment, approved by the fake's payer; before the faults. */
  async fund(client: Client): Promise<void> {
    this.client = client;
    const created = await client.send(`fund-${this.options.runId}`, JSON.stringify({ amount: FUNDING, currency: 'xof' }), []);
    if (!created.answer) throw new Error(`the funding payment could not be created: ${created.terminal}`);
    const intent = created.answer.id;
    const confirmed = await client.send(`fund-${this.options.runId}-confirm`, JSON.stringify({ operator: 'mtn_momo', phone_number: '+2250500000001' }), [], `/v1/payment_intents/${intent}/confirm`);
    if (!confirmed.answer) throw new Error(`the funding payment could not be confirmed: ${confirmed.terminal}`);
    const reference = mtnReferenceId(`${intent}:1`);
    for (let i = 0; !this.fake.transfers.has(reference); i++) {
      if (i > 600) throw new Error('MTN never received the funding payment');
      await sleep(100);
    }
    await this.fake.settle(reference);
    for (let i = 0; ; i++) {
      const seen = await client.get<{ status: string }>(`/v1/payment_intents/${intent}`);
      if (seen?.status === 'succeeded') break;
      if (i > 600) throw new Error('the funding payment never succeeded');
      await sleep(200);
    }
    // The payment is posted before its event: once listed, the balance holds it.
    for (let i = 0; ; i++) {
      const events = await client.get<{ data: unknown[] }>('/v1/events?type=payment_intent.succeeded');
      if ((events?.data.length ?? 0) > 0) return;
      if (i > 600) throw new Error('the funding payment was never recorded');
      await sleep(200);
    }
  }

  /** R keyed payouts a second for the load's duration, each followed to its end within `budgetMs`. */
  async run(startMs: number, budgetMs: number): Promise<void> {
    const total = Math.floor(this.options.rate * this.options.durationS);
    const running: Array<Promise<void>> = [];
    for (let i = 0; i < total; i++) {
      const due = startMs + (i / this.options.rate) * 1000;
      if (due > Date.now()) await sleep(due - Date.now());
      running.push(this.one(i, budgetMs));
    }
    await Promise.all(running);
  }

  private async one(i: number, budgetMs: number): Promise<void> {
    const record: PayoutRecord = { key: `payout-${this.options.runId}-${i}`, attempts: [], id: null, terminal: null, status: null, finalMs: null };
    this.records.push(record);
    const phone = i % 10 === 9 ? UNKNOWN_PAYEE : `+22505${String(10_000 + i).padStart(8, '0')}`;
    const body = JSON.stringify({ amount: AMOUNT, currency: 'xof', operator: 'mtn_momo', phone_number: phone, metadata: { key: record.key } });
    const started = Date.now();
    const done = await this.client.send(record.key, body, record.attempts, '/v1/payouts');
    record.terminal = done.terminal;
    if (!done.answer) return;
    record.id = done.answer.id;
    while (Date.now() - started < budgetMs) {
      const seen = await this.client.get<{ status: string }>(`/v1/payouts/${record.id}`);
      if (seen) record.status = seen.status;
      if (seen?.status === 'paid' || seen?.status === 'failed') {
        record.finalMs = Date.now();
        return;
      }
      await sleep(POLL_MS);
    }
  }

  /** The verdicts, from MongoDB and MTN's fake, once the processes have stopped. */
  async check(db: Db, project: string): Promise<{ verdicts: Verdict[]; figures: Record<string, number> }> {
    const payouts = await db
      .collection<{ _id: string; project: string; livemode: boolean; status: string; amount: number; metadata: Array<{ k: string; v: string }> }>('payouts')
      .find({ project, livemode: true })
      .toArray();
    const byKey = new Map<string, string[]>();
    for (const p of payouts) {
      const key = p.metadata.find((m) => m.k === 'key')?.v;
      if (key) byKey.set(key, [...(byKey.get(key) ?? []), p._id]);
    }
    const answered = this.records.filter((r) => r.id !== null);
    const keyFaults = answered.filter((r) => (byKey.get(r.key) ?? []).length !== 1 || byKey.get(r.key)![0] !== r.id);
    const keys = new Set(this.records.map((r) => r.key));
    const strays = payouts.filter((p) => !keys.has(p.metadata.find((m) => m.k === 'key')?.v ?? ''));

    const events = await db.collection<{ type: string; object_id: string }>('events').find({ project, livemode: true, type: { $regex: '^payout\\.' } }).toArray();
    const count = new Map<string, Record<string, number>>();
    for (const e of events) {
      const seen = count.get(e.object_id) ?? {};
      seen[e.type] = (seen[e.type] ?? 0) + 1;
      count.set(e.object_id, seen);
    }
    const notFinal = payouts.filter((p) => p.status !== 'paid' && p.status !== 'failed');
    const badEnds = payouts.filter((p) => {
      const seen = count.get(p._id) ?? {};
      const ends = (seen['payout.paid'] ?? 0) + (seen['payout.failed'] ?? 0) + (seen['payout.canceled'] ?? 0);
      return seen['payout.created'] !== 1 || ends !== 1 || seen[`payout.${p.status}`] !== 1;
    });
    const twice = payouts.filter((p) => this.fake.paidTo(p._id) !== (p.status === 'paid' ? 1 : 0));

    const balances = await db.collection<{ project: string; livemode: boolean; currency: string; available: number }>('balances').find({ project, livemode: true, currency: 'xof' }).toArray();
    const available = balances[0]?.available ?? null;
    const txns = await db.collection<{ project: string; livemode: boolean; currency: string; net: number }>('balance_transactions').find({ project, livemode: true, currency: 'xof' }).toArray();
    const summed = txns.reduce((sum, t) => sum + t.net, 0);
    const paidTotal = payouts.filter((p) => p.status === 'paid').reduce((sum, p) => sum + p.amount, 0);
    const expected = FUNDING - paidTotal;
    const figures = {
      payout_keys: this.records.length,
      answered: answered.length,
      payouts: payouts.length,
      paid: payouts.filter((p) => p.status === 'paid').length,
      failed: payouts.filter((p) => p.status === 'failed').length,
      transfers: [...this.fake.transfers.values()].filter((t) => t.kind === 'transfer').length,
      transfer_requests: this.fake.server.log.filter((r) => r.method === 'POST' && r.path === '/disbursement/v1_0/transfer').length,
      balance_available: available ?? -1,
    };
    const verdicts: Verdict[] = [
      {
        name: 'payout keys: each answered key made exactly one payout',
        pass: keyFaults.length === 0 && strays.length === 0 && answered.length === this.records.length,
        detail: `${answered.length}/${this.records.length} keys answered; ${keyFaults.length} with other than one payout; ${strays.length} payouts of no key`,
      },
      {
        name: 'payouts: each paid or failed, its end recorded once',
        pass: notFinal.length === 0 && badEnds.length === 0,
        detail: `${figures.paid} paid, ${figures.failed} failed, ${notFinal.length} not final${notFinal.length ? ` (${notFinal.slice(0, 3).map((p) => `${p._id} ${p.status}`).join(', ')})` : ''}; ${badEnds.length} with other than one created and one end event`,
      },
      {
        name: 'payouts: never paid twice at the operator',
        pass: twice.length === 0,
        detail: `${figures.transfers} transfers at MTN for ${payouts.length} payouts (${figures.transfer_requests} requests); ${twice.length} payouts whose transfers disagree with their status`,
      },
      {
        name: 'ledger: balanced (transactions sum to the balance, payments minus paid payouts)',
        pass: available !== null && summed === available && available === expected,
        detail: `available ${available}, transactions sum ${summed}, payments minus paid payouts ${expected}`,
      },
    ];
    return { verdicts, figures };
  }
}
