/**
 * A payout's money in the ledger (DESIGN.md section 16): its amount is held from the
 * available balance of its currency when it is accepted (a batch's item: when it is
 * sent), and the hold is settled when it is paid, or released (a `payout_failure`
 * reversal) when it fails or is canceled. Each movement is keyed by the payout's id,
 * so a retried job moves nothing twice.
 */
import type { PayoutDoc } from '../../common/payouts.js';
import type { BalanceLedger, BalanceLedgerDeps } from '../balance/ledger.js';
import { holdPayout, releasedPayout, releasePayout, settlePayout, type PayoutMovement } from '../balance/payouts.js';

/** `held_before`: the payout's id was held already (by an earlier run), and that hold answers. */
export type HoldResult = 'held' | 'held_before' | 'insufficient';

/** What the ledger needs of a payout. */
export type PayoutMoney = Pick<PayoutDoc, '_id' | 'project' | 'livemode' | 'amount' | 'currency' | 'operator' | 'description'>;

export interface PayoutBalance {
  /** Holds the payout's amount from the available balance, once per payout; 'insufficient' when short. */
  hold(payout: PayoutMoney): Promise<HoldResult>;
  /** The payout was paid: its hold becomes a `payout` transaction, once. */
  settle(payout: PayoutMoney): Promise<void>;
  /** The payout failed or was canceled, or was never made (./stranded.ts): its hold is released (`payout_failure`), once. */
  release(payout: PayoutMoney): Promise<void>;
  /** Whether the payout's hold was released. */
  released(payout: PayoutMoney): Promise<boolean>;
}

function movement(payout: PayoutMoney): PayoutMovement {
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
    hold: async (payout) => {
      const outcome = await holdPayout(ledger, movement(payout));
      return !outcome.ok ? 'insufficient' : outcome.again ? 'held_before' : 'held';
    },
    settle: async (payout) => {
      await settlePayout(deps, movement(payout));
    },
    release: async (payout) => {
      await releasePayout(ledger, deps, movement(payout));
    },
    released: async (payout) => (await releasedPayout(deps, movement(payout))) !== null,
  };
}
