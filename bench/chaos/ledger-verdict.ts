/**
 * The ledger's verdict (DESIGN section 16, "the ledger always balances"): after the
 * storm, per mode and currency of the run's project,
 *
 *   Σ transactions' net = the balance's `available`
 *                       = Σ succeeded payments − their fees − what refunds hold
 *                         (succeeded ones, and pending ones still held) + adjustments,
 *
 * and every movement is posted once: one `payment` per succeeded intent and none for
 * another, one `refund` per refund held, one `refund_failure` per failed refund.
 * Transactions a crash left in a balance's tail only (written by the next round or
 * the sweeper) count as posted, and are reported.
 */
import type { Db } from 'mongodb';
import type { BalanceDoc, BalanceTransactionDoc, PaymentIntentDoc, RefundDoc } from '../../common/documents.js';
import type { Verdict } from './verdicts.js';
import { tailTransactions } from '../../common/ledger.js';

export interface LedgerFigures {
  currencies: Array<{ livemode: boolean; currency: string; transactions: number; sum: number; balance: number; expected: number }>;
  duplicated: number;
  /** Succeeded intents without their payment posted, and payments posted for intents that did not succeed. */
  unposted: number;
  wrongPayments: number;
  /** Refunds whose hold, or whose failure's release, is not posted once. */
  refundMismatches: number;
  tailOnly: number;
}

export async function checkLedger(db: Db, project: string): Promise<{ verdict: Verdict; figures: LedgerFigures }> {
  const balances = await db.collection<BalanceDoc>('balances').find({ project }).toArray();
  const stored = await db.collection<BalanceTransactionDoc>('balance_transactions').find({ project }, { projection: { entries: 0 } }).toArray();
  const ids = new Set(stored.map((t) => t._id));
  const tailOnly = balances.flatMap((b) => tailTransactions(b).filter((t) => !ids.has(t._id)));
  const txns = [...stored, ...tailOnly];
  const intents = await db
    .collection<PaymentIntentDoc>('payment_intents')
    .find({ project }, { projection: { _id: 1, status: 1, amount: 1, currency: 1, livemode: 1, amount_held: 1 } })
    .toArray();
  const refunds = await db.collection<RefundDoc>('refunds').find({ project }, { projection: { _id: 1, status: 1, amount: 1, currency: 1, livemode: 1 } }).toArray();

  const keys = new Map<string, number>();
  for (const t of txns) keys.set(`${t.livemode}|${t.currency}|${t.key}`, (keys.get(`${t.livemode}|${t.currency}|${t.key}`) ?? 0) + 1);
  const duplicated = [...keys.values()].filter((n) => n > 1).length;
  const paymentsPosted = new Set(txns.filter((t) => t.type === 'payment').map((t) => t.source));
  const succeeded = intents.filter((pi) => pi.status === 'succeeded');
  const unposted = succeeded.filter((pi) => !paymentsPosted.has(pi._id)).length;
  const succeededIds = new Set(succeeded.map((pi) => pi._id));
  const wrongPayments = [...paymentsPosted].filter((id) => !succeededIds.has(id)).length;
  const held = new Set(txns.filter((t) => t.type === 'refund').map((t) => t.source));
  const released = new Set(txns.filter((t) => t.type === 'refund_failure').map((t) => t.source));
  // A refund still pending may not be held yet (its first step comes after its create).
  const refundMismatches = refunds.filter((r) => (r.status !== 'pending' && !held.has(r._id)) || (r.status === 'failed') !== released.has(r._id)).length;

  const currencies: LedgerFigures['currencies'] = [];
  const groups = new Set([...txns.map((t) => `${t.livemode}|${t.currency}`), ...succeeded.map((pi) => `${pi.livemode}|${pi.currency}`)]);
  for (const group of groups) {
    const [mode, currency] = group.split('|') as [string, string];
    const livemode = mode === 'true';
    const mine = txns.filter((t) => t.livemode === livemode && t.currency === currency);
    const sum = mine.reduce((s, t) => s + t.net, 0);
    const balance = balances.find((b) => b.livemode === livemode && b.currency === currency)?.available ?? 0;
    const paid = succeeded.filter((pi) => pi.livemode === livemode && pi.currency === currency);
    const fees = mine.filter((t) => t.type === 'payment').reduce((s, t) => s + t.fee, 0);
    const adjustments = mine.filter((t) => t.type === 'adjustment').reduce((s, t) => s + t.net, 0);
    const payouts = mine.filter((t) => t.type === 'payout' || t.type === 'payout_failure').reduce((s, t) => s + t.net, 0);
    // The held amounts of refunds still pending whose hold is not posted yet are not in the ledger yet.
    const unheld = refunds.filter((r) => r.status === 'pending' && !held.has(r._id) && r.livemode === livemode && r.currency === currency).reduce((s, r) => s + r.amount, 0);
    const expected = paid.reduce((s, pi) => s + pi.amount - (pi.amount_held ?? 0), 0) - fees + adjustments + payouts + unheld;
    currencies.push({ livemode, currency, transactions: mine.length, sum, balance, expected });
  }
  const figures: LedgerFigures = { currencies, duplicated, unposted, wrongPayments, refundMismatches, tailOnly: tailOnly.length };
  const balanced = currencies.every((c) => c.sum === c.balance && c.sum === c.expected);
  return {
    figures,
    verdict: {
      name: 'the ledger balances: transactions = balance = payments − fees − refunds, each movement posted once',
      pass: balanced && duplicated === 0 && unposted === 0 && wrongPayments === 0 && refundMismatches === 0,
      detail:
        currencies.map((c) => `${c.livemode ? 'live' : 'test'} ${c.currency}: ${c.transactions} transactions sum ${c.sum}, balance ${c.balance}, expected ${c.expected}`).join('; ') +
        `; ${duplicated} movements posted twice, ${unposted} succeeded payments not posted, ${wrongPayments} posted without succeeding, ${refundMismatches} refunds not posted once, ${tailOnly.length} in a tail only`,
    },
  };
}
