/**
 * The ledger's vocabulary (DESIGN section 16), shared by the worker that posts
 * (worker/balance/ledger.ts) and the api that reads: where a balance lives, the
 * identity of a movement, the double entry of each type, and the fee of a payment.
 */
import type { BalanceDoc, BalanceTransactionDoc, BalanceTransactionType, LedgerEntry } from './documents.js';
import type { Scope } from './jobs.js';

/** The `_id` of the balance of `scope` in `currency` (project names never hold `|`). */
export function balanceId(scope: Scope, currency: string): string {
  return `${scope.project}|${scope.livemode ? 'live' : 'test'}|${currency}`;
}

/** The `_id` of a movement's identity within its balance (`LedgerKeyDoc`). */
export function ledgerKeyId(balance: string, movement: string): string {
  return `${balance}|${movement}`;
}

/** The `by_operator` key of a posting with no operator (an adjustment). */
export const NO_OPERATOR = '_none';

/** Movement keys: one per movement, the same for every writer and every retry. */
export const movementKeys = {
  payment: (paymentIntent: string) => `payment:${paymentIntent}`,
  /** Money the operator took for an intent that did not succeed with it (an operator discrepancy, worker/reconcile/). */
  latePayment: (discrepancy: string) => `late_payment:${discrepancy}`,
  refundHeld: (refund: string) => `refund:${refund}:held`,
  refundReleased: (refund: string) => `refund:${refund}:released`,
  payoutHeld: (payout: string) => `payout:${payout}:held`,
  payoutReleased: (payout: string) => `payout:${payout}:released`,
  adjustment: (reference: string) => `adjustment:${reference}`,
};

/** Stripe's `reporting_category` of each type. */
export const REPORTING_CATEGORIES: Readonly<Record<BalanceTransactionType, string>> = {
  payment: 'charge',
  refund: 'refund',
  refund_failure: 'refund_failure',
  payout: 'payout',
  payout_failure: 'payout_reversal',
  adjustment: 'other_adjustment',
};

/** The account on the other side of the merchant's balance, per type. */
const COUNTERPART: Readonly<Record<BalanceTransactionType, LedgerEntry['account']>> = {
  payment: 'payers',
  refund: 'payers',
  refund_failure: 'payers',
  payout: 'recipients',
  payout_failure: 'recipients',
  adjustment: 'adjustments',
};

/** The double entry of a posting: the balance moves by `net`, the fee goes to `fees`, the counterpart gives the gross; they sum to zero. */
export function entriesOf(type: BalanceTransactionType, amount: number, fee: number): LedgerEntry[] {
  const entries: LedgerEntry[] = [
    { account: 'available', amount: amount - fee },
    { account: COUNTERPART[type], amount: -amount },
  ];
  if (fee !== 0) entries.push({ account: 'fees', amount: fee });
  return entries;
}

/** An operator account's pricing (its configuration's `fee_percent`, `fee_fixed`); none by default. */
export interface FeeSchedule {
  /** Percent of the amount, 0 … 100 (decimals allowed). */
  percent: number;
  /** Minor units of the payment's currency, added per payment. */
  fixed: number;
}

export const NO_FEE: FeeSchedule = { percent: 0, fixed: 0 };

/** A payment's fee: its percent rounded half up to the minor unit, plus the fixed part, never more than the amount. */
export function feeOf(amount: number, schedule: FeeSchedule): number {
  const fee = Math.round((amount * schedule.percent) / 100) + schedule.fixed;
  return Math.max(0, Math.min(amount, fee));
}

/**
 * A transaction as a balance's `tail` keeps it until its insert is confirmed
 * (worker/balance/ledger.ts): one string of what the balance does not say already
 * (its project, mode and currency) and what cannot be derived (`net`, `created`,
 * `entries` are). A string, not a document: the local stack's store rewrites the
 * balance whole at every round, and a string costs it its bytes alone.
 */
export function tailEntry(txn: BalanceTransactionDoc): string {
  return JSON.stringify([txn._id, txn.key, txn.type, txn.amount, txn.fee, txn.source, txn.operator, txn.description, txn.created_ms, txn.seq, txn.balance_after]);
}

type TailRow = [string, string, BalanceTransactionType, number, number, string, string | null, string | null, number, number, number];

/** The transactions of a balance's tail, whole; a tail written before the strings were (whole documents) is read as it is. */
export function tailTransactions(balance: Pick<BalanceDoc, 'project' | 'livemode' | 'currency' | 'tail'>): BalanceTransactionDoc[] {
  return balance.tail.map((entry) => {
    if (typeof entry !== 'string') return entry;
    const [_id, key, type, amount, fee, source, operator, description, createdMs, seq, balanceAfter] = JSON.parse(entry) as TailRow;
    return {
      _id,
      project: balance.project,
      livemode: balance.livemode,
      currency: balance.currency,
      key,
      type,
      amount,
      fee,
      net: amount - fee,
      source,
      operator,
      description,
      created: Math.floor(createdMs / 1000),
      created_ms: createdMs,
      seq,
      balance_after: balanceAfter,
      entries: entriesOf(type, amount, fee),
    };
  });
}
