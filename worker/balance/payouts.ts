/**
 * What a payout does to the ledger (DESIGN section 17), for the payouts' processors:
 *
 * - `holdPayout` when the payout is created: takes its amount from the `available`
 *   balance of its currency, or answers `balance_insufficient` (nothing posted).
 *   Concurrent holds never overdraw the balance together, on either store profile
 *   (./ledger.ts). Posted once per payout: a retry answers the first hold.
 * - `settlePayout` when it is paid: nothing more moves, the hold is final. Answers
 *   the hold's transaction.
 * - `releasePayout` when it failed or was canceled: posts the hold's reversal
 *   (`payout_failure`, the same amount back), once per payout.
 */
import type { BalanceTransactionDoc } from '../../common/documents.js';
import { balanceId, ledgerKeyId, movementKeys } from '../../common/ledger.js';
import type { Scope } from '../../common/jobs.js';
import type { BalanceLedger, BalanceLedgerDeps } from './ledger.js';

/** The payout as the ledger needs it. */
export interface PayoutMovement extends Scope {
  /** `po_…` */
  id: string;
  /** > 0, minor units. */
  amount: number;
  currency: string;
  operator: string;
  description?: string | null;
}

/** `again`: the payout was held before (an earlier run's hold answers). */
export type HoldOutcome = { ok: true; txn: BalanceTransactionDoc; again: boolean } | { ok: false; code: 'balance_insufficient'; available: number };

/** Holds the payout's amount from the available balance; `balance_insufficient` when short. */
export async function holdPayout(ledger: BalanceLedger, payout: PayoutMovement): Promise<HoldOutcome> {
  const outcome = await ledger.hold({
    project: payout.project,
    livemode: payout.livemode,
    key: movementKeys.payoutHeld(payout.id),
    currency: payout.currency,
    type: 'payout',
    amount: -payout.amount,
    source: payout.id,
    operator: payout.operator,
    description: payout.description ?? null,
  });
  return outcome.kind === 'posted' ? { ok: true, txn: outcome.txn, again: outcome.again } : { ok: false, code: 'balance_insufficient', available: outcome.available };
}

/** The payout was paid: the hold is final, nothing moves. Answers the hold (null when it was never held). */
export async function settlePayout(deps: Pick<BalanceLedgerDeps, 'collections'>, payout: Pick<PayoutMovement, 'id' | 'project' | 'livemode' | 'currency'>): Promise<BalanceTransactionDoc | null> {
  const identity = await deps.collections.ledgerKeys.findOne({ _id: ledgerKeyId(balanceId(payout, payout.currency), movementKeys.payoutHeld(payout.id)) });
  return identity ? deps.collections.balanceTransactions.findOne({ _id: identity.txn }) : null;
}

/** The release of the payout's hold, when it was posted. */
export async function releasedPayout(deps: Pick<BalanceLedgerDeps, 'collections'>, payout: Pick<PayoutMovement, 'id' | 'project' | 'livemode' | 'currency'>): Promise<{ txn: string } | null> {
  return deps.collections.ledgerKeys.findOne({ _id: ledgerKeyId(balanceId(payout, payout.currency), movementKeys.payoutReleased(payout.id)) }, { projection: { txn: 1 } });
}

/** The payout failed or was canceled: its hold comes back (`payout_failure`), once. Null when it was never held (nothing to give back). */
export async function releasePayout(ledger: BalanceLedger, deps: Pick<BalanceLedgerDeps, 'collections'>, payout: PayoutMovement): Promise<BalanceTransactionDoc | null> {
  if (!(await settlePayout(deps, payout))) return null;
  const outcome = await ledger.post({
    project: payout.project,
    livemode: payout.livemode,
    key: movementKeys.payoutReleased(payout.id),
    currency: payout.currency,
    type: 'payout_failure',
    amount: payout.amount,
    source: payout.id,
    operator: payout.operator,
    description: payout.description ?? null,
  });
  if (outcome.kind !== 'posted') throw new Error(`payout ${payout.id}: its release was refused`);
  return outcome.txn;
}
