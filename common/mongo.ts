/** MongoDB: connection, collections and indexes. The document types are in documents.ts. */
import { MongoClient, MongoServerError, type Collection, type CreateIndexesOptions, type Db, type Document, type Filter } from 'mongodb';
import { jitteredBackoff } from './retry.js';
import type { ApiKeyDoc, EventDoc,
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
  };
}

/**
 * The client and the collections, not connected yet: the driver connects on the
 * first operation, and reconnects by itself after a restart of the server. For a
 * process that must start (listen, answer its health checks) before MongoDB answers.
 */
export function openMongo(url: string, dbName: string, appName: string, poolSize = 50, options: { monitorCommands?: boolean } = {}): Mongo {
  const client = new MongoClient(url, {
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
export async function connectMongo(url: string, dbName: string, appName: string): Promise<Mongo> {
  const mongo = openMongo(url, dbName, appName);
  await mongo.client.connect();
  await ensureIndexes(mongo.collections);
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
 * MongoDB uses all of them; the local stack's store enforces the unique ones on
 * insert but uses none for queries (docs/storage.md).
 *
 * Only missing indexes are created. Listing is a read; creating one, even one that
 * exists, may be a write that queues behind every other write: a process restarting
 * under load would wait for its turn for nothing.
 */
export async function ensureIndexes(c: Collections): Promise<void> {
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
    index(c.webhookEndpoints, scoped, { name: 'scope_id' }),
    index(c.webhookEndpoints, { idem: 1 }, idem),
    // The outbox sweeper: stale entries, oldest first.
    index(c.outbox, { livemode: 1, project: 1, created_ms: 1, _id: 1 }, { name: 'sweep_created_ms' }),
    index(c.apiKeys, { hash: 1 }, { name: 'hash', unique: true }),
    index(c.apiKeys, { project: 1, _id: -1 }, { name: 'project_id' }),
    index(c.webhookAttempts, { endpoint_id: 1, _id: -1 }, { name: 'endpoint_id' }),
    index(c.events, scoped, { name: 'scope_id' }),
    index(c.events, { project: 1, livemode: 1, type: 1, _id: -1 }, { name: 'scope_type_id' }),
    index(c.idempotencyRecords, { expires_at: 1 }, { name: 'expires_at' }),
    index(c.idempotencyKeys, { expires_at: 1 }, { name: 'expires_at' }),
    index(c.refunds, scoped, { name: 'scope_id' }),
    // `GET /v1/refunds?payment_intent=`: the refunds of one intent, newest first (an
    // intent belongs to one scope; the scope is checked on the few it finds). The local
    // stack's store scans, as for every query but a lone `_id` (docs/storage.md).
    index(c.refunds, { payment_intent: 1, _id: -1 }, { name: 'payment_intent_id' }),
    // The refunds' sweeper: pending refunds, oldest first.
    index(c.refunds, { livemode: 1, status: 1, project: 1, created: 1, _id: 1 }, { name: 'sweep_created' }),
    // A reconnect's sweep: the intents a transition changed lately.
    index(c.paymentIntents, { changed_ms: 1 }, { name: 'changed_ms', sparse: true }),
    // The refunds' sweeper: intents with a pending refund (a range on the count; the
    // few of a project sorted by `_id`).
    index(c.paymentIntents, { refunds_pending: 1, livemode: 1, project: 1, _id: 1 }, { name: 'sweep_refunds_pending' }),
    // The retention sweeper's old documents of one mode (worker/processors/sweep-retention.ts):
    // live intents and refunds, never deleted, are not walked to find the test ones.
    ...[c.paymentIntents, c.refunds, c.events, c.webhookAttempts].map((collection) =>
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
  await Promise.all(
    specs.map(async (spec) => {
      if ((await namesOf(spec.collection)).has(spec.options.name)) return;
      await spec.collection.createIndex(spec.key, spec.options);
    }),
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
