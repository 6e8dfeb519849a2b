import Joi from 'joi';
import { STORE_PROFILE_NAMES, type StoreProfileName } from './store-profile.js';
import { CATALOG_OPERATORS, COUNTRIES, OPERATOR_CATALOG } from './operator-catalog.js';
import { accountOf, accountsFromFile, operatorsWithAccounts, type LiveOperator, type OperatorAccount } from './operator-accounts.js';
import { isCurrency } from './money.js';

/** One node of a Redis Cluster, as `REDIS_CLUSTER_NODES` names it. */
export interface RedisNode {
  host: string;
  port: number;
}

/** Every setting of the service, validated once at start-up. Nothing else reads `process.env`. */
export interface Config {
  port: number;
  host: string;
  /** Required by the separate api/worker entry points (unless `redisClusterNodes`); `npm start` fills it in. */
  redisUrl: string;
  /**
   * `REDIS_CLUSTER_NODES`: some nodes of a Redis Cluster, which every process then
   * uses instead of `redisUrl` (common/redis.ts); null: one Redis at `redisUrl`.
   */
  redisClusterNodes: RedisNode[] | null;
  /** `QUEUE_SHARDS`: how many hash-tagged queues each sharded queue is split into (common/queue-shards.ts). */
  queueShards: number;
  mongodbUrl: string;
  mongodbDb: string;
  /**
   * The store's profile (common/store-profile.ts), forced; null: asked of the server
   * at start-up. Forcing the other profile than the server's runs that profile's
   * code paths against it (the test suite's second pass).
   */
  storeProfile: StoreProfileName | null;
  /** A worker's writes to MongoDB in flight at once; null: the store profile's default. */
  workerWritesInFlight: number | null;
  /** How many of those may be transition updates; null: the store profile's default. */
  workerTransitionWritesInFlight: number | null;
  /** The most transition updates one command carries (worker/fenced-updates.ts); null: the store profile's default. */
  workerTransitionBatchMax: number | null;
  /** Jobs of the intents queue (payments' operator steps, expiries, refund steps) a worker runs at once; null: the store profile's default. */
  workerIntentsConcurrency: number | null;
  /** Admin API and dashboard token; when unset both answer 404. */
  adminToken: string | null;
  workerConcurrency: number;
  /** Group commit of creates in a worker: flush at this many documents (≤ 1: no batching). */
  createBatchMax: number;
  /** …or this long after the first one arrived (0: no batching). */
  createBatchWaitMs: number;
  /** How long the api waits for a create job before answering 503 `processing_timeout`. */
  writeTimeoutMs: number;
  /**
   * Admission control: creates are refused (503 `service_unavailable`) while the
   * oldest create job in the queue has waited longer than this. Default half of
   * `writeTimeoutMs`; 0 turns it off.
   */
  createAdmissionWaitMs: number;
  defaultCurrency: string;
  /** The operator catalog, in catalog order. */
  operators: string[];
  /** Per API key; 0 disables rate limiting. */
  /** Per project and mode, shared by all its keys (DESIGN section 20). */
  rateLimitPerSecond: number;
  /** DESIGN section 20: how long a job waits for a record's lock before 409 `lock_timeout`. */
  recordLockWaitMs: number;
  /** Writes of one object the api admits at once (409 `lock_timeout` past it). */
  objectWritesInFlight: number;
  /** Refunds an intent may have, failed ones included (400 `refund_limit` past it). */
  refundLimitPerIntent: number;
  /** An operator callback triggers at most one status call per attempt per this interval. */
  callbackCheckIntervalMs: number;
  /** Requests per second per client address on unauthenticated routes and failed authentications (429 past it; 0: off). */
  anonymousRateLimitPerSecond: number;
  logLevel: string;
  /** Prefix of every BullMQ key, so several deployments (or test files) can share one Redis. */
  queuePrefix: string;
  /** Lifetime of an idempotency key, from its first request (48 h). */
  idempotencyTtlMs: number;
  /** Lifetime of the Redis in-flight lock left behind by a crashed api process. */
  idempotencyLockMs: number;
  /** How often the worker deletes expired idempotency records. */
  idempotencySweepMs: number;
  /**
   * How long a worker's lock on an active job lasts without renewal; after a worker
   * dies, its jobs are recovered as stalled within about twice this.
   */
  jobLockMs: number;
  /** Worker metrics listener; 0 disables it. */
  metricsPort: number;
  /** Public base URL used in `doc_url`; defaults to the request's own origin. */
  publicBaseUrl: string | null;
  webhooks: WebhookConfig;
  /** How long an api process trusts a cached API key lookup; revocations are also pushed. */
  apiKeyCacheMs: number;
  /** How long an api process remembers that a key is unknown, so repeated garbage keys cost no query. */
  apiKeyNegativeCacheMs: number;
  /** Bound, in bytes, of each api process's memory of idempotent replays. */
  replayCacheBytes: number;
  /** How often a process reads its service keys again (common/service-keys.ts); a new version is used once twice this old. */
  serviceKeysReloadMs: number;
  http: HttpServerConfig;
  simulator: SimulatorConfig;
  /** How often the worker re-enqueues the delayed jobs of intents with a step ahead (in case Redis lost them). */
  intentsSweepIntervalMs: number;
  /** A payout hold this old whose payout was never made (its create job lost) is released (worker/payouts/stranded.ts). */
  payoutHoldStrandedMs: number;
  /** How often each live operator account, and the simulator, is reconciled (worker/reconcile/, docs/reconciliation.md). */
  reconcileIntervalMs: number;
  /**
   * The most time one pass of a sweeper (intents, refunds, events) spends walking its
   * work; the next pass resumes where it stopped (worker/sweep-walk.ts). A pass is
   * never given more than its sweeper's interval.
   */
  sweepBudgetMs: number;
  /** Declined or failed confirms one payment intent may have; the next confirm is refused (`payment_attempt_limit`). */
  confirmFailureLimit: number;
  /** Live operators' credentials (DESIGN section 12): a group is null unless every one of its variables is set. */
  liveOperators: LiveOperatorsConfig;
  /**
   * `LEDGER_POSTINGS`: false (`off`) only to measure what posting costs the payment
   * path (`BENCH_LEDGER_PAIRS`, bench/README.md): the worker then posts nothing, and
   * the balances are wrong. Refused beside a live operator.
   */
  ledgerPostings: boolean;
  /** What is deleted when, and how much test mode may create (DESIGN section 20, "Storage is bounded"). */
  retention: RetentionConfig;
}

