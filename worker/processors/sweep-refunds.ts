/**
 * The refunds' sweeper: MongoDB is the record of every refund still pending, and
 * Redis may lose the jobs that carry it on (a restart from an old snapshot, a
 * failover to a lagging replica). Each sweep:
 *
 * - reads the pending refunds (index `status_id` on MongoDB), and for each one made
 *   more than `graceMs` ago whose last scheduled step's job is gone or finished,
 *   schedules its next step; the step reads the refund and its intent again, so one
 *   that is not needed changes nothing;
 * - reads the intents with a pending ledger entry (index `refunds_pending`), and
 *   rebuilds the document of an entry whose create job was lost after the hold
 *   (without its description and metadata, which only that job carried), so no
 *   amount stays held by a refund nobody can see or finish.
 *
 * On the local stack's store (docs/storage.md) both reads scan their collection, once per sweep (every
 * `INTENTS_SWEEP_INTERVAL_MS`), never on a request's path.
 */
import type { Collections } from '../../common/mongo.js';
import type { TypedQueue } from '../../common/jobs.js';
import { processJobId, scheduleRefundStep } from '../refunds/process.js';
import { ensureRefundDoc, recordCreated, type RecordDeps } from '../refunds/record.js';

const BATCH = 1000;

export interface SweepRefundsDeps extends RecordDeps {
  collections: Collections;
  intentsQueue: TypedQueue<'intents'>;
}

export async function sweepRefunds(deps: SweepRefundsDeps, nowMs: number, graceMs: number): Promise<{ refunds: number; rebuilt: number }> {
  const cutoff = Math.floor((nowMs - graceMs) / 1000);
  let rebuilt = 0;
  const intents = await deps.collections.paymentIntents
    .find({ refunds_pending: { $gt: 0 } }, { projection: { created_event: 0, history: 0 } })
    .limit(BATCH)
    .toArray();
  for (const intent of intents) {
    for (const entry of intent.refunds ?? []) {
      if (entry.status !== 'pending' || entry.c > cutoff) continue;
      if (await deps.collections.refunds.findOne({ _id: entry.id }, { projection: { _id: 1 } })) continue;
      const refund = await ensureRefundDoc(deps, intent, entry, null);
      await recordCreated(deps, refund, entry);
      rebuilt++;
    }
  }
  const pending = await deps.collections.refunds
    .find({ status: 'pending' }, { projection: { _id: 1, project: 1, livemode: 1, payment_intent: 1, created: 1, polls: 1 } })
    .limit(BATCH)
    .toArray();
  let redriven = 0;
  for (const refund of pending) {
    if (refund.created > cutoff) continue;
    const state = await deps.intentsQueue.getJobState(processJobId(refund._id, refund.polls));
    if (state === 'unknown') await scheduleRefundStep(deps.intentsQueue, refund, refund.polls, 0);
    else if (state === 'completed' || state === 'failed') await scheduleRefundStep(deps.intentsQueue, refund, refund.polls + 1, 0);
    else continue;
    redriven++;
  }
  return { refunds: redriven, rebuilt };
}
