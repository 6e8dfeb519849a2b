import test from 'ava';
import { ConfigError, DEFAULT_OPERATORS, configuredOperators, loadConfig } from '../../common/config.js';

const minimal = { REDIS_URL: 'redis://127.0.0.1:6379', MONGODB_URL: 'mongodb://127.0.0.1:27017' };

test('config defaults follow DESIGN.md', (t) => {
  const config = loadConfig(minimal);
  t.like(config, {
    port: 3000, mongodbDb: 'payments', adminToken: null, writeTimeoutMs: 10_000, defaultCurrency: 'xof',
    rateLimitPerSecond: 500, idempotencyTtlMs: 48 * 3600 * 1000, idempotencyLockMs: 30_000,
  });
  t.deepEqual(config.operators, DEFAULT_OPERATORS);
  t.deepEqual(config.webhooks.retrySchedule, [5e3, 300e3, 1800e3, 7200e3, 18000e3, 36000e3, 50400e3, 72000e3, 86400e3]);
  t.is(config.webhooks.jitter, 0.2);
  t.is(config.webhooks.timeoutMs, 10_000);
});

test('config reports every problem at once', (t) => {
  const err = t.throws(() => loadConfig({ PORT: 'abc', WRITE_TIMEOUT_MS: '-1', OPERATORS: 'a,,b' }), { instanceOf: ConfigError });
  const text = err?.message ?? '';
  for (const name of ['PORT', 'WRITE_TIMEOUT_MS', 'OPERATORS', 'REDIS_URL', 'MONGODB_URL']) t.true(text.includes(name), name);
});

test('config refuses a repeated operator and reads lists', (t) => {
  t.throws(() => loadConfig({ ...minimal, OPERATORS: 'wave,wave' }), { instanceOf: ConfigError });
  t.deepEqual(loadConfig({ ...minimal, OPERATORS: 'wave,mpesa', WEBHOOK_RETRY_SCHEDULE_MS: '10,20' }).webhooks.retrySchedule, [10, 20]);
});

test('DEFAULT_CURRENCY must be a currency the API itself takes', (t) => {
  t.is(loadConfig({ ...minimal, DEFAULT_CURRENCY: 'KES' }).defaultCurrency, 'kes');
  for (const value of ['zzz', 'xo', 'x0f']) {
    const err = t.throws(() => loadConfig({ ...minimal, DEFAULT_CURRENCY: value }), { instanceOf: ConfigError });
    t.regex(err?.message ?? '', /DEFAULT_CURRENCY/, value);
  }
});

test('DEFAULT_CURRENCY must be taken by an operator of OPERATORS, or no intent made without a currency could be paid', (t) => {
  t.is(loadConfig({ ...minimal, OPERATORS: 'mpesa', DEFAULT_CURRENCY: 'kes' }).defaultCurrency, 'kes');
  for (const env of [{ DEFAULT_CURRENCY: 'eur' }, { OPERATORS: 'wave', DEFAULT_CURRENCY: 'kes' }]) {
    const err = t.throws(() => loadConfig({ ...minimal, ...env }), { instanceOf: ConfigError });
    t.regex(err?.message ?? '', /"DEFAULT_CURRENCY" (eur|kes) is taken by none of the operators in "OPERATORS"/, JSON.stringify(env));
  }
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
  t.like(loadConfig(minimal), { workerWritesInFlight: null, workerTransitionWritesInFlight: null, workerIntentsConcurrency: null });
  t.like(loadConfig({ ...minimal, WORKER_INTENTS_CONCURRENCY: '12' }), { workerIntentsConcurrency: 12 });
  t.throws(() => loadConfig({ ...minimal, WORKER_INTENTS_CONCURRENCY: '0' }), { instanceOf: ConfigError });
  t.like(loadConfig({ ...minimal, WORKER_WRITES_IN_FLIGHT: '8', WORKER_TRANSITION_WRITES_IN_FLIGHT: '3' }), {
    workerWritesInFlight: 8,
    workerTransitionWritesInFlight: 3,
  });
  const err = t.throws(() => loadConfig({ ...minimal, WORKER_WRITES_IN_FLIGHT: '2', WORKER_TRANSITION_WRITES_IN_FLIGHT: '3' }), { instanceOf: ConfigError });
  t.true(err?.message.includes('WORKER_TRANSITION_WRITES_IN_FLIGHT'));
  t.throws(() => loadConfig({ ...minimal, WORKER_WRITES_IN_FLIGHT: '0' }), { instanceOf: ConfigError });
});

