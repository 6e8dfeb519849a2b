/** MongoDB: connection, collections and indexes. The document types are in documents.ts. */
import { MongoClient, MongoServerError, type Collection, type MongoClientOptions, type CreateIndexesOptions, type Db, type Document, type Filter } from 'mongodb';
import { jitteredBackoff } from './retry.js';
import { resolveStoreProfile, type StoreProfile, type StoreProfileName } from './store-profile.js';
import type { PayoutBatchDoc, PayoutDoc } from './payouts.js';
import type { DiscrepancyKeyDoc, OperatorDiscrepancyDoc, SimulatorPaymentDoc } from './operator-discrepancies.js';
import type { ApiKeyDoc, BalanceDoc, BalanceTransactionDoc, EventDoc, LedgerKeyDoc,
  EventKeyDoc, IdempotencyKeyDoc, IdempotencyRecordDoc, MutationDoc, OutboxDoc, PaymentIntentDoc, RefundDoc, ServiceKeyDoc, WebhookAttemptDoc, WebhookEndpointDoc } from './documents.js';

export interface Collections {
  paymentIntents: Collection<PaymentIntentDoc>;
  webhookEndpoints: Collection<WebhookEndpointDoc>;
  outbox: Collection<OutboxDoc>;
  apiKeys: Collection<ApiKeyDoc>;
  webhookAttempts: Collection<WebhookAttemptDoc>;
  events: Collection<EventDoc>;
  /** The identities of recorded events (EventKeyDoc): a change recorded twice is one event. */
  eventKeys: Collection<EventKeyDoc>;
  idempotencyRecords: Collection<IdempotencyRecordDoc>;
  idempotencyKeys: Collection<IdempotencyKeyDoc>;
  serviceKeys: Collection<ServiceKeyDoc>;
  intentMutations: Collection<MutationDoc>;
  refunds: Collection<RefundDoc>;
  payouts: Collection<PayoutDoc>;
  payoutBatches: Collection<PayoutBatchDoc>;
  /** Reconciliation (worker/reconcile/): what it found, each operator transaction's key, and the simulator's late payments. */
  operatorDiscrepancies: Collection<OperatorDiscrepancyDoc>;
  discrepancyKeys: Collection<DiscrepancyKeyDoc>;
  simulatorPayments: Collection<SimulatorPaymentDoc>;
  /** One per (project, mode, currency): the ledger's serialisation point (worker/balance/ledger.ts). */
  balances: Collection<BalanceDoc>;
  /** The ledger's postings, never updated or deleted. */
  balanceTransactions: Collection<BalanceTransactionDoc>;
  /** The identities of posted movements: a movement posted twice is one transaction. */
  ledgerKeys: Collection<LedgerKeyDoc>;
}

export interface Mongo {
  client: MongoClient;
  db: Db;
  collections: Collections;
}

/**
 * The document with this `_id`, if it belongs to `scope` (project and livemode);
 * null otherwise. The filter names `_id` alone and the scope is checked here: every
 * store serves that shape from its `_id` index, while a filter with any other field
 * makes the local stack's store decode and test every document in the collection
 * (docs/storage.md).
 */
export async function findByIdInScope<T extends { _id: string; project: string; livemode: boolean }>(
  collection: Collection<T>,
  id: string,
  scope: { project: string; livemode: boolean },
  options: { projection?: Record<string, 0 | 1> } = {},
): Promise<T | null> {
  const projection = options.projection && withScopeFields(options.projection);
  const doc = (await collection.findOne({ _id: id } as Filter<T>, projection ? { projection } : {})) as T | null;
  return doc && doc.project === scope.project && doc.livemode === scope.livemode ? doc : null;
}

/** A projection that still returns project and livemode, to check the scope with. */
function withScopeFields(projection: Record<string, 0 | 1>): Record<string, 0 | 1> {
  return Object.values(projection).includes(1) ? { ...projection, project: 1, livemode: 1 } : projection;
}

export function collections(db: Db): Collections {
  return {
    paymentIntents: db.collection<PaymentIntentDoc>('payment_intents'),
    webhookEndpoints: db.collection<WebhookEndpointDoc>('webhook_endpoints'),
    outbox: db.collection<OutboxDoc>('event_outbox'),
    apiKeys: db.collection<ApiKeyDoc>('api_keys'),
    webhookAttempts: db.collection<WebhookAttemptDoc>('webhook_attempts'),
    events: db.collection<EventDoc>('events'),
    eventKeys: db.collection<EventKeyDoc>('event_keys'),
    idempotencyRecords: db.collection<IdempotencyRecordDoc>('idempotency_records'),
    idempotencyKeys: db.collection<IdempotencyKeyDoc>('idempotency_keys'),
    serviceKeys: db.collection<ServiceKeyDoc>('service_keys'),
    intentMutations: db.collection<MutationDoc>('intent_mutations'),
    refunds: db.collection<RefundDoc>('refunds'),
    payouts: db.collection<PayoutDoc>('payouts'),
    payoutBatches: db.collection<PayoutBatchDoc>('payout_batches'),
    operatorDiscrepancies: db.collection<OperatorDiscrepancyDoc>('operator_discrepancies'),
    discrepancyKeys: db.collection<DiscrepancyKeyDoc>('discrepancy_keys'),
    simulatorPayments: db.collection<SimulatorPaymentDoc>('simulator_payments'),
    balances: db.collection<BalanceDoc>('balances'),
    balanceTransactions: db.collection<BalanceTransactionDoc>('balance_transactions'),
    ledgerKeys: db.collection<LedgerKeyDoc>('ledger_keys'),
  };
}

