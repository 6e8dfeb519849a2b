import test from 'ava';
import { DEFAULT_RETRY_SCHEDULE_MS, loadConfig } from '../../../common/config.js';
import {
  clampRetryAfter,
  DeliveryFailedError,
  maxAttempts,
  parseRetryAfter,
  retryDelay,
  webhookBackoff,
  type RetryPolicy,
} from '../../../worker/webhooks/retry-policy.js';

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

const policy: RetryPolicy = {
  retrySchedule: DEFAULT_RETRY_SCHEDULE_MS,
  jitter: 0.2,
  retryAfterMinMs: 5 * SECOND,
  retryAfterMaxMs: 24 * HOUR,
};
const exact = { ...policy, jitter: 0 };
const middle = () => 0.5;

test('the default schedule: at once, then 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h', (t) => {
  const config = loadConfig({ REDIS_URL: 'redis://127.0.0.1:6379', MONGODB_URL: 'mongodb://127.0.0.1:27017' });
  t.deepEqual(config.webhooks.retrySchedule, [5 * SECOND, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 5 * HOUR, 10 * HOUR, 14 * HOUR, 20 * HOUR, 24 * HOUR]);
  t.is(config.webhooks.jitter, 0.2);
  t.is(maxAttempts(config.webhooks), 10);
});

test('the delay after attempt n is the nth scheduled delay', (t) => {
  const delays = DEFAULT_RETRY_SCHEDULE_MS.map((_, i) => retryDelay(exact, i + 1));
  t.deepEqual(delays, DEFAULT_RETRY_SCHEDULE_MS);
  t.is(retryDelay(policy, 2, { random: middle }), 5 * MINUTE);
});

test('jitter stays within ±20% and spreads the delays', (t) => {
  t.is(retryDelay(policy, 3, { random: () => 0 }), 24 * MINUTE);
  t.is(retryDelay(policy, 3, { random: () => 1 }), 36 * MINUTE);
  const seen = new Set<number>();
  for (let i = 0; i < 200; i++) {
    const delay = retryDelay(policy, 3);
    t.true(delay >= 24 * MINUTE && delay <= 36 * MINUTE);
    seen.add(delay);
  }
  t.true(seen.size > 100);
});

test('a shortened schedule from the environment is used as is', (t) => {
  const config = loadConfig({
    REDIS_URL: 'redis://127.0.0.1:6379',
    MONGODB_URL: 'mongodb://127.0.0.1:27017',
    WEBHOOK_RETRY_SCHEDULE_MS: '200,400,800',
    WEBHOOK_JITTER: '0',
  });
  t.is(maxAttempts(config.webhooks), 4);
  t.deepEqual([1, 2, 3].map((n) => retryDelay(config.webhooks, n)), [200, 400, 800]);
  t.is(retryDelay(config.webhooks, 9), 800, 'past the end, the last delay');
});

test('Retry-After is honoured: the next attempt is never earlier than it asks', (t) => {
  t.is(retryDelay(exact, 1, { retryAfterMs: 60 * SECOND }), 60 * SECOND);
  t.is(retryDelay(exact, 2, { retryAfterMs: 60 * SECOND }), 5 * MINUTE, 'nor earlier than the schedule');
});

test('Retry-After is clamped to the configured bounds', (t) => {
  t.is(clampRetryAfter(0, policy), 5 * SECOND);
  t.is(clampRetryAfter(90 * SECOND, policy), 90 * SECOND);
  t.is(clampRetryAfter(7 * 24 * HOUR, policy), 24 * HOUR);
  t.is(retryDelay(exact, 1, { retryAfterMs: 0 }), 5 * SECOND);
  t.is(retryDelay({ ...exact, retrySchedule: [100] }, 1, { retryAfterMs: 0 }), 5 * SECOND);
  t.is(retryDelay(exact, 1, { retryAfterMs: 30 * 24 * HOUR }), 24 * HOUR);
});

test('Retry-After parses delta-seconds and HTTP dates', (t) => {
  const now = Date.parse('2026-01-01T00:00:00Z');
  t.is(parseRetryAfter('120', now), 120_000);
  t.is(parseRetryAfter(' 0 ', now), 0);
  t.is(parseRetryAfter('Thu, 01 Jan 2026 00:01:30 GMT', now), 90_000);
  t.is(parseRetryAfter('Wed, 31 Dec 2025 23:00:00 GMT', now), 0, 'a date in the past means now');
  for (const bad of [undefined, '', '-5', '1.5', 'soon', '12abc']) t.is(parseRetryAfter(bad, now), null, String(bad));
});

test('the BullMQ backoff reads the Retry-After a failed attempt carried, and only from delivery failures', (t) => {
  const backoff = webhookBackoff(exact);
  t.is(backoff(1, new DeliveryFailedError('503', 60 * SECOND)), 60 * SECOND);
  t.is(backoff(1, new DeliveryFailedError('500')), 5 * SECOND);
  t.is(backoff(1, new Error('mongo down')), 5 * SECOND);
  t.is(backoff(3), 30 * MINUTE);
});