const mtnGroup = {
  MTN_MOMO_BASE_URL: 'https://sandbox.momodeveloper.example', MTN_MOMO_TARGET_ENVIRONMENT: 'sandbox',
  MTN_MOMO_COLLECTION_SUBSCRIPTION_KEY: 'c-sub', MTN_MOMO_COLLECTION_USER_ID: 'c-user', MTN_MOMO_COLLECTION_API_KEY: 'c-key',
  MTN_MOMO_DISBURSEMENT_SUBSCRIPTION_KEY: 'd-sub', MTN_MOMO_DISBURSEMENT_USER_ID: 'd-user', MTN_MOMO_DISBURSEMENT_API_KEY: 'd-key',
};
const waveGroup = { WAVE_BASE_URL: 'https://api.wave.example/', WAVE_API_KEY: 'wave_sn_prod_x', WAVE_WEBHOOK_SECRET: 'wave_sn_WHS_x' };

test('no live operator is configured by default', (t) => {
  const config = loadConfig(minimal);
  t.deepEqual(configuredOperators(config), []);
  t.deepEqual(config.liveOperators, {
    accounts: [],
    timeoutMs: 15_000,
    pollScheduleMs: [5000, 10_000, 20_000, 40_000, 60_000],
    approvalWindowMs: { mtn_momo: 180_000, mpesa: 180_000, wave: 1_800_000 },
    breakerFailures: 5,
    refundLimitMs: 86_400_000,
  });
});

test('an operator is configured when its whole group is set', (t) => {
  const config = loadConfig({ ...minimal, ...mtnGroup, ...waveGroup, PUBLIC_BASE_URL: 'https://pay.example' });
  t.deepEqual(configuredOperators(config), ['mtn_momo', 'wave']);
  const [mtn, wave] = config.liveOperators.accounts;
  t.like(mtn, { id: 'mtn_momo:sandbox', operator: 'mtn_momo', sandbox: true, countries: [], config: { targetEnvironment: 'sandbox', collection: { apiKey: 'c-key' }, disbursement: { userId: 'd-user' } } });
  t.like(wave, { id: 'wave:SN', operator: 'wave', countries: ['SN'], config: { baseUrl: 'https://api.wave.example' } }, 'trailing slash trimmed');
});

test('the ledger posts by default; LEDGER_POSTINGS=off, a benchmark\'s baseline, is refused beside a live operator', (t) => {
  t.true(loadConfig(minimal).ledgerPostings);
  t.false(loadConfig({ ...minimal, LEDGER_POSTINGS: 'off' }).ledgerPostings);
  t.throws(() => loadConfig({ ...minimal, LEDGER_POSTINGS: 'no' }), { instanceOf: ConfigError });
  const err = t.throws(() => loadConfig({ ...minimal, ...waveGroup, PUBLIC_BASE_URL: 'https://pay.example', LEDGER_POSTINGS: 'off' }), { instanceOf: ConfigError });
  t.regex(err?.message ?? '', /"LEDGER_POSTINGS" off .* refused once a live operator is configured/);
});

test('a half-filled operator group stops the start-up and names what is missing', (t) => {
  const { MPESA_PASSKEY: _dropped, ...half } = {
    MPESA_BASE_URL: 'https://sandbox.safaricom.example', MPESA_CONSUMER_KEY: 'k', MPESA_CONSUMER_SECRET: 's', MPESA_SHORTCODE: '174379',
    MPESA_PASSKEY: 'p', MPESA_INITIATOR_NAME: 'i', MPESA_SECURITY_CREDENTIAL: 'c',
  };
  const err = t.throws(() => loadConfig({ ...minimal, ...half, PUBLIC_BASE_URL: 'https://pay.example' }), { instanceOf: ConfigError });
  t.regex(err?.message ?? '', /mpesa is half configured: set "MPESA_PASSKEY"/);
  t.false((err?.message ?? '').includes('174379'), 'values are never echoed');
});

test('a live operator needs PUBLIC_BASE_URL for its callbacks', (t) => {
  const err = t.throws(() => loadConfig({ ...minimal, ...waveGroup }), { instanceOf: ConfigError });
  t.regex(err?.message ?? '', /PUBLIC_BASE_URL/);
});