/**
 * Storage is bounded: old events and old test-mode objects are deleted by a sweeper
 * (worker/processors/sweep-retention.ts), and test mode creates at most so many
 * objects a day per project (api/test-quota.ts). Live payment intents and refunds are
 * never deleted.
 */
export interface RetentionConfig {
  /** Events (and their webhook attempts) older than this are deleted, in both modes. */
  eventMs: number;
  /** Test-mode payment intents, refunds, events and webhook attempts older than this are deleted. */
  testDataMs: number;
  /** How often the retention sweeper starts a pass (a pass that runs out of time goes on in a job of its own). */
  sweepIntervalMs: number;
  /** New objects (payment intents, refunds, webhook endpoints) per project and UTC day in test mode; past it, 429 `quota_exceeded`. */
  testObjectsPerDay: number;
}

/**
 * Live operators (DESIGN sections 12 and 14): the accounts (common/operator-accounts.ts)
 * and how attempts with them are timed. An account's variables are credentials:
 * they are passed to the connectors only, and never logged.
 */
export interface LiveOperatorsConfig {
  /** Every configured account: the section 12 variables' (one per operator), then `OPERATOR_ACCOUNTS_FILE`'s. */
  accounts: OperatorAccount[];
  /** How long a connector waits for one answer from an operator's API before calling it unavailable. */
  timeoutMs: number;
  /**
   * The delays between the checks of a live attempt in flight (then the last one,
   * repeated), jittered by ±20% (worker/processors/operator-check.ts); faults are
   * retried on it too.
   */
  pollScheduleMs: number[];
  /**
   * Per operator: how long after a confirm the payer may still be asked
   * (`OPERATOR_APPROVAL_WINDOW_MS` overrides all; else MTN MoMo's and M-Pesa's
   * documented prompt timeout, 3 min, and Wave's session life, 30 min). A request the
   * operator has not accepted by then is never sent.
   */
  approvalWindowMs: Readonly<Record<LiveOperator, number>>;
  /** Consecutive failed calls after which an account is `unavailable` (its breaker opens). */
  breakerFailures: number;
  /** A live refund still pending this long after it was made fails with `operator_unavailable`. */
  refundLimitMs: number;
}

/** The documented prompt timeouts (DESIGN section 14): MTN MoMo and M-Pesa 3 min; Wave's checkout session lives 30 min. */
export const DEFAULT_APPROVAL_WINDOW_MS: Readonly<Record<LiveOperator, number>> = { mtn_momo: 180_000, mpesa: 180_000, wave: 30 * 60_000 };

export const DEFAULT_OPERATOR_POLL_SCHEDULE_MS = [5_000, 10_000, 20_000, 40_000, 60_000];

/** One MTN MoMo Open API product's credentials (Collection and Disbursement each have theirs). */
export interface MtnMomoProductConfig {
  subscriptionKey: string;
  userId: string;
  apiKey: string;
}

export interface MtnMomoConfig {
  baseUrl: string;
  /** `sandbox`, or the country's production value (`mtnuganda`, `mtnghana`, …). */
  targetEnvironment: string;
  collection: MtnMomoProductConfig;
  disbursement: MtnMomoProductConfig;
}

export interface MpesaConfig {
  baseUrl: string;
  consumerKey: string;
  consumerSecret: string;
  /** The paybill short code (M-Pesa Express `BusinessShortCode` and `PartyB`). */
  shortcode: string;
  passkey: string;
  /** The Reversal API's initiator and its encrypted password. */
  initiatorName: string;
  securityCredential: string;
}

