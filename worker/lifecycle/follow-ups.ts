/**
 * The delayed jobs of the lifecycle: operator answers (the simulator's, standing in
 * for an operator's callback) and the expiry at `expires_at`. Their ids are derived
 * from what they are about, so a transition applied again (a retried job) schedules
 * nothing twice, and each job's decision re-checks the intent's status and attempt,
 * so a job that runs late or twice changes nothing.
 */
import type { JobsOptions } from 'bullmq';
import { JOBS, operatorCheckJobId, outcomePriority, type Scope, type TypedQueue } from '../../common/jobs.js';
import type { FollowUp } from '../../common/lifecycle.js';

const OPTIONS: JobsOptions = {
  attempts: 1000,
  backoff: { type: 'capped' },
  removeOnComplete: { age: 3600, count: 10_000 },
  removeOnFail: { age: 7 * 24 * 3600 },
};

export function outcomeJobId(paymentIntent: string, attempt: number, step: string): string {
  return `outcome-${paymentIntent}-${attempt}-${step}`;
}

/** One expiry job per intent (security review M1): a moved `expires_at` moves it, never adds another. */
export function expiryJobId(paymentIntent: string): string {
  return `expire-${paymentIntent}`;
}

interface Target extends Scope {
  _id: string;
  expires_at: number;
  attempt?: number;
}

/**
 * The expiry of an intent at its `expires_at` (unix seconds); `now` in epoch ms. The
 * intent's one expiry job: one for another `expires_at` (superseded by an update),
 * or one that already ran (a no-op then: the intent was processing, and is back in
 * `new` since), is removed and the job added anew. One that cannot be removed (it
 * is running) is left: it changes nothing, and the sweeper adds the new one after it.
 */
export async function scheduleExpiry(queue: TypedQueue<'intents'>, pi: Target, now: number, expiresAt = pi.expires_at): Promise<void> {
  const jobId = expiryJobId(pi._id);
  const existing = await queue.getJob(jobId);
  if (existing && (existing.finishedOn || (existing.data as { expiresAt?: number }).expiresAt !== expiresAt)) {
    await existing.remove().catch(() => undefined);
  }
  await queue.add(
    JOBS.expirePaymentIntent,
    { paymentIntent: pi._id, project: pi.project, livemode: pi.livemode, expiresAt },
    { ...OPTIONS, jobId, delay: Math.max(0, expiresAt * 1000 - now) },
  );
}

/**
 * Check `n` of an attempt, after `delayMs`. A callback's (`cb`) is removed once done,
 * so a later callback looks again. `replaceFailed` (the sweeper's): a job of that id
 * left failed (its retries spent on a fault that outlasted them) is removed first, so
 * the check runs again instead of BullMQ ignoring a known id (DESIGN section 14: no
 * job is left failed with an id the sweeper cannot re-add).
 */
export async function scheduleCheck(
  queue: TypedQueue<'intents'>,
  target: { paymentIntent: string; attempt: number; project?: string; livemode?: boolean },
  n: number | 'cb',
  delayMs: number,
  replaceFailed = false,
): Promise<void> {
  if (replaceFailed) {
    const existing = await queue.getJob(operatorCheckJobId(target.paymentIntent, target.attempt, n));
    if (existing && (await existing.isFailed())) await existing.remove().catch(() => undefined);
  }
  await queue.add(
    JOBS.operatorCheck,
    { ...target, n },
    { ...OPTIONS, ...(n === 'cb' ? { removeOnComplete: true } : {}), jobId: operatorCheckJobId(target.paymentIntent, target.attempt, n), delay: Math.max(0, delayMs) },
  );
}

/** `recorded`: the event of the transition that asks, once recorded (OperatorOutcomeData). */
export async function scheduleFollowUps(queue: TypedQueue<'intents'>, pi: Target, followUps: FollowUp[], now: number, recorded?: string): Promise<void> {
  for (const followUp of followUps) {
    if (followUp.kind === 'expire') {
      await scheduleExpiry(queue, pi, now, followUp.expiresAt);
      continue;
    }
    const attempt = pi.attempt ?? 0;
    if (followUp.kind === 'check') {
      // Live mode: the attempt's first look at its operator (processors/operator-check.ts).
      await scheduleCheck(queue, { paymentIntent: pi._id, attempt, project: pi.project, livemode: pi.livemode }, 0, followUp.delayMs);
      continue;
    }
    await queue.add(
      JOBS.operatorOutcome,
      { paymentIntent: pi._id, project: pi.project, livemode: pi.livemode, attempt, step: followUp.step, ...(recorded ? { recorded } : {}) },
      { ...OPTIONS, ...outcomePriority(followUp.step), jobId: outcomeJobId(pi._id, attempt, followUp.step), delay: followUp.delayMs },
    );
  }
}
