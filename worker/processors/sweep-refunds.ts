/**
 * The refunds' sweeper: MongoDB is the record of every refund still pending, and
 * Redis may lose the jobs that carry it on (a restart from an old snapshot, a
 * failover to a lagging replica). Each sweep:
 *
 * - reads the intents with a pending ledger entry, and rebuilds the document of an
 *   entry whose create job was lost after the hold (without its description and
 *   metadata, which only that job carried), so no amount stays held by a refund
 *   nobody can see or finish;
 * - reads the pending refunds made more than `graceMs` ago, and for each one whose
 *   last scheduled step's job is gone or finished, schedules its next step; the step
 *   reads the refund and its intent again, so one that is not needed changes nothing.
 *
 * Every one is reached (DESIGN section 20; ../sweep-walk.ts): the sweep walks them all
 * with a cursor, within a time budget per pass, resuming where the last pass stopped.
 * Its classes, in order: live, then test; within a mode, the intents with a pending
 * ledger entry (by `_id`; index `sweep_refunds_pending` on MongoDB), then the pending
 * refunds, oldest first (by `created`, `_id`; index `sweep_created`); within a class
 * the projects take turns. On the local stack's store (docs/storage.md), where each
 * of those queries would scan its collection, a pass reads the intents with a pending
 * refund with one query and the pending refunds with another (one scan of each
 * collection, as the sweep always cost there), and walks them from memory; never on a
 * request's path.
 */
import type { PaymentIntentDoc, RefundDoc } from '../../common/documents.js';
import type { Collections } from '../../common/mongo.js';
import type { TypedQueue } from '../../common/jobs.js';
import type { Redis } from 'ioredis';
import { processJobId, scheduleRefundStep } from '../refunds/process.js';
import { ensureRefundDoc, recordCreated, type RecordDeps } from '../refunds/record.js';
import { indexedSource, redisWalkStore, Snapshot, walkFair, type WalkClass, type WalkOptions } from '../sweep-walk.js';

export interface SweepRefundsDeps extends RecordDeps {
  collections: Collections;
  intentsQueue: TypedQueue<'intents'>;
  /** Where the walk's cursors are kept (../sweep-walk.ts). */
  redis: Redis;
  prefix: string;
  /** Pages from an index, or one read per pass (common/store-profile.ts). */
  queriesUseIndexes: boolean;
}

type Pending = Pick<RefundDoc, '_id' | 'project' | 'livemode' | 'payment_intent' | 'created' | 'polls'>;

const HELD_PROJECTION = { created_event: 0, history: 0 } as const;
const PENDING_PROJECTION = { _id: 1, project: 1, livemode: 1, payment_intent: 1, created: 1, polls: 1 } as const;
const modeOf = (doc: { livemode: boolean }) => (doc.livemode ? 'live' : 'test');
const heldKey = (intent: PaymentIntentDoc) => [intent._id];
const pendingKey = (refund: Pending) => [refund.created, refund._id];

/** The classes of the walk, in order (see above), and what they did. */
export function refundClasses(deps: SweepRefundsDeps, nowMs: number, graceMs: number): { classes: WalkClass<unknown>[]; done: { refunds: number; rebuilt: number } } {
  const cutoff = Math.floor((nowMs - graceMs) / 1000);
  const done = { refunds: 0, rebuilt: 0 };
  const c = deps.collections;
  const held = { refunds_pending: { $gt: 0 } };
  const due = { status: 'pending' as const, created: { $lte: cutoff } };
  // What the walk reads, when the store scans anyway: one query per collection.
  const heldSnapshot = deps.queriesUseIndexes
    ? null
    : new Snapshot<PaymentIntentDoc>(() => c.paymentIntents.find(held, { projection: HELD_PROJECTION }).toArray(), (doc) => `${modeOf(doc)}:held`, heldKey, (doc) => doc.project);
  const pendingSnapshot = deps.queriesUseIndexes
    ? null
    : new Snapshot<Pending>(() => c.refunds.find(due, { projection: PENDING_PROJECTION }).toArray() as Promise<Pending[]>, (doc) => `${modeOf(doc)}:pending`, pendingKey, (doc) => doc.project);

  const classes: WalkClass<unknown>[] = [];
  for (const livemode of [true, false]) {
    const mode = modeOf({ livemode });
    const intents: WalkClass<PaymentIntentDoc> = {
      name: `${mode}:held`,
      ...(heldSnapshot?.source(`${mode}:held`) ?? indexedSource<PaymentIntentDoc>(c.paymentIntents, { filter: { ...held, livemode }, field: null }, HELD_PROJECTION)),
      keyOf: heldKey,
      visit: async (intent) => {
        for (const entry of intent.refunds ?? []) {
          if (entry.status !== 'pending' || entry.c > cutoff) continue;
          if (await c.refunds.findOne({ _id: entry.id }, { projection: { _id: 1 } })) continue;
          const refund = await ensureRefundDoc(deps, intent, entry, null);
          await recordCreated(deps, refund, entry);
          done.rebuilt++;
        }
      },
    };
    const refunds: WalkClass<Pending> = {
      name: `${mode}:pending`,
      ...(pendingSnapshot?.source(`${mode}:pending`) ?? indexedSource<RefundDoc, Pending>(c.refunds, { filter: { ...due, livemode }, field: 'created' }, PENDING_PROJECTION)),
      keyOf: pendingKey,
      visit: async (refund) => {
        const state = await deps.intentsQueue.getJobState(processJobId(refund._id, refund.polls));
        if (state === 'unknown') await scheduleRefundStep(deps.intentsQueue, refund, refund.polls, 0);
        else if (state === 'completed' || state === 'failed') await scheduleRefundStep(deps.intentsQueue, refund, refund.polls + 1, 0);
        else return;
        done.refunds++;
      },
    };
    classes.push(intents as WalkClass<unknown>, refunds as WalkClass<unknown>);
  }
  return { classes, done };
}

export async function sweepRefunds(
  deps: SweepRefundsDeps,
  nowMs: number,
  graceMs: number,
  options: Pick<WalkOptions, 'budgetMs' | 'clock'>,
): Promise<{ refunds: number; rebuilt: number; visited: number; complete: boolean }> {
  const { classes, done } = refundClasses(deps, nowMs, graceMs);
  const walked = await walkFair(classes, redisWalkStore(deps.redis, deps.prefix, 'refunds'), options);
  return { ...done, visited: walked.visited, complete: walked.complete };
}