export interface WaveConfig {
  baseUrl: string;
  apiKey: string;
  webhookSecret: string;
}

/** Each live operator's variables, in DESIGN section 12's order (`WAVE_COUNTRY`, optional, is not part of the group). */
export const OPERATOR_GROUPS = {
  mtn_momo: [
    'MTN_MOMO_BASE_URL', 'MTN_MOMO_TARGET_ENVIRONMENT',
    'MTN_MOMO_COLLECTION_SUBSCRIPTION_KEY', 'MTN_MOMO_COLLECTION_USER_ID', 'MTN_MOMO_COLLECTION_API_KEY',
    'MTN_MOMO_DISBURSEMENT_SUBSCRIPTION_KEY', 'MTN_MOMO_DISBURSEMENT_USER_ID', 'MTN_MOMO_DISBURSEMENT_API_KEY',
  ],
  mpesa: ['MPESA_BASE_URL', 'MPESA_CONSUMER_KEY', 'MPESA_CONSUMER_SECRET', 'MPESA_SHORTCODE', 'MPESA_PASSKEY', 'MPESA_INITIATOR_NAME', 'MPESA_SECURITY_CREDENTIAL'],
  wave: ['WAVE_BASE_URL', 'WAVE_API_KEY', 'WAVE_WEBHOOK_SECRET'],
} as const;

/** The live operators with at least one account, in DESIGN section 12's order. */
export function configuredOperators(config: { liveOperators: Pick<LiveOperatorsConfig, 'accounts'> }): string[] {
  return operatorsWithAccounts(config.liveOperators.accounts);
}

/**
 * Test mode's operator simulator (worker/operators/simulator.ts): how long each of
 * its steps takes, as delayed jobs. Production-like seconds by default; tests use
 * milliseconds.
 */
export interface SimulatorConfig {
  /** From confirm to the payer's answer on the phone (phone approval flows). */
  approvalDelayMs: number;
  /** From `processing` to the operator's final answer. */
  processingDelayMs: number;
  /** Suffix 011: the payer's answer comes this late. */
  slowDelayMs: number;
  /** How long a payer has to approve on the phone: `next_action.await_phone_approval.expires_at`. */
  approvalWindowMs: number;
  /** Payouts to a number ending `008` stay `enqueued` this long, then pay (DESIGN section 17). */
  payoutEnqueuedMs: number;
}

/** The api's HTTP server: how long a slow client may take, and how many connections it may hold. */
export interface HttpServerConfig {
  /** Time to receive the request line and headers. */
  headersTimeoutMs: number;
  /** Time to receive the whole request (headers and body); not the time to answer it. */
  requestTimeoutMs: number;
  /** Open connections per api process; more are closed at once. */
  maxConnections: number;
}

/** Webhook delivery policy, as data (the worker's backoff strategy reads it). */
export interface WebhookConfig {
  /** Deliveries in flight per worker process; a hanging receiver holds one slot only. */
  concurrency: number;
  /** Delays before each retry, in ms; the first attempt is immediate. */
  retrySchedule: number[];
  /** ±fraction applied to each delay. */
  jitter: number;
  timeoutMs: number;
  /** Bounds applied to a receiver's `Retry-After` on 429/503. */
  retryAfterMinMs: number;
  retryAfterMaxMs: number;
  /** An endpoint whose deliveries all failed for this long is disabled. */
  disableAfterMs: number;
  /** How often the sweeper re-dispatches events left undispatched by a crash. */
  sweepIntervalMs: number;
  /** An event older than this and still undispatched is picked up by the sweeper. */
  sweepAgeMs: number;
  /**
   * Test-mode endpoints may reach loopback and private addresses (local development,
   * the test suite). Off by default; live mode never may.
   */
  allowPrivateTargets: boolean;
  /** Deliveries in flight to one endpoint, across every worker. */
  endpointConcurrency: number;
  /** Webhook endpoints per (project, livemode). */
  endpointLimit: number;
  /** A test call's own POST timeout (`POST /v1/webhook_endpoints/{id}/test`). */
  testTimeoutMs: number;
  /** Test calls in flight per (project, livemode), across api processes; more get 429. */
  testsInFlight: number;
  /** Delivery chains one `recover` queues at most; it answers `has_more` when it left some. */
  recoverMax: number;
  /** Redeliveries (resend, recover) waiting or delayed per endpoint; past it resend and recover are refused. */
  endpointRedeliveryLimit: number;
  /** Attempts of a redelivery chain: the first steps of `retrySchedule` only. */
  redeliveryAttempts: number;
}

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** Every operator of the catalog (common/operator-catalog.ts), in catalog order. */
export const DEFAULT_OPERATORS: string[] = [...CATALOG_OPERATORS];

/** Stripe-like schedule: immediately, then 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h. */
export const DEFAULT_RETRY_SCHEDULE_MS = [
  5 * SECOND, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 5 * HOUR, 10 * HOUR, 14 * HOUR, 20 * HOUR, 24 * HOUR,
];