/**
 * Past one machine (DESIGN section 19, docs/storage.md): on a replica set every write
 * waits for a majority of its members (`w: "majority"`), so a failover never rolls
 * back a write the service acknowledged, and reads see only majority-committed data
 * (`readConcern: "majority"`), so the service never acts on a record a failover takes
 * back. Chosen from the connection string: a replica set (`replicaSet=`) or an SRV
 * record (`mongodb+srv://`, a replica set or a sharded cluster behind it), unless the
 * string sets its own `w` or `readConcernLevel`. A single server, the local stack's
 * FerretDB among them, gets the driver's defaults. (FerretDB v1 takes both concerns
 * and ignores them: test/common/mongo-concerns.test.ts.)
 */
export function majorityConcerns(url: string): Pick<MongoClientOptions, 'writeConcern' | 'readConcern'> {
  // The query string alone: a seed list (`a:27017,b:27017`) is no URL to `new URL`.
  const query = url.indexOf('?');
  const params = new URLSearchParams(query < 0 ? '' : url.slice(query + 1));
  const replicated = url.startsWith('mongodb+srv://') || params.has('replicaSet');
  if (!replicated) return {};
  return {
    ...(params.has('w') ? {} : { writeConcern: { w: 'majority' as const } }),
    ...(params.has('readConcernLevel') ? {} : { readConcern: { level: 'majority' as const } }),
  };
}

/**
 * The client and the collections, not connected yet: the driver connects on the
 * first operation, and reconnects by itself after a restart of the server. For a
 * process that must start (listen, answer its health checks) before MongoDB answers.
 */
export function openMongo(
  url: string,
  dbName: string,
  appName: string,
  poolSize = 50,
  options: { monitorCommands?: boolean; concerns?: Pick<MongoClientOptions, 'writeConcern' | 'readConcern'> } = {},
): Mongo {
  const client = new MongoClient(url, {
    ...(options.concerns ?? majorityConcerns(url)),
    appName,
    // Command events, for the command metrics (common/metrics.ts): only where they are served.
    monitorCommands: options.monitorCommands ?? false,
    serverSelectionTimeoutMS: 3000,
    connectTimeoutMS: 3000,
    maxPoolSize: poolSize,
  });
  const db = client.db(dbName);
  return { client, db, collections: collections(db) };
}

/** Connects and makes sure the indexes exist: for processes that need MongoDB before anything else. */
export async function connectMongo(url: string, dbName: string, appName: string, forced: StoreProfileName | null): Promise<Mongo> {
  const mongo = openMongo(url, dbName, appName);
  await mongo.client.connect();
  await ensureIndexes(mongo, await resolveStoreProfile(forced, mongo.db));
  return mongo;
}

/**
 * Connects, or connects again. The driver reconnects by itself once it has been
 * connected, but a first connection that fails (MongoDB down or stalled at start-up)
 * leaves the client closed for good ("Topology is closed") until `connect` is called
 * again: a start-up step that may fail must begin with this.
 */
export async function connect(mongo: Mongo): Promise<void> {
  await mongo.client.connect();
}

/**
 * Runs `step` (connecting, making sure of the indexes) until it succeeds, with
 * jittered backoff from 250 ms to 5 s, reporting each failure to `onFailure`: a
 * process started while MongoDB is down or slow waits for it instead of exiting.
 */
export async function untilDone(step: () => Promise<unknown>, onFailure: (err: Error, failures: number) => void): Promise<void> {
  for (let failures = 1; ; failures++) {
    try {
      await step();
      return;
    } catch (err) {
      onFailure(err as Error, failures);
      await new Promise((resolve) => setTimeout(resolve, jitteredBackoff(failures, { baseMs: 250, capMs: 5000 })));
    }
  }
}

interface IndexSpec {
  collection: Collection;
  key: Record<string, 1 | -1>;
  options: CreateIndexesOptions & { name: string };
}

function index<T extends Document>(collection: Collection<T>, key: Record<string, 1 | -1>, options: IndexSpec['options']): IndexSpec {
  return { collection: collection as unknown as Collection, key, options };
}

