/**
 * What the worker's processors run on: the queues they add jobs to, the process's
 * write gate, and one dependency bag per family of jobs, built once per process
 * from the clients main.ts made. worker/routes.ts hands the bags to the processors.
 */
import type { Redis } from 'ioredis';
import type { Config } from '../common/config.js';
import { InputSeal } from '../common/input-seal.js';
import { Seal } from '../common/seal.js';
import type { IdGenerator } from '../common/ids.js';
import { ANSWER_KEY_ID, openQueue, QUEUES, type DispatchEventData } from '../common/jobs.js';
import { queueLayout, shardsOf } from '../common/queue-shards.js';
import { logQueueErrors, type Logger } from '../common/logger.js';
import type { Mongo } from '../common/mongo.js';
import type { StoreProfile } from '../common/store-profile.js';
import { InsertBatcher } from './group-commit.js';
import { FencedUpdates } from './fenced-updates.js';
import { KEPT_FOR_CHANGES, KeptIntents } from '../common/kept-intents.js';
import { through, WriteGate } from './write-gate.js';
import { dispatchEvent } from './processors/dispatch-event.js';
import type { LifecycleDeps } from './processors/payment-intent-lifecycle.js';
import type { CheckDeps } from './processors/operator-check.js';
import { liveConnectors } from './operators/registry.js';
import { setRecordLockWait } from './record-lock.js';
import { CALLBACK_KEY_ID } from './operators/mpesa/callbacks.js';
import { ServiceKeyring } from '../common/service-keys.js';
import type { RefundDeps } from './processors/refunds.js';
import { ledgerBalance } from './payouts/balance.js';
import type { PayoutDeps } from './payouts/create.js';
import { DESTINATIONS_KEY_ID } from '../common/payouts.js';
import type { EndpointMutationDeps } from './processors/webhook-endpoint-mutations.js';
import { EndpointDirectory } from './webhooks/endpoint-directory.js';
import { endpointSlots } from './webhooks/endpoint-slots.js';
import { FirstAttempts } from './webhooks/first-attempt.js';
import { PendingEvents } from './webhooks/pending-events.js';
import { Redeliveries } from './webhooks/redeliveries.js';
import { BalanceLedger } from './balance/ledger.js';
import { accountFees, type Postings } from './balance/postings.js';

/** An endpoint slot's lease, renewed while its POST runs: a dead worker's slots are free again within it. */
const SLOT_LEASE_MS = 3_000;

/** How long an attempt's record waits for others to share its commit. */
const ATTEMPT_BATCH_WAIT_MS = 50;

/**
 * How long a redelivery counts as pending at most, however its end went unseen: its
 * schedule (the first steps of the deliveries'), with the jitter, and an hour for
 * waits for slots.
 */
export function redeliveryStaleMs(config: Config['webhooks']): number {
  const steps = config.retrySchedule.slice(0, Math.max(0, config.redeliveryAttempts - 1));
  return Math.round(steps.reduce((sum, ms) => sum + ms, 0) * (1 + config.jitter)) + 3600_000;
}

/** The worker's Redis connections, built by the caller like its MongoDB. */
export interface WorkerRedis {
  /** Fail-fast: result publishing, the idempotency cache, subscription hints. A failure fails the job, which is retried. */
  commands: Redis;
  /** Patient: the queues this worker adds jobs to. */
  queues: Redis;
  /** Patient: BullMQ's blocking connection for its Workers. */
  workers: Redis;
}

export interface WorkerDeps {
  config: Config;
  logger: Logger;
  mongo: Mongo;
  redis: WorkerRedis;
  /** Epoch ms. */
  now: () => number;
  ids: IdGenerator;
  /** What the store can do (common/store-profile.ts), decided once at start-up. */
  storeProfile: StoreProfile;
}

/** Everything the job routes (worker/routes.ts) hand to the processors. */
export type JobDeps = ReturnType<typeof buildJobDeps>;

