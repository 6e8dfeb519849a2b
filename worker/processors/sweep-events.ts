/**
 * The outbox sweeper: re-dispatches events a crash left undispatched (written, but
 * their delivery jobs never enqueued): whatever stayed in the outbox too long. Dispatch is idempotent, so sweeping an event
 * whose dispatch is merely slow costs nothing but a look-up.
 */
import { dispatchJobId } from '../../common/events.js';
import { JOBS, type TypedQueue } from '../../common/jobs.js';
import type { Collections } from '../../common/mongo.js';

const BATCH = 500;

export async function sweepEvents(
  deps: { collections: Collections; eventsQueue: TypedQueue<'events'> },
  options: { nowMs: number; ageMs: number },
): Promise<{ redispatched: number }> {
  const stale = await deps.collections.outbox
    .find({ created_ms: { $lt: options.nowMs - options.ageMs } }, { projection: { _id: 1 } })
    .sort({ created_ms: 1 })
    .limit(BATCH)
    .toArray();
  let redispatched = 0;
  for (const { _id: eventId } of stale) {
    const jobId = dispatchJobId(eventId);
    // A job id is only reusable once its job is gone: a dispatch that is waiting or
    // running is left alone, one that gave up is retried, a finished one is replaced.
    const existing = await deps.eventsQueue.getJob(jobId);
    if (existing) {
      const state = await existing.getState();
      if (state === 'failed') {
        await existing.retry('failed');
        redispatched++;
        continue;
      }
      if (state !== 'completed' && state !== 'unknown') continue;
      await existing.remove().catch(() => undefined);
    }
    await deps.eventsQueue.add(JOBS.dispatchEvent, { eventId }, { jobId, removeOnComplete: true });
    redispatched++;
  }
  return { redispatched };
}
