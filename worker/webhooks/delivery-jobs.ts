/**
 * The options of a delivery job (one per event and endpoint), the same wherever one
 * is added: the dispatch (processors/dispatch-event.ts), a first attempt that failed
 * (first-attempt.ts), the sweeper and a redelivery. The job id is derived from the
 * event and the endpoint, so adding it again adds no second delivery.
 */
import type { JobsOptions } from 'bullmq';
import type { WebhookConfig } from '../../common/config.js';
import { deliveryJobId } from '../../common/events.js';
import { maxAttempts, WEBHOOK_BACKOFF } from './retry-policy.js';

/**
 * Finished delivery jobs are bounded in Redis by age and by count, so no tenant can
 * fill it with them. The attempts are recorded in MongoDB; a re-dispatch after a
 * completed job is gone delivers again, which at-least-once delivery allows.
 */
const KEEP_COMPLETED = { age: 3600, count: 10_000 };
const KEEP_FAILED = { age: 7 * 24 * 3600, count: 10_000 };

/** The delivery job of `eventId` to `endpointId`, retried on the webhook schedule. */
export function deliveryJobOptions(config: WebhookConfig, eventId: string, endpointId: string): JobsOptions {
  return {
    jobId: deliveryJobId(eventId, endpointId),
    attempts: maxAttempts(config),
    backoff: { type: WEBHOOK_BACKOFF },
    removeOnComplete: KEEP_COMPLETED,
    removeOnFail: KEEP_FAILED,
  };
}
