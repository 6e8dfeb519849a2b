/**
 * Fans an event out to the endpoints subscribed to it: one delivery job per
 * endpoint that is enabled, in the event's project and mode, subscribed to its type
 * (or to `*`), and created before the dispatch. Delivery job ids are derived from
 * (event, endpoint), so running the dispatch again (a retry, or the sweeper after a
 * crash) adds no second delivery. The outbox entry is deleted only once every
 * delivery job is in the queue; only the small outbox is read, never the events.
 */
import type { Job, JobsOptions } from 'bullmq';
import type { WebhookConfig } from '../../common/config.js';
import { idTime } from '../../common/ids.js';
import { ALL_EVENTS, deliveryJobId } from '../../common/events.js';
import { JOBS, type DispatchEventData, type TypedQueue } from '../../common/jobs.js';
import type { Collections } from '../../common/mongo.js';
import { maxAttempts, WEBHOOK_BACKOFF } from '../webhooks/retry-policy.js';

/**
 * Finished delivery jobs are bounded in Redis by age and by count, so no tenant can
 * fill it with them. The attempts are recorded in MongoDB; a re-dispatch after a
 * completed job is gone delivers again, which at-least-once delivery allows.
 */
const KEEP_COMPLETED = { age: 3600, count: 10_000 };
const KEEP_FAILED = { age: 7 * 24 * 3600, count: 10_000 };

export interface DispatchDeps {
  collections: Collections;
  webhooksQueue: TypedQueue<'webhooks'>;
  config: WebhookConfig;
}

export function deliveryJobOptions(config: WebhookConfig, eventId: string, endpointId: string): JobsOptions {
  return {
    jobId: deliveryJobId(eventId, endpointId),
    attempts: maxAttempts(config),
    backoff: { type: WEBHOOK_BACKOFF },
    removeOnComplete: KEEP_COMPLETED,
    removeOnFail: KEEP_FAILED,
  };
}

export async function dispatchEvent(
  deps: DispatchDeps,
  job: Job<DispatchEventData>,
): Promise<{ dispatched: boolean; deliveries: number }> {
  const { eventId } = job.data;
  const c = deps.collections;
  const event = await c.outbox.findOne({ _id: eventId });
  if (!event) return { dispatched: false, deliveries: 0 };
  // The dispatch moment is when the dispatch was asked for; it stays put across retries.
  const snapshotMs = job.timestamp;
  const endpoints = await c.webhookEndpoints
    .find(
      { project: event.project, livemode: event.livemode, status: 'enabled', enabled_events: { $in: [event.type, ALL_EVENTS] } },
      { projection: { _id: 1 } },
    )
    .toArray();
  const targets = endpoints.filter((e) => idTime(e._id) <= snapshotMs);
  if (targets.length > 0) {
    await deps.webhooksQueue.addBulk(
      targets.map((e) => ({
        name: JOBS.deliverWebhook as typeof JOBS.deliverWebhook,
        data: { eventId, endpointId: e._id },
        opts: deliveryJobOptions(deps.config, eventId, e._id),
      })),
    );
  }
  await c.outbox.deleteOne({ _id: eventId });
  return { dispatched: true, deliveries: targets.length };
}