export function buildJobDeps({ config, logger, mongo, redis, now, ids, storeProfile }: WorkerDeps) {
  const prefix = config.queuePrefix;
  // No job waits long for a record's lock (DESIGN section 20).
  setRecordLockWait(config.recordLockWaitMs);
  const collections = mongo.collections;
  // Dispatch jobs retry infrastructure faults for a while, then the sweeper takes over;
  // a completed one is removed so the sweeper can add its id again.
  const layout = queueLayout(config);
  const eventsQueue = openQueue(
    QUEUES.events,
    {
      connection: redis.queues,
      prefix,
      defaultJobOptions: { attempts: 20, backoff: { type: 'capped' }, removeOnComplete: true, removeOnFail: 1000 },
    },
    layout,
  );
  const webhooksQueue = openQueue(QUEUES.webhooks, { connection: redis.queues, prefix }, layout);
  const maintenanceQueue = openQueue(QUEUES.maintenance, { connection: redis.queues, prefix }, layout);
  const intentsQueue = openQueue(QUEUES.intents, { connection: redis.queues, prefix }, layout);
  // Read only: how many creates wait (deliveries yield to them).
  const writesQueue = openQueue(QUEUES.writes, { connection: redis.queues, prefix }, layout);
  logQueueErrors([eventsQueue, webhooksQueue, maintenanceQueue, intentsQueue, writesQueue].flatMap(shardsOf), logger);
  // One gate for the process's batched inserts and transition updates (write-gate.ts).
  const writesInFlight = config.workerWritesInFlight ?? storeProfile.writesInFlight;
  const transitionWritesInFlight = Math.min(writesInFlight, config.workerTransitionWritesInFlight ?? storeProfile.transitionWritesInFlight);
  const transitionBatchMax = config.workerTransitionBatchMax ?? storeProfile.transitionBatchMax;
  const intentsConcurrency = config.workerIntentsConcurrency ?? storeProfile.intentsConcurrency;
  const writes = new WriteGate(writesInFlight);
  const inserts = new InsertBatcher({ maxDocs: config.createBatchMax, waitMs: config.createBatchWaitMs, gate: writes });
  // Every answer is published sealed (processors/create.ts); service keys are read again now and then (common/service-keys.ts).
  const keyring = { reloadMs: config.serviceKeysReloadMs };
  const createDeps = { collections, redis: redis.commands, prefix, now, inserts, answerSeal: new Seal(collections.serviceKeys, ANSWER_KEY_ID, keyring) };
  const pending = new PendingEvents({ redis: redis.commands, prefix, collections, logger });
  const slots = endpointSlots(redis.commands, { prefix, limit: config.webhooks.endpointConcurrency, leaseMs: SLOT_LEASE_MS });
  // Attempts are recorded after their POST, where no client waits: a longer window
  // than the creates' gathers more of them into each commit.
  const attempts = new InsertBatcher({ maxDocs: 64, waitMs: ATTEMPT_BATCH_WAIT_MS, gate: writes });
  const deliverDeps = { collections, config: config.webhooks, logger, now, ids, slots, attempts, redis: redis.commands, prefix };
  // The delivery worker, once started: first attempts are made in place only while it
  // takes deliveries at full concurrency (not while they yield to creates).
  const deliveries: { worker?: { concurrency: number } } = {};
  const first = new FirstAttempts({
    ...deliverDeps,
    pending,
    webhooksQueue,
    limit: config.webhooks.concurrency,
    open: () => deliveries.worker !== undefined && deliveries.worker.concurrency >= config.webhooks.concurrency,
  });
  // Endpoints kept per scope; every kept list is dropped when the Redis connection closes (a restart may bring older tokens back).
  const directory = new EndpointDirectory({ redis: redis.commands, prefix, collections, now });
  redis.commands.on('close', () => directory.clear());
  const dispatchDeps = { collections, webhooksQueue, config: config.webhooks, pending, first, redis: redis.commands, prefix, directory };
  // Events are fanned out in the job that records them (their first attempts made
  // there too); the dispatch job is the fallback.
  const fanOut = (event: DispatchEventData, json: string) => dispatchEvent(dispatchDeps, event, json);
  // The intents this worker wrote last, for their next step (common/kept-intents.ts).
  const kept = new KeptIntents({ redis: redis.commands, prefix, now, ...KEPT_FOR_CHANGES });
  redis.commands.on('close', () => kept.clear());
  // The callback URLs' tokens are keyed with a service key of their own (DESIGN section 14).
  const callbackKeys = new ServiceKeyring(collections.serviceKeys, CALLBACK_KEY_ID, keyring);
  // The ledger: postings of a balance that meet go in one round (balance/ledger.ts).
  const ledger = new BalanceLedger({ collections, inserts, redis: redis.commands, prefix, ids, now, atomicConditionalUpdates: storeProfile.atomicConditionalUpdates, gate: writes });
  // Absent (LEDGER_POSTINGS=off, a benchmark's baseline only): nothing is posted.
  const postings: Postings | undefined = config.ledgerPostings ? { ledger, feesOf: accountFees(config.liveOperators.accounts) } : undefined;
  const lifecycleDeps: LifecycleDeps = {
    ...createDeps,
    eventsQueue,
    fanOut,
    intentsQueue,
    ids,
    simulator: config.simulator,
    confirmFailureLimit: config.confirmFailureLimit,
    // Live mode: one connector per configured operator; only their answers decide
    // live intents (security review M3; docs/payments.md, "Live operators").
    connectors: liveConnectors(config, { redis: redis.commands, db: mongo.db, prefix, callbackKey: async () => (await callbackKeys.current()).key }),
    approvalWindowMs: config.liveOperators.approvalWindowMs,
    publicBaseUrl: config.publicBaseUrl,
    inputSeal: new InputSeal(collections.serviceKeys, keyring),
    // Transition updates hold at most their share of the slots: the inserts keep the rest.
    // Those that meet there go as one command (fenced-updates.ts).
    updates: new FencedUpdates({
      maxDocs: transitionBatchMax,
      gate: through(new WriteGate(transitionWritesInFlight), writes),
      statementBoundMs: storeProfile.updateStatementBoundMs,
    }),
    atomicConditionalUpdates: storeProfile.atomicConditionalUpdates,
    kept,
    eventRetentionMs: config.retention.eventMs,
    logger,
    postings,
  };
  const refundDeps: RefundDeps = { ...lifecycleDeps, publicBaseUrl: config.publicBaseUrl, refundLimitMs: config.liveOperators.refundLimitMs, refundLimitPerIntent: config.refundLimitPerIntent };
  const checkDeps: CheckDeps = { ...lifecycleDeps, pollScheduleMs: config.liveOperators.pollScheduleMs };
  const payoutDeps: PayoutDeps = {
    ...lifecycleDeps,
    pollScheduleMs: config.liveOperators.pollScheduleMs,
    breakerFailures: config.liveOperators.breakerFailures,
    giveUpMs: config.liveOperators.refundLimitMs,
    balance: ledgerBalance(ledger, { collections }),
    destinations: new Seal(collections.serviceKeys, DESTINATIONS_KEY_ID, keyring),
  };

  const redeliveries = new Redeliveries(redis.commands, {
    prefix,
    limit: config.webhooks.endpointRedeliveryLimit,
    staleMs: redeliveryStaleMs(config.webhooks),
  });
  const endpointDeps: EndpointMutationDeps = { ...createDeps, webhooksQueue, redeliveries, config: config.webhooks, deliver: deliverDeps, ids, logger };

  return {
    config,
    now,
    collections,
    redis,
    prefix,
    eventsQueue,
    webhooksQueue,
    maintenanceQueue,
    intentsQueue,
    writesQueue,
    writesInFlight,
    transitionWritesInFlight,
    transitionBatchMax,
    intentsConcurrency,
    /** A sweeper's walk reads pages from indexes, or one snapshot per pass (worker/sweep-walk.ts). */
    queriesUseIndexes: storeProfile.queriesUseIndexes,
    createDeps,
    pending,
    deliverDeps,
    deliveries,
    first,
    dispatchDeps,
    fanOut,
    lifecycleDeps,
    refundDeps,
    checkDeps,
    payoutDeps,
    ledger,
    redeliveries,
    endpointDeps,
    postings,
  };
}
