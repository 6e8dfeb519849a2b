/**
 * Holds whose payout was never made (DESIGN section 17). A payout made alone is held
 * before its document is inserted (./create.ts). A create job that died between the
 * two, and that Redis then lost, leaves the hold and no payout. A retry of its key
 * makes the payout under the hold's id, but a client that never retries would leave
 * the money held for ever. So a hold older than `PAYOUT_HOLD_STRANDED_MS` whose
 * payout does not exist is released (`payout_failure`, once), under the payout's
 * lock. A create job that comes after it finds the hold released and makes its
 * payout under a new id, held anew.
 *
 * The holds are read in `_id` order (ids are time-ordered) from where the last check
 * stopped, up to the stranded age. The cursor is kept in Redis; a lost one starts
 * again two days back. On MongoDB the read is the `type_id` index; on the local
 * stack's store it scans the transactions, so the check runs at most four times per
 * stranded age, on one worker at a time.
 */
import type { Redis } from 'ioredis';
import type { BalanceTransactionDoc } from '../../common/documents.js';
import { ID_PREFIXES, idBodyFloor } from '../../common/ids.js';
import type { Collections } from '../../common/mongo.js';
import { withRecordLock } from '../record-lock.js';
import type { PayoutBalance } from './balance.js';
import { payoutLockKey } from './record.js';

export interface StrandedDeps {
  collections: Pick<Collections, 'balanceTransactions' | 'payouts'>;
  redis: Redis;
  prefix: string;
  balance: PayoutBalance;
  /** Epoch ms. */
  now: () => number;
  /** How old a hold without its payout must be to be released. */
  strandedMs: number;
}

const LOOK_BACK_MS = 2 * 24 * 3600_000;
const PAGE = 500;

/** The first transaction id of the millisecond `ms`: a bound on `_id` in time. */
function txnBound(ms: number): string {
  return `${ID_PREFIXES.balance_transaction}_${idBodyFloor(ms)}`;
}

/** Null when another check ran within a quarter of the stranded age. */
export async function releaseStrandedHolds(deps: StrandedDeps): Promise<{ checked: number; released: number } | null> {
  const turn = await deps.redis.set(`${deps.prefix}:payouts:stranded-turn`, '1', 'PX', Math.floor(deps.strandedMs / 4), 'NX');
  if (turn !== 'OK') return null;
  const now = deps.now();
  const cursorKey = `${deps.prefix}:payouts:stranded-after`;
  const floor = txnBound(now - deps.strandedMs - LOOK_BACK_MS);
  const saved = await deps.redis.get(cursorKey);
  const after = saved !== null && saved > floor ? saved : floor;
  const holds = await deps.collections.balanceTransactions
    .find({ type: 'payout', _id: { $gt: after, $lt: txnBound(now - deps.strandedMs) } }, { projection: { _id: 1, project: 1, livemode: 1, amount: 1, currency: 1, source: 1, operator: 1 } })
    .sort({ _id: 1 })
    .limit(PAGE)
    .toArray();
  let released = 0;
  for (const hold of holds) if (await releaseIfLost(deps, hold)) released++;
  const last = holds.at(-1);
  if (last) await deps.redis.set(cursorKey, last._id, 'PX', LOOK_BACK_MS);
  return { checked: holds.length, released };
}

type Hold = Pick<BalanceTransactionDoc, '_id' | 'project' | 'livemode' | 'amount' | 'currency' | 'source' | 'operator'>;

async function releaseIfLost(deps: StrandedDeps, hold: Hold): Promise<boolean> {
  const exists = () => deps.collections.payouts.findOne({ _id: hold.source }, { projection: { _id: 1 } });
  if (await exists()) return false;
  return withRecordLock(deps.redis, payoutLockKey(deps.prefix, hold.source), async () => {
    if (await exists()) return false;
    await deps.balance.release({
      _id: hold.source,
      project: hold.project,
      livemode: hold.livemode,
      amount: -hold.amount,
      currency: hold.currency,
      operator: hold.operator ?? 'unknown',
      description: 'Released: the payout was never made (its request was lost)',
    });
    return true;
  });
}
