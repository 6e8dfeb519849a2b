/**
 * A payout's money in the ledger (DESIGN.md section 16): its amount is held from the
 * available balance of its currency when it is accepted (a batch's item: when it is
 * sent), and the hold is settled when it is paid, or released (a `payout_failure`
 * reversal) when it fails or is canceled. Each movement is keyed by the payout's id,
 * so a retried job moves nothing twice.
 */
import type { PayoutDoc } from '../../common/payouts.js';
import type { BalanceLedger, BalanceLedgerDeps } from '../balance/ledger.js';
import { holdPayout, releasePayout, settlePayout, type PayoutMovement } from '../balance/payouts.js';

export type HoldResult = 'held' | 'insufficient';

export interface PayoutBalance {
  /** Holds the payout's amount from the available balance, once per payout; 'insufficient' when short. */
  hold(payout: PayoutDoc): Promise<HoldResult>;
  /** The payout was paid: its hold becomes a `payout` transaction, once. */
  settle(payout: PayoutDoc): Promise<void>;
  /** The payout failed or was canceled: its hold is released (`payout_failure`), once. */
  release(payout: PayoutDoc): Promise<void>;
}

function movement(payout: PayoutDoc): PayoutMovement {
  return {
    id: payout._id,
    project: payout.project,
    livemode: payout.livemode,
    amount: payout.amount,
    currency: payout.currency,
    operator: payout.operator,
    description: payout.description,
  };
}

/** The payouts' side of the ledger (worker/balance/payouts.ts). */
export function ledgerBalance(ledger: BalanceLedger, deps: Pick<BalanceLedgerDeps, 'collections'>): PayoutBalance {
  return {
    hold: async (payout) => ((await holdPayout(ledger, movement(payout))).ok ? 'held' : 'insufficient'),
    settle: async (payout) => {
      await settlePayout(deps, movement(payout));
    },
    release: async (payout) => {
      await releasePayout(ledger, deps, movement(payout));
    },
  };
}