test('storage bounds default to DESIGN section 20: 30 days of events and of test data, 100000 test objects a day', (t) => {
  const day = 24 * 3600_000;
  t.deepEqual(loadConfig(minimal).retention, { eventMs: 30 * day, testDataMs: 30 * day, sweepIntervalMs: 3600_000, testObjectsPerDay: 100_000 });
  t.like(loadConfig({ ...minimal, EVENT_RETENTION_DAYS: '7', TEST_DATA_RETENTION_DAYS: '3', RETENTION_SWEEP_INTERVAL_MS: '500', TEST_OBJECTS_PER_DAY: '3' }).retention, {
    eventMs: 7 * day, testDataMs: 3 * day, sweepIntervalMs: 500, testObjectsPerDay: 3,
  });
  for (const env of [{ EVENT_RETENTION_DAYS: '6' }, { TEST_DATA_RETENTION_DAYS: '1.5' }, { TEST_OBJECTS_PER_DAY: '0' }]) {
    t.throws(() => loadConfig({ ...minimal, ...env }), { instanceOf: ConfigError }, JSON.stringify(env));
  }
});

test('test data must outlive its idempotency keys, or a retried keyed create could make its object again', (t) => {
  const err = t.throws(() => loadConfig({ ...minimal, TEST_DATA_RETENTION_DAYS: '1' }), { instanceOf: ConfigError });
  t.regex(err?.message ?? '', /"TEST_DATA_RETENTION_DAYS" \(1\) must keep test objects at least as long as their idempotency keys live/);
  t.is(loadConfig({ ...minimal, TEST_DATA_RETENTION_DAYS: '1', IDEMPOTENCY_TTL_MS: String(24 * 3600_000) }).retention.testDataMs, 24 * 3600_000);
});

test('ADMIN_TOKEN needs 32 characters or more (DESIGN section 20)', (t) => {
  const err = t.throws(() => loadConfig({ ...minimal, ADMIN_TOKEN: 'x'.repeat(31) }));
  t.regex(err?.message ?? '', /ADMIN_TOKEN/);
  t.is(loadConfig({ ...minimal, ADMIN_TOKEN: 'x'.repeat(32) }).adminToken, 'x'.repeat(32));
});

test('WRITE_TIMEOUT_MS sets the write wait; the deprecated CREATE_TIMEOUT_MS still does when it is unset', (t) => {
  t.is(loadConfig({ ...minimal, WRITE_TIMEOUT_MS: '4000' }).writeTimeoutMs, 4000);
  t.is(loadConfig({ ...minimal, CREATE_TIMEOUT_MS: '3000' }).writeTimeoutMs, 3000);
  t.is(loadConfig({ ...minimal, WRITE_TIMEOUT_MS: '4000', CREATE_TIMEOUT_MS: '3000' }).writeTimeoutMs, 4000);
  t.is(loadConfig({ ...minimal, CREATE_TIMEOUT_MS: '3000' }).createAdmissionWaitMs, 1500);
});

test('REDIS_CLUSTER_NODES stands for REDIS_URL and is read into nodes; QUEUE_SHARDS defaults to 1 (DESIGN section 19)', (t) => {
  const plain = loadConfig(minimal);
  t.is(plain.redisClusterNodes, null);
  t.is(plain.queueShards, 1);
  const clustered = loadConfig({ MONGODB_URL: minimal.MONGODB_URL, REDIS_CLUSTER_NODES: '10.0.0.1:6379,redis-b.internal:7000,[::1]:7001', QUEUE_SHARDS: '3' });
  t.deepEqual(clustered.redisClusterNodes, [
    { host: '10.0.0.1', port: 6379 },
    { host: 'redis-b.internal', port: 7000 },
    { host: '::1', port: 7001 },
  ]);
  t.is(clustered.queueShards, 3);
  t.throws(() => loadConfig({ MONGODB_URL: minimal.MONGODB_URL }), { message: /REDIS_URL/ }, 'one of the two is needed');
  t.throws(() => loadConfig({ ...minimal, REDIS_CLUSTER_NODES: '10.0.0.1' }), { message: /REDIS_CLUSTER_NODES/ }, 'a node without a port');
  t.throws(() => loadConfig({ ...minimal, REDIS_CLUSTER_NODES: '10.0.0.1:70000' }), { message: /outside 1-65535/ });
  t.throws(() => loadConfig({ ...minimal, QUEUE_SHARDS: '0' }), { message: /QUEUE_SHARDS/ });
});
