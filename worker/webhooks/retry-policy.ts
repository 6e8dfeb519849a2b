/**
 * When to retry a failed webhook delivery. Pure: the schedule, the jitter and the
 * Retry-After bounds come from config (`config.webhooks`), randomness and time are
 * passed in. The worker plugs `retryDelay` into BullMQ as the `webhook` backoff.
 */
import type { WebhookConfig } from '../../common/config.js';

export type RetryPolicy = Pick<WebhookConfig, 'retrySchedule' | 'jitter' | 'retryAfterMinMs' | 'retryAfterMaxMs'>;

/** The BullMQ backoff type of delivery jobs. */
export const WEBHOOK_BACKOFF = 'webhook';

/** A delivery attempt that failed and may be retried; carries the receiver's Retry-After, if any. */
export class DeliveryFailedError extends Error {
  constructor(
    message: string,
    /** The receiver's Retry-After in ms (429 and 503 only), not yet clamped. */
    readonly retryAfterMs: number | null = null,
  ) {
    super(message);
    this.name = 'DeliveryFailedError';
  }
}

/** The first attempt plus one per scheduled retry. */
export function maxAttempts(policy: Pick<RetryPolicy, 'retrySchedule'>): number {
  return policy.retrySchedule.length + 1;
}

/** A receiver's Retry-After, bounded so it can neither hammer us back nor park a delivery for ever. */
export function clampRetryAfter(ms: number, policy: RetryPolicy): number {
  return Math.min(Math.max(ms, policy.retryAfterMinMs), policy.retryAfterMaxMs);
}

/**
 * The delay before the next attempt, after `attemptsMade` attempts (1 = the first
 * one failed): the scheduled delay ±jitter. A Retry-After (429/503) is honoured: the
 * next attempt is never earlier than it asks, within [retryAfterMinMs,
 * retryAfterMaxMs], and never earlier than the schedule either.
 */
export function retryDelay(
  policy: RetryPolicy,
  attemptsMade: number,
  options: { retryAfterMs?: number | null; random?: () => number } = {},
): number {
  const schedule = policy.retrySchedule;
  const index = Math.min(Math.max(attemptsMade, 1), schedule.length) - 1;
  const base = schedule[index] ?? 0;
  const random = options.random ?? Math.random;
  const jittered = Math.max(0, Math.round(base * (1 + policy.jitter * (2 * random() - 1))));
  if (options.retryAfterMs === null || options.retryAfterMs === undefined) return jittered;
  return Math.max(jittered, clampRetryAfter(options.retryAfterMs, policy));
}

/**
 * Parses a `Retry-After` header: delta-seconds or an HTTP date (RFC 9110 10.2.3).
 * Returns ms from `nowMs`, or null when absent or unparsable.
 */
export function parseRetryAfter(value: string | undefined, nowMs: number): number | null {
  if (value === undefined) return null;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  if (!/[a-z]/i.test(text)) return null;
  const date = Date.parse(text);
  if (Number.isNaN(date)) return null;
  return Math.max(0, date - nowMs);
}

/** The BullMQ backoff of delivery jobs: the schedule, and the Retry-After a failed attempt carried. */
export function webhookBackoff(policy: RetryPolicy): (attemptsMade: number, err?: Error) => number {
  return (attemptsMade, err) =>
    retryDelay(policy, attemptsMade, { retryAfterMs: err instanceof DeliveryFailedError ? err.retryAfterMs : null });
}
