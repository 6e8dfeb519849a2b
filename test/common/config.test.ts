import test from 'ava';
import { ConfigError, DEFAULT_OPERATORS, loadConfig } from '../../common/config.js';

const minimal = { REDIS_URL: 'redis://127.0.0.1:6379', MONGODB_URL: 'mongodb://127.0.0.1:27017' };

test('config defaults follow DESIGN.md', (t) => {
  const config = loadConfig(minimal);
  t.like(config, {
    port: 3000, mongodbDb: 'payments', adminToken: null, createTimeoutMs: 10_000, defaultCurrency: 'xof',
    rateLimitPerSecond: 500, idempotencyTtlMs: 48 * 3600 * 1000, idempotencyLockMs: 30_000,
  });
  t.deepEqual(config.operators, DEFAULT_OPERATORS);
  t.deepEqual(config.webhooks.retrySchedule, [5e3, 300e3, 1800e3, 7200e3, 18000e3, 36000e3, 50400e3, 72000e3, 86400e3]);
  t.is(config.webhooks.jitter, 0.2);
  t.is(config.webhooks.timeoutMs, 10_000);
});

test('config reports every problem at once', (t) => {
  const err = t.throws(() => loadConfig({ PORT: 'abc', CREATE_TIMEOUT_MS: '-1', OPERATORS: 'a,,b' }), { instanceOf: ConfigError });
  const text = err?.message ?? '';
  for (const name of ['PORT', 'CREATE_TIMEOUT_MS', 'OPERATORS', 'REDIS_URL', 'MONGODB_URL']) t.true(text.includes(name), name);
});

test('config refuses a repeated operator and reads lists', (t) => {
  t.throws(() => loadConfig({ ...minimal, OPERATORS: 'wave,wave' }), { instanceOf: ConfigError });
  t.deepEqual(loadConfig({ ...minimal, OPERATORS: 'wave,mpesa', WEBHOOK_RETRY_SCHEDULE_MS: '10,20' }).webhooks.retrySchedule, [10, 20]);
});

test('config refuses an operator the catalog does not know', (t) => {
  const err = t.throws(() => loadConfig({ ...minimal, OPERATORS: 'wave,paypal' }), { instanceOf: ConfigError });
  t.regex(err?.message ?? '', /"OPERATORS" names operators the catalog does not know \(paypal\)/);
});

test('the store profile is detected unless STORE_PROFILE forces one of the known profiles', (t) => {
  t.is(loadConfig(minimal).storeProfile, null);
  t.is(loadConfig({ ...minimal, STORE_PROFILE: '' }).storeProfile, null);
  t.is(loadConfig({ ...minimal, STORE_PROFILE: 'mongodb' }).storeProfile, 'mongodb');
  const err = t.throws(() => loadConfig({ ...minimal, STORE_PROFILE: 'postgres' }), { instanceOf: ConfigError });
  t.true(err?.message.includes('STORE_PROFILE'));
});

test("the worker's write-gate widths default to the store profile's, and may be set", (t) => {
  t.like(loadConfig(minimal), { workerWritesInFlight: null, workerTransitionWritesInFlight: null });
  t.like(loadConfig({ ...minimal, WORKER_WRITES_IN_FLIGHT: '8', WORKER_TRANSITION_WRITES_IN_FLIGHT: '3' }), {
    workerWritesInFlight: 8,
    workerTransitionWritesInFlight: 3,
  });
  const err = t.throws(() => loadConfig({ ...minimal, WORKER_WRITES_IN_FLIGHT: '2', WORKER_TRANSITION_WRITES_IN_FLIGHT: '3' }), { instanceOf: ConfigError });
  t.true(err?.message.includes('WORKER_TRANSITION_WRITES_IN_FLIGHT'));
  t.throws(() => loadConfig({ ...minimal, WORKER_WRITES_IN_FLIGHT: '0' }), { instanceOf: ConfigError });
});