/**
 * Indexes for every query (scope, then newest first) and the unique `idem` field.
 * MongoDB uses all of them. A store whose queries use no index (`queriesUseIndexes`,
 * the local stack's) gets only the unique ones, which it enforces on insert: the
 * others it would keep up on every write and never read (docs/storage.md), so those
 * an earlier start or the other profile made are dropped.
 *
 * Only missing indexes are created. Listing is a read; creating one, even one that
 * exists, may be a write that queues behind every other write: a process restarting
 * under load would wait for its turn for nothing.
 */
export async function ensureIndexes(mongo: Pick<Mongo, 'db' | 'collections'>, store: Pick<StoreProfile, 'queriesUseIndexes'>): Promise<void> {
  const c = mongo.collections;
  const scoped = { project: 1, livemode: 1, _id: -1 } as const;
  // Sparse: only documents created with a key carry `idem`.
  const idem = { name: 'idem', unique: true, sparse: true };
  const specs = [
    index(c.paymentIntents, scoped, { name: 'scope_id' }),
    index(c.paymentIntents, { idem: 1 }, idem),
    // The sweepers' walks (worker/sweep-walk.ts): an equality on mode, status (or what
    // stands for it) and project, then the walk's order, so a page from a cursor is a
    // range of one index and a class's projects are a distinct of its prefix.
    // The intents' sweeper: intents with a step ahead, soonest expiry first.
    index(c.paymentIntents, { livemode: 1, status: 1, project: 1, expires_at: 1, _id: 1 }, { name: 'sweep_expires_at' }),
    // Search (api/queries/search.ts): an equality after the scope, then newest first.
    // Metadata is an array of {k, v} pairs: `$elemMatch` on both bounds one element.
    index(c.paymentIntents, { project: 1, livemode: 1, status: 1, _id: -1 }, { name: 'scope_status_id' }),
    index(c.paymentIntents, { project: 1, livemode: 1, 'payment.phone_last4': 1, _id: -1 }, { name: 'scope_phone_last4_id' }),
    index(c.paymentIntents, { project: 1, livemode: 1, 'metadata.k': 1, 'metadata.v': 1, _id: -1 }, { name: 'scope_metadata_id' }),
    index(c.webhookEndpoints, scoped, { name: 'scope_id' }),
    index(c.webhookEndpoints, { idem: 1 }, idem),
    // The outbox sweeper: stale entries, oldest first.
    index(c.outbox, { livemode: 1, project: 1, created_ms: 1, _id: 1 }, { name: 'sweep_created_ms' }),
    index(c.apiKeys, { hash: 1 }, { name: 'hash', unique: true }),
    index(c.apiKeys, { project: 1, _id: -1 }, { name: 'project_id' }),
    index(c.webhookAttempts, { endpoint_id: 1, _id: -1 }, { name: 'endpoint_id' }),
    index(c.events, scoped, { name: 'scope_id' }),
    index(c.events, { project: 1, livemode: 1, type: 1, _id: -1 }, { name: 'scope_type_id' }),
    // `GET /v1/events?object=` (a payment's timeline) and `GET /v1/events/{id}/attempts`.
    index(c.events, { project: 1, livemode: 1, object_id: 1, _id: -1 }, { name: 'scope_object_id' }),
    index(c.webhookAttempts, { event_id: 1, _id: -1 }, { name: 'event_id' }),
    index(c.idempotencyRecords, { expires_at: 1 }, { name: 'expires_at' }),
    index(c.idempotencyKeys, { expires_at: 1 }, { name: 'expires_at' }),
    index(c.refunds, scoped, { name: 'scope_id' }),
    index(c.operatorDiscrepancies, scoped, { name: 'scope_id' }),
    // Reconciliation's reads: the simulator's payments of the last hours.
    index(c.simulatorPayments, { paid_ms: 1 }, { name: 'paid_ms' }),
    // `GET /v1/refunds?payment_intent=`: the refunds of one intent, newest first (an
    // intent belongs to one scope; the scope is checked on the few it finds). The local
    // stack's store scans, as for every query but a lone `_id` (docs/storage.md).
    index(c.refunds, { payment_intent: 1, _id: -1 }, { name: 'payment_intent_id' }),
    // The refunds' sweeper: pending refunds, oldest first.
    index(c.refunds, { livemode: 1, status: 1, project: 1, created: 1, _id: 1 }, { name: 'sweep_created' }),
    // Payouts (worker/payouts/): the list, `?batch=` and `?status=` newest first; the sweeper's unfinished payouts.
    index(c.payouts, scoped, { name: 'scope_id' }),
    index(c.payouts, { batch: 1, _id: -1 }, { name: 'batch_id' }),
    index(c.payouts, { status: 1, _id: 1 }, { name: 'status_id' }),
    index(c.payoutBatches, { status: 1, _id: 1 }, { name: 'status_id' }),
    index(c.payouts, { project: 1, livemode: 1, status: 1, _id: -1 }, { name: 'scope_status_id' }),
    index(c.payoutBatches, scoped, { name: 'scope_id' }),
    // A reconnect's sweep: the intents a transition changed lately.
    index(c.paymentIntents, { changed_ms: 1 }, { name: 'changed_ms', sparse: true }),
    // The refunds' sweeper: intents with a pending refund (a range on the count; the
    // few of a project sorted by `_id`).
    index(c.paymentIntents, { refunds_pending: 1, livemode: 1, project: 1, _id: 1 }, { name: 'sweep_refunds_pending' }),
    // The ledger (worker/balance/ledger.ts): a scope's balances; the balances changed
    // lately (the sweeper completes their tails); the transactions newest first, by
    // type or by source; a statement's range of one currency, in posting order.
    index(c.balances, { project: 1, livemode: 1, currency: 1 }, { name: 'scope_currency' }),
    index(c.balances, { updated_ms: 1 }, { name: 'updated_ms' }),
    index(c.balanceTransactions, scoped, { name: 'scope_id' }),
    index(c.balanceTransactions, { project: 1, livemode: 1, type: 1, _id: -1 }, { name: 'scope_type_id' }),
    index(c.balanceTransactions, { project: 1, livemode: 1, source: 1, _id: -1 }, { name: 'scope_source_id' }),
    index(c.balanceTransactions, { project: 1, livemode: 1, currency: 1, created_ms: 1, seq: 1 }, { name: 'statement' }),
    // Payout holds in time order, every project's, for the stranded holds' check (worker/payouts/stranded.ts).
    index(c.balanceTransactions, { type: 1, _id: 1 }, { name: 'type_id' }),
    // The retention sweeper's old documents of one mode (worker/processors/sweep-retention.ts):
    // live objects, never deleted, are not walked to find the test ones.
    ...[c.paymentIntents, c.refunds, c.events, c.webhookAttempts, c.payouts, c.payoutBatches, c.operatorDiscrepancies, c.simulatorPayments].map((collection) =>
      index(collection as unknown as Collection, { livemode: 1, _id: 1 }, { name: 'livemode_id' }),
    ),
  ];
  const existing = new Map<Collection, Promise<Set<string>>>();
  const namesOf = (collection: Collection) => {
    let names = existing.get(collection);
    if (!names) {
      names = collection
        .indexes()
        .then((list) => new Set(list.map((index) => String(index.name))))
        .catch((err: unknown) => {
          // A collection that does not exist yet has no index.
          if (err instanceof MongoServerError && err.code === 26) return new Set<string>();
          throw err;
        });
      existing.set(collection, names);
    }
    return names;
  };
  const serves = (spec: IndexSpec) => store.queriesUseIndexes || spec.options.unique === true;
  await Promise.all(
    specs.map(async (spec) => {
      const present = (await namesOf(spec.collection)).has(spec.options.name);
      if (serves(spec) && !present) await spec.collection.createIndex(spec.key, spec.options);
      if (!serves(spec) && present) {
        await spec.collection.dropIndex(spec.options.name).catch((err: unknown) => {
          // Dropped meanwhile, by another process starting (IndexNotFound).
          if (!(err instanceof MongoServerError && err.code === 27)) throw err;
        });
      }
    }),
  );
  // Every collection exists before the first job, though no index made it: on the local
  // stack the `_id` index the stack adds then comes before the load, not behind it
  // (docs/storage.md, decision 0011).
  const made = new Set((await mongo.db.listCollections({}, { nameOnly: true }).toArray()).map((info) => info.name));
  const names = new Set(Object.values(c).map((collection: Collection) => collection.collectionName));
  await Promise.all(
    [...names].filter((name) => !made.has(name)).map((name) =>
      mongo.db.createCollection(name).catch((err: unknown) => {
        // Made meanwhile, by another process starting.
        if (!(err instanceof MongoServerError && err.code === 48)) throw err;
      }),
    ),
  );
}

/** One document's own write error from a batched insert, with its server code. */
export class DocumentWriteError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
    this.name = 'DocumentWriteError';
  }
}

/** A duplicate key, from a single insert or from one document of a batch. */
export function isDuplicateKey(err: unknown): boolean {
  return (err instanceof MongoServerError || err instanceof DocumentWriteError) && err.code === 11000;
}

/** Inserts `doc`; an existing document with its `_id` (a retried job) counts as done. */
export async function insertOnce<T extends { _id: string }>(collection: Collection<T>, doc: T): Promise<void> {
  try {
    await collection.insertOne(doc as Parameters<Collection<T>['insertOne']>[0]);
  } catch (err) {
    if (!isDuplicateKey(err)) throw err;
  }
}
