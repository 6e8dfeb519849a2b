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
 *   sweeping an event whose jobs are merely slow adds nothing;
 * - releases the entry once every delivery is finished (completed, or failed for
 *   good), which also covers a release lost with Redis or with a dying process.
 *
 * One read of the outbox per sweep; the outbox holds only pending events, so it
 * stays small, and the read stays cheap even on a store that scans (docs/storage.md).
 */
import type { WebhookConfig } from '../../common/config.js';
import type { WebhookEndpointDoc } from '../../common/documents.js';
import { deliveryJobId } from '../../common/events.js';
import { JOBS, type TypedQueue } from '../../common/jobs.js';
import type { Collections } from '../../common/mongo.js';
import type { Redis } from 'ioredis';
import { firstAttemptMarks } from '../webhooks/first-attempt.js';
import type { PendingEvents } from '../webhooks/pending-events.js';
import { deliveryJobOptions, eventTargets } from './dispatch-event.js';

const BATCH = 1000;
const FINISHED = new Set(['completed', 'failed']);

export interface SweepDeps {
  collections: Collections;
  webhooksQueue: TypedQueue<'webhooks'>;
  config: WebhookConfig;
  pending: PendingEvents;
  /** Where the first attempts' marks are kept (../webhooks/first-attempt.ts). */
  redis: Redis;
  prefix: string;
}

type EndpointTargets = Pick<WebhookEndpointDoc, '_id' | 'status' | 'enabled_events'>;

export async function sweepEvents(
  deps: SweepDeps,
  options: { nowMs: number; ageMs: number },
): Promise<{ pending: number; requeued: number; released: number }> {
  const stale = await deps.collections.outbox
    .find({ created_ms: { $lt: options.nowMs - options.ageMs } })
    .sort({ created_ms: 1 })
    .limit(BATCH)
    .toArray();
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
  for (const entry of stale) {
    const endpoints = await endpointsOf(entry.project, entry.livemode);
    const dispatched = await deps.pending.dispatched(entry._id);
    const targets = dispatched
      ? endpoints.filter((e) => dispatched.left.has(e._id) && dispatched.targets.has(e._id))
      : eventTargets(endpoints, { type: entry.type, createdMs: entry.created_ms });
    const [jobStates, marks] = await Promise.all([
      Promise.all(targets.map((e) => deps.webhooksQueue.getJobState(deliveryJobId(entry._id, e._id)))),
      firstAttemptMarks(deps.redis, deps.prefix, entry._id, targets.map((e) => e._id)),
    ]);
    // A first attempt made in place that delivered has no job: its mark stands for one.
    const states = jobStates.map((state, i) => (state === 'unknown' && marks[i] === 'done' ? 'completed' : state));
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
  }
  if (released > 0) await deps.pending.flush();
  return { pending: stale.length - released, requeued, released };
}