const msList = Joi.string().pattern(/^\d+(,\d+)*$/);
const operatorUrl = Joi.string().uri({ scheme: ['http', 'https'] }).empty('');
const credential = Joi.string().trim().min(1).max(4096).empty('');

/** `host:port` (a name, an IPv4 address or a bracketed IPv6 one), comma-separated. */
const CLUSTER_NODE = String.raw`(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):\d{1,5}`;
const CLUSTER_NODES = new RegExp(`^${CLUSTER_NODE}(?:,${CLUSTER_NODE})*$`);

/** `REDIS_CLUSTER_NODES` read into nodes (already validated by the schema). */
export function parseClusterNodes(text: string): RedisNode[] {
  return text.split(',').map((entry) => {
    const at = entry.lastIndexOf(':');
    return { host: entry.slice(0, at).replace(/^\[(.*)\]$/, '$1'), port: Number(entry.slice(at + 1)) };
  });
}

const schema = Joi.object({
  PORT: Joi.number().integer().min(0).max(65535).default(3000),
  HOST: Joi.string().default('127.0.0.1'),
  REDIS_URL: Joi.string().uri({ scheme: ['redis', 'rediss'] }).when('REDIS_CLUSTER_NODES', { is: Joi.exist(), then: Joi.optional(), otherwise: Joi.required() }),
  REDIS_CLUSTER_NODES: Joi.string().pattern(CLUSTER_NODES, 'host:port,host:port,…').empty(''),
  QUEUE_SHARDS: Joi.number().integer().min(1).max(64).default(1),
  MONGODB_URL: Joi.string().uri({ scheme: ['mongodb', 'mongodb+srv'] }).required(),
  MONGODB_DB: Joi.string().pattern(/^[A-Za-z0-9_-]{1,63}$/).default('payments'),
  STORE_PROFILE: Joi.string().valid(...STORE_PROFILE_NAMES).empty(''),
  WORKER_WRITES_IN_FLIGHT: Joi.number().integer().min(1).max(1000).empty(''),
  WORKER_TRANSITION_WRITES_IN_FLIGHT: Joi.number().integer().min(1).max(1000).empty(''),
  WORKER_TRANSITION_BATCH_MAX: Joi.number().integer().min(1).max(1000).empty(''),
  WORKER_INTENTS_CONCURRENCY: Joi.number().integer().min(1).max(1000).empty(''),
  ADMIN_TOKEN: Joi.string().min(32).empty(''),
  WORKER_CONCURRENCY: Joi.number().integer().min(1).max(1000).default(64),
  CREATE_BATCH_MAX: Joi.number().integer().min(0).max(1000).default(64),
  CREATE_BATCH_WAIT_MS: Joi.number().integer().min(0).max(10_000).default(4),
  WRITE_TIMEOUT_MS: Joi.number().integer().min(100).max(120_000).empty(''),
  /** Deprecated: the old name of WRITE_TIMEOUT_MS, read when WRITE_TIMEOUT_MS is unset. */
  CREATE_TIMEOUT_MS: Joi.number().integer().min(100).max(120_000).empty(''),
  CREATE_ADMISSION_WAIT_MS: Joi.number().integer().min(0).max(120_000).empty(''),
  DEFAULT_CURRENCY: Joi.string()
    .pattern(/^[A-Za-z]{3}$/)
    .custom((value: string, helpers) => (isCurrency(value) ? value : helpers.message({ custom: `"DEFAULT_CURRENCY" must be an ISO 4217 currency code, such as xof (got ${value})` })))
    .default('xof'),
  LEDGER_POSTINGS: Joi.string().valid('on', 'off').default('on'),
  OPERATORS: Joi.string().pattern(/^[a-z0-9_]+(,[a-z0-9_]+)*$/).default(DEFAULT_OPERATORS.join(',')),
  RATE_LIMIT_PER_SECOND: Joi.number().integer().min(0).default(500),
  RECORD_LOCK_WAIT_MS: Joi.number().integer().min(50).max(30_000).default(2_000),
  OBJECT_WRITES_IN_FLIGHT: Joi.number().integer().min(1).max(1_000).default(4),
  REFUND_LIMIT_PER_INTENT: Joi.number().integer().min(1).max(10_000).default(100),
  CALLBACK_CHECK_INTERVAL_MS: Joi.number().integer().min(0).max(600_000).default(5_000),
  ANONYMOUS_RATE_LIMIT_PER_SECOND: Joi.number().integer().min(0).default(50),
  LOG_LEVEL: Joi.string().valid('fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent').default('info'),
  QUEUE_PREFIX: Joi.string().pattern(/^[A-Za-z0-9_-]{1,64}$/).default('payments'),
  IDEMPOTENCY_TTL_MS: Joi.number().integer().min(1000).default(48 * HOUR),
  IDEMPOTENCY_LOCK_MS: Joi.number().integer().min(1000).max(30_000).default(30_000),
  IDEMPOTENCY_SWEEP_MS: Joi.number().integer().min(100).default(10 * MINUTE),
  JOB_LOCK_MS: Joi.number().integer().min(1000).default(3_000),
  METRICS_PORT: Joi.number().integer().min(0).max(65535).default(0),
  PUBLIC_BASE_URL: Joi.string().uri({ scheme: ['http', 'https'] }).empty(''),
  WEBHOOK_RETRY_SCHEDULE_MS: msList.default(DEFAULT_RETRY_SCHEDULE_MS.join(',')),
  WEBHOOK_CONCURRENCY: Joi.number().integer().min(1).max(1000).default(50),
  WEBHOOK_JITTER: Joi.number().min(0).max(1).default(0.2),
  WEBHOOK_TIMEOUT_MS: Joi.number().integer().min(100).max(60_000).default(10_000),
  WEBHOOK_RETRY_AFTER_MIN_MS: Joi.number().integer().min(0).default(5 * SECOND),
  WEBHOOK_RETRY_AFTER_MAX_MS: Joi.number().integer().min(0).default(24 * HOUR),
  WEBHOOK_DISABLE_AFTER_MS: Joi.number().integer().min(1000).default(5 * 24 * HOUR),
  WEBHOOK_SWEEP_INTERVAL_MS: Joi.number().integer().min(100).default(30 * SECOND),
  WEBHOOK_SWEEP_AGE_MS: Joi.number().integer().min(0).default(30 * SECOND),
  API_KEY_CACHE_MS: Joi.number().integer().min(0).default(30 * SECOND),
  API_KEY_NEGATIVE_CACHE_MS: Joi.number().integer().min(0).max(HOUR).default(5 * SECOND),
  IDEMPOTENCY_REPLAY_CACHE_BYTES: Joi.number().integer().min(0).default(32 * 1024 * 1024),
  SERVICE_KEYS_RELOAD_MS: Joi.number().integer().min(100).max(HOUR).default(30 * SECOND),
  HTTP_HEADERS_TIMEOUT_MS: Joi.number().integer().min(100).max(HOUR).default(10 * SECOND),
  HTTP_REQUEST_TIMEOUT_MS: Joi.number().integer().min(100).max(HOUR).default(30 * SECOND),
  HTTP_MAX_CONNECTIONS: Joi.number().integer().min(1).default(4096),
  WEBHOOK_ALLOW_PRIVATE_TARGETS: Joi.boolean().default(false),
  WEBHOOK_ENDPOINT_CONCURRENCY: Joi.number().integer().min(1).max(1000).default(16),
  WEBHOOK_ENDPOINT_LIMIT: Joi.number().integer().min(1).max(10_000).default(16),
  WEBHOOK_TEST_TIMEOUT_MS: Joi.number().integer().min(100).max(60_000).default(5_000),
  WEBHOOK_TESTS_IN_FLIGHT: Joi.number().integer().min(1).max(1000).default(2),
  WEBHOOK_RECOVER_MAX: Joi.number().integer().min(1).max(1_000_000).default(10_000),
  WEBHOOK_ENDPOINT_REDELIVERY_LIMIT: Joi.number().integer().min(1).max(1_000_000).default(10_000),
  WEBHOOK_REDELIVERY_ATTEMPTS: Joi.number().integer().min(1).max(100).default(4),
  CONFIRM_FAILURE_LIMIT: Joi.number().integer().min(1).max(10_000).default(20),
  SIMULATOR_APPROVAL_DELAY_MS: Joi.number().integer().min(0).max(HOUR).default(3 * SECOND),
  SIMULATOR_PROCESSING_DELAY_MS: Joi.number().integer().min(0).max(HOUR).default(2 * SECOND),
  SIMULATOR_SLOW_DELAY_MS: Joi.number().integer().min(0).max(HOUR).default(60 * SECOND),
  SIMULATOR_PAYOUT_ENQUEUED_MS: Joi.number().integer().min(0).max(HOUR).default(30 * SECOND),
  INTENTS_SWEEP_INTERVAL_MS: Joi.number().integer().min(100).default(60 * SECOND),
  PAYOUT_HOLD_STRANDED_MS: Joi.number().integer().min(1000).default(HOUR),
  RECONCILE_INTERVAL_MS: Joi.number().integer().min(100).max(24 * HOUR).default(10 * MINUTE),
  SWEEP_BUDGET_MS: Joi.number().integer().min(100).max(MINUTE).default(5 * SECOND),
  SIMULATOR_APPROVAL_WINDOW_MS: Joi.number().integer().min(1000).max(HOUR).default(2 * MINUTE),
  OPERATOR_TIMEOUT_MS: Joi.number().integer().min(100).max(120_000).default(15 * SECOND),
  OPERATOR_POLL_SCHEDULE_MS: msList.default(DEFAULT_OPERATOR_POLL_SCHEDULE_MS.join(',')),
  MTN_MOMO_BASE_URL: operatorUrl,
  // An account's fees (common/operator-accounts.ts, DESIGN section 16).
  ...Object.fromEntries(
    ['MTN_MOMO_', 'MPESA_', 'WAVE_'].flatMap((p) => [
      [`${p}FEE_PERCENT`, Joi.number().min(0).max(100)],
      [`${p}FEE_FIXED`, Joi.number().integer().min(0)],
    ]),
  ),
  MTN_MOMO_TARGET_ENVIRONMENT: Joi.string().pattern(/^[A-Za-z0-9_-]{1,64}$/).empty(''),
  MTN_MOMO_COLLECTION_SUBSCRIPTION_KEY: credential,
  MTN_MOMO_COLLECTION_USER_ID: credential,
  MTN_MOMO_COLLECTION_API_KEY: credential,
  MTN_MOMO_DISBURSEMENT_SUBSCRIPTION_KEY: credential,
  MTN_MOMO_DISBURSEMENT_USER_ID: credential,
  MTN_MOMO_DISBURSEMENT_API_KEY: credential,
  MPESA_BASE_URL: operatorUrl,
  MPESA_CONSUMER_KEY: credential,
  MPESA_CONSUMER_SECRET: credential,
  MPESA_SHORTCODE: Joi.string().pattern(/^\d{5,7}$/).empty(''),
  MPESA_PASSKEY: credential,
  MPESA_INITIATOR_NAME: credential,
  MPESA_SECURITY_CREDENTIAL: credential,
  WAVE_BASE_URL: operatorUrl,
  WAVE_API_KEY: credential,
  WAVE_WEBHOOK_SECRET: credential,
  WAVE_COUNTRY: Joi.string().uppercase().valid(...COUNTRIES.map((c) => c.code)).empty(''),
  OPERATOR_ACCOUNTS_FILE: Joi.string().empty(''),
  OPERATOR_APPROVAL_WINDOW_MS: Joi.number().integer().min(1_000).max(24 * 3600_000).empty(''),
  OPERATOR_BREAKER_FAILURES: Joi.number().integer().min(1).max(1_000).default(5),
  OPERATOR_REFUND_LIMIT_MS: Joi.number().integer().min(1_000).default(24 * 3600_000),
  // At least the 7 days a webhook recovery reaches back (api/schemas/webhook-endpoints.ts).
  EVENT_RETENTION_DAYS: Joi.number().integer().min(7).max(36_500).default(30),
  TEST_DATA_RETENTION_DAYS: Joi.number().integer().min(1).max(36_500).default(30),
  RETENTION_SWEEP_INTERVAL_MS: Joi.number().integer().min(100).default(HOUR),
  TEST_OBJECTS_PER_DAY: Joi.number().integer().min(1).max(1_000_000_000).default(100_000),
}).unknown(true);

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

