/**
 * The ledger's vocabulary (DESIGN section 16), shared by the worker that posts
 * (worker/balance/ledger.ts) and the api that reads: where a balance lives, the
 * identity of a movement, the double entry of each type, and the fee of a payment.
 */
import type { BalanceTransactionType, LedgerEntry } from './documents.js';
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
