/**
 * Payouts on their way whose next step Redis lost (a restart from an old snapshot, a
 * failover): MongoDB holds every payout that is not final, with the number of its
 * next step, and this sweep adds that step again. A step Redis still holds is not
 * added twice (its job id), and a step run again changes nothing it did. Batches
 * still processing get a check. Bounded per pass; the oldest first.
 */
import type { PayoutStatus } from '../../common/payouts.js';
import { schedulePayoutStep } from './process.js';
import { scheduleBatchCheck, type PayoutRecordDeps } from './record.js';

const PASS_LIMIT = 2_000;
const UNFINISHED: PayoutStatus[] = ['pending', 'enqueued', 'in_transit'];

/** `graceMs`: how long a payout must have waited since it was created to be looked at. */
export async function sweepPayouts(deps: PayoutRecordDeps, graceMs: number): Promise<{ payouts: number; requeued: number }> {
  const before = Math.floor((deps.now() - graceMs) / 1000);
  const docs = await deps.collections.payouts
    .find({ status: { $in: UNFINISHED } }, { projection: { _id: 1, project: 1, livemode: 1, steps: 1, created: 1 } })
    .sort({ status: 1, _id: 1 })
    .limit(PASS_LIMIT)
    .toArray();
  let requeued = 0;
  for (const doc of docs) {
    if (doc.created > before) continue;
    const state = await deps.intentsQueue.getJobState(`payout-${doc._id}-${doc.steps}`);
    if (state !== 'unknown' && state !== 'completed' && state !== 'failed') continue;
    await schedulePayoutStep(deps, doc, doc.steps + 1, 0);
    requeued++;
  }
  const batches = await deps.collections.payoutBatches.find({ status: 'processing' }, { projection: { _id: 1, project: 1, livemode: 1 } }).limit(PASS_LIMIT).toArray();
  for (const batch of batches) await scheduleBatchCheck(deps, batch._id, { project: batch.project, livemode: batch.livemode });
  return { payouts: docs.length, requeued };
}
