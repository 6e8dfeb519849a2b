/**
 * The lifecycle's sweeper: MongoDB is the record of every pending step of a payment
 * intent, and Redis may lose the delayed jobs that carry them (a restart from an old
 * snapshot, a failover to a lagging replica). Each sweep reads the intents that have
 * a step ahead, and enqueues their jobs again under the same deterministic ids:
 *
 * - an attempt in flight (`requires_action`, `processing`): the delayed jobs its
 *   last transition scheduled (the history entry's `fu`), and its expiry;
 * - an intent in `new` whose `expires_at` has passed: its expiry, now;
 * - a live attempt whose next check (`payment.next_check_at`) is due: that check,
 *   under its job id (processors/operator-check.ts), so a Redis that lost it strands
 *   no attempt. The first check is the confirm's delayed job, above.
 *
 * A job that still exists is not added twice (BullMQ ignores a known id); one that
 * already ran is a no-op when it runs again, since every decision re-checks the
 * intent's status and attempt. Intents past these states, the vast majority, are not
 * read: the filter is index-shaped on MongoDB ({status, expires_at}).
 *
 * A reconnect's sweeps (`recentMs`, worker/schedules.ts) also record the events of
 * the transitions made within `recentMs`: a job that applied its transition and had
 * not yet recorded its event when Redis lost it (a restart from a snapshot taken
 * before the job began) leaves the event in the intent's newest history entry alone,
 * and a final transition has no next one to record it. Recording is idempotent: an
 * event recorded already costs one read by `_id` ({changed_ms} on MongoDB).
 */
import type { PaymentIntentDoc } from '../../common/documents.js';
import type { TypedQueue } from '../../common/jobs.js';
import type { Collections } from '../../common/mongo.js';
import { scheduleCheck, scheduleExpiry, scheduleFollowUps } from '../lifecycle/follow-ups.js';

type Evt = { id: string; type: string; json: string; k?: string };

export interface RecentEvents {
  /** How far back to look (ms). */
  recentMs: number;
  /** Records the event of a newest history entry, unless it is (transition.ts `recordedBefore`). */
  record: (doc: PaymentIntentDoc, evt: Evt) => Promise<void>;
}

const BATCH = 1000;

export async function sweepIntents(
  deps: { collections: Collections; intentsQueue: TypedQueue<'intents'> },
  nowMs: number,
  recent?: RecentEvents,
): Promise<{ intents: number; recorded?: number }> {
  const now = Math.floor(nowMs / 1000);
  const docs = await deps.collections.paymentIntents
    .find(
      { $or: [{ status: { $in: ['requires_action', 'processing'] } }, { status: 'new', expires_at: { $lte: now } }] },
      { projection: { _id: 1, project: 1, livemode: 1, status: 1, attempt: 1, expires_at: 1, history: 1, 'payment.next_check_at': 1, 'payment.checks': 1 } },
    )
    .limit(BATCH)
    .toArray();
  for (const doc of docs) {
    if (doc.status !== 'processing') await scheduleExpiry(deps.intentsQueue, doc, nowMs);
    const last = doc.history?.at(-1);
    if (doc.status !== 'new' && last && last.at === (doc.attempt ?? 0) && last.fu.length > 0) {
      await scheduleFollowUps(deps.intentsQueue, { ...doc, attempt: last.at }, last.fu, nowMs);
    }
    const due = doc.payment?.next_check_at;
    if (doc.livemode && doc.status !== 'new' && typeof due === 'number' && due <= nowMs && doc.payment?.checks !== undefined) {
      await scheduleCheck(deps.intentsQueue, { paymentIntent: doc._id, attempt: doc.attempt ?? 0, project: doc.project, livemode: true }, doc.payment.checks, 0, true);
    }
  }
  if (!recent) return { intents: docs.length };
  return { intents: docs.length, recorded: await recordRecentEvents(deps.collections, nowMs, recent) };
}

/** The events of the newest history entries of the intents changed within `recentMs`: how many were looked at. */
async function recordRecentEvents(collections: Collections, nowMs: number, recent: RecentEvents): Promise<number> {
  const changed = await collections.paymentIntents
    .find({ changed_ms: { $gte: nowMs - recent.recentMs } }, { projection: { created_event: 0 } })
    // The newest first: what a rollback loses is its last seconds.
    .sort({ changed_ms: -1 })
    .limit(BATCH)
    .toArray();
  let looked = 0;
  for (const doc of changed) {
    const evt = doc.history?.at(-1)?.evt;
    // An entry's JSON is dropped once a newer entry follows it, its event recorded.
    if (!evt?.json) continue;
    await recent.record(doc, { id: evt.id, type: evt.type, json: evt.json, ...(evt.k ? { k: evt.k } : {}) });
    looked++;
  }
  return looked;
}
