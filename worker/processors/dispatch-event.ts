/**
 * Fans an event out to the endpoints subscribed to it: one delivery job per
 * endpoint that is enabled, in the event's project and mode, subscribed to its type
 * (or to `*`), and created before the event. Delivery job ids are derived from
 * (event, endpoint), so running the dispatch again (a retry, or the sweeper after a
 * crash) adds no second delivery. The job carries the event, so no event is read
 * back from MongoDB; the outbox entry stays until the deliveries are finished
 * (webhooks/pending-events.ts).
 */
import type { WebhookConfig } from '../../common/config.js';
import { idTime } from '../../common/ids.js';
import { ALL_EVENTS } from '../../common/events.js';
import { JOBS, type DispatchEventData, type TypedQueue } from '../../common/jobs.js';
import type { Collections } from '../../common/mongo.js';
import type { Redis } from 'ioredis';
import type { EndpointDirectory } from '../webhooks/endpoint-directory.js';
import { firstAttemptMarks, type FirstAttempts } from '../webhooks/first-attempt.js';
import type { PendingEvents } from '../webhooks/pending-events.js';
import { deliveryJobOptions } from '../webhooks/delivery-jobs.js';

export interface DispatchDeps {
  collections: Collections;
  webhooksQueue: TypedQueue<'webhooks'>;
  config: WebhookConfig;
  pending: PendingEvents;
  /** Where the first attempts' marks are kept (../webhooks/first-attempt.ts). */
  redis: Redis;
  prefix: string;
  /** First attempts made in place; without it every delivery is a job. */
  first?: FirstAttempts;
  /** The endpoints of each scope, kept in the process (../webhooks/endpoint-directory.ts). */
  directory: EndpointDirectory;
}

/** The endpoints an event goes to, of those of its scope: the same answer for the dispatch and the sweeper. */
export function eventTargets<E extends { _id: string; status: string; enabled_events: string[] }>(
  endpoints: E[],
  event: { type: string; createdMs: number },
): E[] {
  return endpoints.filter(
    (e) => e.status === 'enabled' && (e.enabled_events.includes(event.type) || e.enabled_events.includes(ALL_EVENTS)) && idTime(e._id) <= event.createdMs,
  );
}

/**
 * The fan-out of one event: in the job that recorded it (../webhooks/outbox.ts), or in
 * a dispatch job. Given the event's JSON (the recording job has it, a dispatch job
 * does not: its data are ids only), the first attempts are made in place where there
 * is room for them (../webhooks/first-attempt.ts), and only the rest become jobs.
 */
export async function dispatchEvent(deps: DispatchDeps, data: DispatchEventData, json?: string): Promise<{ deliveries: number }> {
  const { eventId, project, livemode, type, createdMs } = data;
  const first = json === undefined ? undefined : deps.first;
  // Whole documents: a first attempt needs the endpoint's url and secrets.
  const endpoints = await deps.directory.endpointsOf({ project, livemode });
  const found = eventTargets(endpoints, { type, createdMs });
  // An endpoint whose first attempt, made in place, delivered already has the event
  // (the event recorded again: a retried job); one whose first attempt has begun has
  // its chain under way, in place or in its job.
  const marks = await firstAttemptMarks(deps.redis, deps.prefix, eventId, found.map((e) => e._id));
  const targets = found.filter((_, i) => marks[i] !== 'done');
  if (targets.length === 0) {
    deps.pending.release(eventId);
    return { deliveries: 0 };
  }
  // Before any delivery starts, so that no delivery can finish before it is expected.
  await deps.pending.expect(eventId, targets.map((e) => e._id));
  const fresh = targets.filter((e) => marks[found.indexOf(e)] === null);
  const queued = first ? first.take({ id: eventId, type, project, livemode, json: json as string }, fresh) : fresh;
  if (queued.length > 0) {
    await deps.webhooksQueue.addBulk(
      queued.map((e) => ({
        name: JOBS.deliverWebhook as typeof JOBS.deliverWebhook,
        data: { eventId, endpointId: e._id },
        opts: deliveryJobOptions(deps.config, eventId, e._id),
      })),
    );
  }
  return { deliveries: targets.length };
}