/**
 * Reads and validates the environment, reporting every problem at once.
 * `needRedis: false` is for the CLI, which only talks to MongoDB (and to Redis,
 * when it is configured, to push key revocations).
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, options: { needRedis?: boolean } = {}): Config {
  const needRedis = options.needRedis ?? true;
  const effective = needRedis ? schema : schema.keys({ REDIS_URL: Joi.string().uri({ scheme: ['redis', 'rediss'] }).default('redis://127.0.0.1:6379') });
  const { value, error } = effective.validate(env, { abortEarly: false, convert: true });
  if (error) throw new ConfigError(error.details.map((d) => d.message));
  const operators = (value.OPERATORS as string).split(',');
  const problems: string[] = [];
  if (new Set(operators).size !== operators.length) problems.push('"OPERATORS" must not repeat a name');
  const unknown = operators.filter((name) => !CATALOG_OPERATORS.includes(name));
  if (unknown.length > 0) {
    problems.push(`"OPERATORS" names operators the catalog does not know (${unknown.join(', ')}); it knows ${CATALOG_OPERATORS.join(', ')}`);
  } else {
    // An intent created without a currency must be payable by some operator of the catalog.
    const currency = (value.DEFAULT_CURRENCY as string).toLowerCase();
    const takers = OPERATOR_CATALOG.filter((entry) => operators.includes(entry.id) && entry.countries.some((terms) => terms.currencies.includes(currency)));
    if (isCurrency(currency) && takers.length === 0) {
      problems.push(`"DEFAULT_CURRENCY" ${currency} is taken by none of the operators in "OPERATORS" (${operators.join(', ')}): every intent created without a currency could not be paid`);
    }
  }
  if (value.WEBHOOK_RETRY_AFTER_MIN_MS > value.WEBHOOK_RETRY_AFTER_MAX_MS) {
    problems.push('"WEBHOOK_RETRY_AFTER_MIN_MS" must not exceed "WEBHOOK_RETRY_AFTER_MAX_MS"');
  }
  if (value.HTTP_HEADERS_TIMEOUT_MS > value.HTTP_REQUEST_TIMEOUT_MS) {
    problems.push('"HTTP_HEADERS_TIMEOUT_MS" must not exceed "HTTP_REQUEST_TIMEOUT_MS"');
  }
  if (value.TEST_DATA_RETENTION_DAYS * DAY < value.IDEMPOTENCY_TTL_MS) {
    // A keyed create retried after its object was deleted would create it again.
    problems.push(`"TEST_DATA_RETENTION_DAYS" (${String(value.TEST_DATA_RETENTION_DAYS)}) must keep test objects at least as long as their idempotency keys live ("IDEMPOTENCY_TTL_MS", ${String(value.IDEMPOTENCY_TTL_MS)} ms)`);
  }
  if (value.WORKER_TRANSITION_WRITES_IN_FLIGHT > value.WORKER_WRITES_IN_FLIGHT) {
    problems.push('"WORKER_TRANSITION_WRITES_IN_FLIGHT" must not exceed "WORKER_WRITES_IN_FLIGHT"');
  }
  for (const [operator, names] of Object.entries(OPERATOR_GROUPS)) {
    const missing = names.filter((name) => value[name] === undefined);
    if (missing.length > 0 && missing.length < names.length) {
      problems.push(`live operator ${operator} is half configured: set ${missing.map((n) => `"${n}"`).join(', ')} too, or unset its whole group`);
    }
  }
  const liveOperators = liveOperatorsOf(value, problems);
  if (configuredOperators({ liveOperators }).length > 0 && !value.PUBLIC_BASE_URL) {
    problems.push('"PUBLIC_BASE_URL" is required once a live operator is configured: operators\' callbacks are sent to it');
  }
  if (value.LEDGER_POSTINGS === 'off' && configuredOperators({ liveOperators }).length > 0) {
    problems.push('"LEDGER_POSTINGS" off (a benchmark\'s baseline: nothing posted to the ledger) is refused once a live operator is configured: live money must be posted');
  }
  if (value.REDIS_CLUSTER_NODES && parseClusterNodes(value.REDIS_CLUSTER_NODES as string).some((node) => node.port < 1 || node.port > 65535)) {
    problems.push('"REDIS_CLUSTER_NODES" names a port outside 1-65535');
  }
  if (problems.length) throw new ConfigError(problems);
  const writeTimeoutMs: number = value.WRITE_TIMEOUT_MS ?? value.CREATE_TIMEOUT_MS ?? 10_000;
  return {
    port: value.PORT,
    host: value.HOST,
    redisUrl: value.REDIS_URL ?? '',
    redisClusterNodes: value.REDIS_CLUSTER_NODES ? parseClusterNodes(value.REDIS_CLUSTER_NODES as string) : null,
    queueShards: value.QUEUE_SHARDS,
    mongodbUrl: value.MONGODB_URL,
    mongodbDb: value.MONGODB_DB,
    storeProfile: value.STORE_PROFILE ?? null,
    workerWritesInFlight: value.WORKER_WRITES_IN_FLIGHT ?? null,
    workerTransitionWritesInFlight: value.WORKER_TRANSITION_WRITES_IN_FLIGHT ?? null,
    workerTransitionBatchMax: value.WORKER_TRANSITION_BATCH_MAX ?? null,
    workerIntentsConcurrency: value.WORKER_INTENTS_CONCURRENCY ?? null,
    adminToken: value.ADMIN_TOKEN ?? null,
    workerConcurrency: value.WORKER_CONCURRENCY,
    createBatchMax: value.CREATE_BATCH_MAX,
    createBatchWaitMs: value.CREATE_BATCH_WAIT_MS,
    writeTimeoutMs,
    createAdmissionWaitMs: value.CREATE_ADMISSION_WAIT_MS ?? Math.floor(writeTimeoutMs / 2),
    defaultCurrency: (value.DEFAULT_CURRENCY as string).toLowerCase(),
    operators,
    rateLimitPerSecond: value.RATE_LIMIT_PER_SECOND,
    recordLockWaitMs: value.RECORD_LOCK_WAIT_MS,
    objectWritesInFlight: value.OBJECT_WRITES_IN_FLIGHT,
    refundLimitPerIntent: value.REFUND_LIMIT_PER_INTENT,
    callbackCheckIntervalMs: value.CALLBACK_CHECK_INTERVAL_MS,
    anonymousRateLimitPerSecond: value.ANONYMOUS_RATE_LIMIT_PER_SECOND,
    logLevel: value.LOG_LEVEL,
    queuePrefix: value.QUEUE_PREFIX,
    idempotencyTtlMs: value.IDEMPOTENCY_TTL_MS,
    idempotencyLockMs: value.IDEMPOTENCY_LOCK_MS,
    idempotencySweepMs: value.IDEMPOTENCY_SWEEP_MS,
    jobLockMs: value.JOB_LOCK_MS,
    metricsPort: value.METRICS_PORT,
    publicBaseUrl: value.PUBLIC_BASE_URL ? String(value.PUBLIC_BASE_URL).replace(/\/+$/, '') : null,
    apiKeyCacheMs: value.API_KEY_CACHE_MS,
    apiKeyNegativeCacheMs: value.API_KEY_NEGATIVE_CACHE_MS,
    replayCacheBytes: value.IDEMPOTENCY_REPLAY_CACHE_BYTES,
    serviceKeysReloadMs: value.SERVICE_KEYS_RELOAD_MS,
    http: {
      headersTimeoutMs: value.HTTP_HEADERS_TIMEOUT_MS,
      requestTimeoutMs: value.HTTP_REQUEST_TIMEOUT_MS,
      maxConnections: value.HTTP_MAX_CONNECTIONS,
    },
    intentsSweepIntervalMs: value.INTENTS_SWEEP_INTERVAL_MS,
    payoutHoldStrandedMs: value.PAYOUT_HOLD_STRANDED_MS,
    reconcileIntervalMs: value.RECONCILE_INTERVAL_MS,
    sweepBudgetMs: value.SWEEP_BUDGET_MS,
    confirmFailureLimit: value.CONFIRM_FAILURE_LIMIT,
    liveOperators,
    ledgerPostings: value.LEDGER_POSTINGS === 'on',
    retention: {
      eventMs: value.EVENT_RETENTION_DAYS * DAY,
      testDataMs: value.TEST_DATA_RETENTION_DAYS * DAY,
      sweepIntervalMs: value.RETENTION_SWEEP_INTERVAL_MS,
      testObjectsPerDay: value.TEST_OBJECTS_PER_DAY,
    },
    simulator: {
      approvalDelayMs: value.SIMULATOR_APPROVAL_DELAY_MS,
      processingDelayMs: value.SIMULATOR_PROCESSING_DELAY_MS,
      slowDelayMs: value.SIMULATOR_SLOW_DELAY_MS,
      payoutEnqueuedMs: value.SIMULATOR_PAYOUT_ENQUEUED_MS,
      approvalWindowMs: value.SIMULATOR_APPROVAL_WINDOW_MS,
    },
    webhooks: {
      concurrency: value.WEBHOOK_CONCURRENCY,
      retrySchedule: (value.WEBHOOK_RETRY_SCHEDULE_MS as string).split(',').map(Number),
      jitter: value.WEBHOOK_JITTER,
      timeoutMs: value.WEBHOOK_TIMEOUT_MS,
      retryAfterMinMs: value.WEBHOOK_RETRY_AFTER_MIN_MS,
      retryAfterMaxMs: value.WEBHOOK_RETRY_AFTER_MAX_MS,
      disableAfterMs: value.WEBHOOK_DISABLE_AFTER_MS,
      sweepIntervalMs: value.WEBHOOK_SWEEP_INTERVAL_MS,
      sweepAgeMs: value.WEBHOOK_SWEEP_AGE_MS,
      allowPrivateTargets: value.WEBHOOK_ALLOW_PRIVATE_TARGETS,
      endpointConcurrency: value.WEBHOOK_ENDPOINT_CONCURRENCY,
      endpointLimit: value.WEBHOOK_ENDPOINT_LIMIT,
      testTimeoutMs: value.WEBHOOK_TEST_TIMEOUT_MS,
      testsInFlight: value.WEBHOOK_TESTS_IN_FLIGHT,
      recoverMax: value.WEBHOOK_RECOVER_MAX,
      endpointRedeliveryLimit: value.WEBHOOK_ENDPOINT_REDELIVERY_LIMIT,
      redeliveryAttempts: value.WEBHOOK_REDELIVERY_ATTEMPTS,
    },
  };
}

type Env = Record<string, string | undefined>;

function liveOperatorsOf(value: Env & Record<string, unknown>, problems: string[]): LiveOperatorsConfig {
  const v = value as Record<string, string | undefined>;
  const accounts: OperatorAccount[] = [];
  for (const [operator, names] of Object.entries(OPERATOR_GROUPS) as Array<[LiveOperator, readonly string[]]>) {
    if (!names.every((name) => v[name] !== undefined)) continue;
    const prefix = names[0]!.replace(/BASE_URL$/, '');
    const account = accountOf(operator, (name) => v[`${prefix}${name}`], null, []);
    if (account) accounts.push(account);
  }
  if (v.OPERATOR_ACCOUNTS_FILE) {
    try {
      accounts.push(...accountsFromFile(v.OPERATOR_ACCOUNTS_FILE));
    } catch (err) {
      problems.push((err as Error).message);
    }
  }
  const ids = accounts.map((a) => a.id);
  const repeated = ids.filter((id, i) => ids.indexOf(id) !== i);
  if (repeated.length) problems.push(`live operator accounts repeat ${[...new Set(repeated)].join(', ')}: one account per target environment, short code or Wave country set`);
  const window = value.OPERATOR_APPROVAL_WINDOW_MS as number | undefined;
  return {
    accounts,
    timeoutMs: Number(value.OPERATOR_TIMEOUT_MS),
    pollScheduleMs: String(value.OPERATOR_POLL_SCHEDULE_MS ?? DEFAULT_OPERATOR_POLL_SCHEDULE_MS.join(',')).split(',').map(Number).filter((ms) => ms > 0),
    approvalWindowMs: window ? { mtn_momo: window, mpesa: window, wave: window } : DEFAULT_APPROVAL_WINDOW_MS,
    breakerFailures: Number(value.OPERATOR_BREAKER_FAILURES ?? 5),
    refundLimitMs: Number(value.OPERATOR_REFUND_LIMIT_MS ?? 24 * 3600_000),
  };
}
