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
 * read.
 *
 * Every intent with a step ahead is reached (DESIGN section 20; ../sweep-walk.ts):
 * the sweep walks them all with a cursor, within a time budget per pass, resuming
 * where the last pass stopped. Its classes, in order: live, then test; within a mode,
 * the intents in `new` past their expiry (a step overdue), then `processing` (a
 * settlement due within seconds), then `requires_action`; within a class the projects
 * take turns, and each one's intents come soonest expiry first. On a store that
 * serves filters from indexes (MongoDB), a class's projects are a distinct, and each
 * page an equality on mode, status and project with a range on (`expires_at`, `_id`):
 * index `sweep_expires_at`. On the local stack's store, where each such query would
 * scan the collection, a pass reads every intent with a step ahead with one query (one
 * scan, as the sweep always cost there) and walks them from memory.
 *
 * A reconnect's sweeps (`recentMs`, worker/schedules.ts) also record the events of
 * the transitions made within `recentMs`: a job that applied its transition and had
 * not yet recorded its event when Redis lost it (a restart from a snapshot taken
 * before the job began) leaves the event in the intent's newest history entry alone,
 * and a final transition has no next one to record it. Recording is idempotent: an
 * event recorded already costs one read by `_id` ({changed_ms} on MongoDB). They are
 * read newest first, page by page until the window is exhausted, within a budget of
 * their own.
 */
import type { Redis } from 'ioredis';
import type { PaymentIntentDoc } from '../../common/documents.js';
import type { PaymentIntentStatus } from '../../common/lifecycle.js';
import type { TypedQueue } from '../../common/jobs.js';
import type { Collections } from '../../common/mongo.js';
import { scheduleCheck, scheduleExpiry, scheduleFollowUps } from '../lifecycle/follow-ups.js';
import { indexedSource, redisWalkStore, Snapshot, walkFair, type WalkClass, type WalkOptions } from '../sweep-walk.js';

type Evt = { id: string; type: string; json: string; k?: string };

export interface RecentEvents {
  /** How far back to look (ms). */
  recentMs: number;
  /** Records the event of a newest history entry, unless it is (transition.ts `recordedBefore`). */
  record: (doc: PaymentIntentDoc, evt: Evt) => Promise<void>;
}

export interface SweepIntentsDeps {
  collections: Collections;
  intentsQueue: TypedQueue<'intents'>;
  /** Where the walk's cursors are kept (../sweep-walk.ts). */
  redis: Redis;
  prefix: string;
  /** Pages from an index, or one read per pass (common/store-profile.ts). */
  queriesUseIndexes: boolean;
}

const PROJECTION = { _id: 1, project: 1, livemode: 1, status: 1, attempt: 1, expires_at: 1, history: 1, 'payment.next_check_at': 1, 'payment.checks': 1 } as const;

type Swept = Pick<PaymentIntentDoc, '_id' | 'project' | 'livemode' | 'status' | 'attempt' | 'expires_at' | 'history' | 'payment'>;

const STATUSES = ['new', 'processing', 'requires_action'] as const satisfies readonly PaymentIntentStatus[];

const classOf = (doc: Pick<Swept, 'livemode' | 'status'>) => `${doc.livemode ? 'live' : 'test'}:${doc.status}`;
const keyOf = (doc: Swept) => [doc.expires_at, doc._id];

/** The classes of the walk, in order (see above). */
export function intentClasses(deps: SweepIntentsDeps, nowMs: number): WalkClass<Swept>[] {
  const now = Math.floor(nowMs / 1000);
  const intents = deps.collections.paymentIntents;
  // Every intent with a step ahead, when the store scans anyway.
  const snapshot = deps.queriesUseIndexes
    ? null
    : new Snapshot<Swept>(
        () => intents.find({ $or: [{ status: { $in: ['processing', 'requires_action'] } }, { status: 'new', expires_at: { $lte: now } }] }, { projection: PROJECTION }).toArray() as Promise<Swept[]>,
        classOf,
        keyOf,
        (doc) => doc.project,
      );
  const classes: WalkClass<Swept>[] = [];
  for (const livemode of [true, false]) {
    for (const status of STATUSES) {
      const name = classOf({ livemode, status });
      const filter = { livemode, status, ...(status === 'new' ? { expires_at: { $lte: now } } : {}) };
      const source = snapshot ? snapshot.source(name) : indexedSource<PaymentIntentDoc, Swept>(intents, { filter, field: 'expires_at' }, PROJECTION);
      classes.push({ name, ...source, keyOf, visit: (doc) => redrive(deps, doc, nowMs) });
    }
  }
  return classes;
}

/** Enqueues the intent's pending jobs again (a known id is ignored). */
async function redrive(deps: SweepIntentsDeps, doc: Swept, nowMs: number): Promise<void> {
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

export async function sweepIntents(
  deps: SweepIntentsDeps,
  nowMs: number,
  options: Pick<WalkOptions, 'budgetMs' | 'clock'>,
  recent?: RecentEvents,
): Promise<{ intents: number; complete: boolean; recorded?: number }> {
  const walked = await walkFair(intentClasses(deps, nowMs), redisWalkStore(deps.redis, deps.prefix, 'intents'), options);
  const result = { intents: walked.visited, complete: walked.complete };
  if (!recent) return result;
  return { ...result, recorded: await recordRecentEvents(deps.collections, nowMs, recent, options) };
}

const RECENT_PAGE = 500;

/**
 * The events of the newest history entries of the intents changed within
 * `recentMs`, newest first (what a rollback loses is its last seconds): how many were
 * looked at. Pages go back in `changed_ms`; intents changed in the same millisecond as
 * the last one of a page are remembered, so the next page skips them and misses none.
 */
async function recordRecentEvents(collections: Collections, nowMs: number, recent: RecentEvents, options: Pick<WalkOptions, 'budgetMs' | 'clock'>): Promise<number> {
  const clock = options.clock ?? (() => performance.now());
  const deadline = clock() + options.budgetMs;
  const from = nowMs - recent.recentMs;
  let upTo: number | undefined;
  let seenAtUpTo = new Set<string>();
  let looked = 0;
  for (;;) {
    const limit = RECENT_PAGE + seenAtUpTo.size;
    const changed = await collections.paymentIntents
      .find({ changed_ms: { $gte: from, ...(upTo !== undefined ? { $lte: upTo } : {}) } }, { projection: { created_event: 0 } })
      .sort({ changed_ms: -1 })
      .limit(limit)
      .toArray();
    for (const doc of changed) {
      if (seenAtUpTo.has(doc._id)) continue;
      const evt = doc.history?.at(-1)?.evt;
      // An entry's JSON is dropped once a newer entry follows it, its event recorded.
      if (!evt?.json) continue;
      await recent.record(doc, { id: evt.id, type: evt.type, json: evt.json, ...(evt.k ? { k: evt.k } : {}) });
      looked++;
    }
    if (changed.length < limit || clock() >= deadline) return looked;
    const last = changed.at(-1)!.changed_ms!;
    if (last !== upTo) seenAtUpTo = new Set();
    for (const doc of changed) if (doc.changed_ms === last) seenAtUpTo.add(doc._id);
    upTo = last;
  }
}
