/**
 * A batch completes when every one of its payouts is final (paid, failed or
 * canceled): its counts are then stored with it, and `payout_batch.completed` is
 * recorded once (its key `<pob_…>:payout_batch.completed`). Each payout's end asks for
 * a check (./record.ts `scheduleBatchCheck`); a check that finds payouts still on
 * their way does nothing, the next end asks again, and the sweeper (./sweep.ts) looks
 * at processing batches now and then.
 */
import type { CheckPayoutBatchData } from '../../common/jobs.js';
import { countPayouts, isFinalPayout, presentPayoutBatch, type PayoutBatchDoc } from '../../common/payouts.js';
import { recordEvent } from '../refunds/record.js';
import type { PayoutRecordDeps } from './record.js';

export async function checkPayoutBatch(deps: PayoutRecordDeps, data: CheckPayoutBatchData): Promise<{ status: string }> {
  const batch = await deps.collections.payoutBatches.findOne({ _id: data.batch });
  if (!batch || batch.project !== data.project || batch.livemode !== data.livemode) return { status: 'missing' };
  if (batch.status === 'completed') return { status: 'completed' };
  const items = await deps.collections.payouts.find({ batch: batch._id }, { projection: { status: 1, project: 1, livemode: 1 } }).toArray();
  const statuses = items.filter((p) => p.project === batch.project && p.livemode === batch.livemode).map((p) => p.status);
  if (statuses.length < batch.total || !statuses.every(isFinalPayout)) return { status: 'processing' };
  const completed: PayoutBatchDoc = { ...batch, status: 'completed', completed_at: Math.floor(deps.now() / 1000), counts: countPayouts(statuses) };
  const scope = { project: batch.project, livemode: batch.livemode };
  await recordEvent(deps, scope, {
    id: batch.ev.completed,
    type: 'payout_batch.completed',
    objectId: batch._id,
    object: () => presentPayoutBatch(completed, completed.counts!),
    key: `${batch._id}:payout_batch.completed`,
  });
  await deps.collections.payoutBatches.updateOne({ _id: batch._id }, { $set: { status: 'completed', completed_at: completed.completed_at, counts: completed.counts } });
  return { status: 'completed' };
}
