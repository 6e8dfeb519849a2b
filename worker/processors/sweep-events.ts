/**
 * The outbox sweeper: MongoDB says which events still have deliveries to finish
 * (their outbox entries); Redis may have lost the jobs that were doing it (a crash
 * between the write and the enqueue, a restart from an old snapshot). For each
 * entry older than `ageMs`, the sweeper works out the event's deliveries again: the
 * endpoints its dispatch chose whose delivery is not finished, as Redis recorded them
 * (an endpoint disabled when the event was dispatched, and enabled since, is not one
 * of them; nor is one whose delivery, or a resend or recover of the event, reached
 * it), or, with no record of a dispatch, the same rule as the dispatch; and:
 *
 * - re-enqueues each delivery whose job vanished, under its deterministic job id, so
 *   sweeping an event whose jobs are merely slow adds nothing; a first attempt made
 *   in place, which has no job, vanished only once it is older than any such attempt
 *   can run (its process died: first-attempt.ts);
 * - releases the entry once every delivery is finished (completed, or failed for
 *   good), which also covers a release lost with Redis or with a dying process.
 *
 * Every entry is reached (DESIGN section 20; ../sweep-walk.ts): entries whose
 * deliveries stay pending for days (an endpoint failing, its retries hours apart)
 * cannot keep others from the sweep. The sweep walks them all with a cursor, within
 * a time budget per pass, resuming where the last pass stopped: live, then test;
 * within a mode the projects take turns, each one's entries oldest first (by
 * `created_ms`, `_id`; index `sweep_created_ms` on MongoDB). The outbox holds only
 * pending events; on the local stack's store (docs/storage.md) a pass reads the stale
 * entries with one query (one scan of the outbox, as the sweep always cost there) and
 * walks them from memory.
 */
import type { WebhookConfig } from '../../common/config.js';
import type { OutboxDoc, WebhookEndpointDoc } from '../../common/documents.js';
import { deliveryJobId } from '../../common/events.js';
import { JOBS, type TypedQueue } from '../../common/jobs.js';
import type { Collections } from '../../common/mongo.js';
import type { Redis } from 'ioredis';
import { firstAttemptBoundMs, firstAttemptMarks } from '../webhooks/first-attempt.js';
import type { PendingEvents } from '../webhooks/pending-events.js';
import { indexedSource, redisWalkStore, Snapshot, walkFair, type WalkClass, type WalkOptions } from '../sweep-walk.js';
import { eventTargets } from './dispatch-event.js';
import { deliveryJobOptions } from '../webhooks/delivery-jobs.js';
const FINISHED = new Set(['completed', 'failed']);

export interface SweepDeps {
  collections: Collections;
  webhooksQueue: TypedQueue<'webhooks'>;
  config: WebhookConfig;
  pending: PendingEvents;
  /** Where the first attempts' marks are kept (../webhooks/first-attempt.ts). */
  redis: Redis;
  prefix: string;
  /** Pages from an index, or one read per pass (common/store-profile.ts). */
  queriesUseIndexes: boolean;
}

type EndpointTargets = Pick<WebhookEndpointDoc, '_id' | 'status' | 'enabled_events'>;

/** The classes of the walk, in order (see above): the entries older than `ageMs`. */
export function outboxClasses(
  deps: Pick<SweepDeps, 'collections' | 'queriesUseIndexes'>,
  options: { nowMs: number; ageMs: number },
  visit: (entry: OutboxDoc) => Promise<void>,
): WalkClass<OutboxDoc>[] {
  const stale = { created_ms: { $lt: options.nowMs - options.ageMs } };
  const modeOf = (entry: Pick<OutboxDoc, 'livemode'>) => (entry.livemode ? 'live' : 'test');
  const keyOf = (entry: OutboxDoc) => [entry.created_ms, entry._id];
  // Every stale entry, when the store scans anyway.
  const snapshot = deps.queriesUseIndexes ? null : new Snapshot<OutboxDoc>(() => deps.collections.outbox.find(stale).toArray(), modeOf, keyOf, (entry) => entry.project);
  return [true, false].map((livemode): WalkClass<OutboxDoc> => {
    const name = modeOf({ livemode });
    const source = snapshot?.source(name) ?? indexedSource<OutboxDoc>(deps.collections.outbox, { filter: { ...stale, livemode }, field: 'created_ms' }, {});
    return { name, ...source, keyOf, visit };
  });
}

export async function sweepEvents(
  deps: SweepDeps,
  options: { nowMs: number; ageMs: number } & Pick<WalkOptions, 'budgetMs' | 'clock'>,
): Promise<{ pending: number; requeued: number; released: number; complete: boolean }> {
  const endpointsByScope = new Map<string, Promise<EndpointTargets[]>>();
  const endpointsOf = (project: string, livemode: boolean) => {
    const scope = `${livemode ? 'live' : 'test'}:${project}`;
    let found = endpointsByScope.get(scope);
    if (!found) {
      found = deps.collections.webhookEndpoints
        .find({ project, livemode }, { projection: { _id: 1, status: 1, enabled_events: 1 } })
        .toArray();
      endpointsByScope.set(scope, found);
    }
    return found;
  };

  let requeued = 0;
  let released = 0;
  const visit = async (entry: OutboxDoc) => {
    const endpoints = await endpointsOf(entry.project, entry.livemode);
    const dispatched = await deps.pending.dispatched(entry._id);
    const targets = dispatched
      ? endpoints.filter((e) => dispatched.left.has(e._id) && dispatched.targets.has(e._id))
      : eventTargets(endpoints, { type: entry.type, createdMs: entry.created_ms });
    const [jobStates, marks] = await Promise.all([
      Promise.all(targets.map((e) => deps.webhooksQueue.getJobState(deliveryJobId(entry._id, e._id)))),
      firstAttemptMarks(deps.redis, deps.prefix, entry._id, targets.map((e) => e._id), { nowMs: Date.now(), boundMs: firstAttemptBoundMs(deps.config.timeoutMs) }),
    ]);
    // A first attempt made in place has no job: its mark stands for one, finished once
    // it delivered, running while it is young (its chain's job may be yet to come).
    const stand = { done: 'completed', in_flight: 'active' } as const;
    const states = jobStates.map((state, i) => {
      const mark = marks[i];
      return state === 'unknown' && (mark === 'done' || mark === 'in_flight') ? stand[mark] : state;
    });
    const vanished = targets.filter((_, i) => states[i] === 'unknown');
    if (vanished.length > 0) {
      await deps.webhooksQueue.addBulk(
        vanished.map((e) => ({
          name: JOBS.deliverWebhook as typeof JOBS.deliverWebhook,
          data: { eventId: entry._id, endpointId: e._id },
          opts: deliveryJobOptions(deps.config, entry._id, e._id),
        })),
      );
      requeued += vanished.length;
    } else if (states.every((state) => FINISHED.has(state))) {
      deps.pending.release(entry._id);
      released++;
    }
  };

  const classes = outboxClasses(deps, options, visit);
  try {
    const walked = await walkFair(classes as WalkClass<unknown>[], redisWalkStore(deps.redis, deps.prefix, 'events'), options);
    return { pending: walked.visited - released, requeued, released, complete: walked.complete };
  } finally {
    if (released > 0) await deps.pending.flush();
  }
}
