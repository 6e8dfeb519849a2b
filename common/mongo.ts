import { MongoClient, MongoServerError, type Collection, type Db } from 'mongodb';
import type { MetadataPairs } from './metadata.js';

/**
 * Storage documents. Every resource carries its scope (project, livemode); `_id` is
 * the public id, time-ordered, so `_id` order is creation order. Only features that
 * FerretDB v1 has are used: no TTL indexes, no transactions, no change streams.
 *
 * FerretDB 1.24 with SQLite uses no index for queries (its `_id` index expression
 * differs from the one its queries use, so `explain` shows a full SCAN): every find
 * or update costs a scan of its collection, while an insert stays cheap. The hot
 * paths are therefore insert-only on the big collections, and read only small ones.
 */
export interface PaymentIntentDoc {
  _id: string;
  project: string;
  livemode: boolean;
  amount: number;
  currency: string;
  description: string | null;
  status: 'new';
  client_secret: string;
  automatic_operator: boolean;
  allowed_operators: string[];
  selected_operator: string | null;
  metadata: MetadataPairs;
  created: number;
  expires_at: number;
}

export interface WebhookEndpointDoc {
  _id: string;
  project: string;
  livemode: boolean;
  url: string;
  enabled_events: string[];
  description: string | null;
  metadata: MetadataPairs;
  status: 'enabled' | 'disabled';
  /** `whsec_…`; signs deliveries. Never presented after the create response. */
  secret: string;
  created: number;
  /** Epoch ms of the first failure of the current run of failures; null when the last attempt succeeded. */
  failing_since: number | null;
  disabled_reason: string | null;
}

/** An event, immutable once written: what `GET /v1/events` shows and webhooks deliver. */
export interface EventDoc {
  _id: string;
  project: string;
  livemode: boolean;
  type: string;
  created: number;
  /** The event exactly as presented and delivered (metadata keys may not be valid field names). */
  json: string;
}

/**
 * The outbox: an event written but not yet dispatched. Inserted with the event,
 * deleted once its delivery jobs are in the queue, so the collection stays small
 * and cheap to read (the events collection only grows).
 */
export interface OutboxDoc {
  /** The event id. */
  _id: string;
  project: string;
  livemode: boolean;
  type: string;
  json: string;
  /** Epoch ms, for the sweeper. */
  created_ms: number;
}

/**
 * The claim on an idempotency key, written once by the first job that runs for it.
 * It pins the object id, so every job for the key ends on the same object.
 */
export interface IdempotencyDoc {
  /** sha256 of (project, livemode, key). */
  _id: string;
  project: string;
  livemode: boolean;
  key: string;
  fingerprint: string;
  object_id: string;
  created_ms: number;
  expires_at: number;
}

/**
 * The recorded result of a key, written once (insert only: on FerretDB an update
 * costs a scan of the collection) when the job that claimed the key completes.
 */
export interface IdempotencyResultDoc {
  _id: string;
  project: string;
  livemode: boolean;
  fingerprint: string;
  object_id: string;
  status: number;
  /** The recorded response body, byte for byte. */
  body: string;
  expires_at: number;
}

export interface ApiKeyDoc {
  _id: string;
  project: string;
  livemode: boolean;
  /** sha256 hex of the secret; the secret itself is never stored. */
  hash: string;
  last4: string;
  created: number;
  revoked_at: number | null;
}

export interface WebhookAttemptDoc {
  _id: string;
  project: string;
  livemode: boolean;
  endpoint_id: string;
  event_id: string;
  attempt: number;
  created: number;
  duration_ms: number;
  http_status: number | null;
  /** null on a 2xx; else `http_error`, `timeout`, `connection_error`, `address_refused`, `redirect`. */
  error: string | null;
  succeeded: boolean;
  response_body: string | null;
}

export interface Collections {
  paymentIntents: Collection<PaymentIntentDoc>;
  webhookEndpoints: Collection<WebhookEndpointDoc>;
  events: Collection<EventDoc>;
  outbox: Collection<OutboxDoc>;
  idempotency: Collection<IdempotencyDoc>;
  idempotencyResults: Collection<IdempotencyResultDoc>;
  apiKeys: Collection<ApiKeyDoc>;
  webhookAttempts: Collection<WebhookAttemptDoc>;
}

export interface Mongo {
  client: MongoClient;
  db: Db;
  collections: Collections;
}

export function collections(db: Db): Collections {
  return {
    paymentIntents: db.collection<PaymentIntentDoc>('payment_intents'),
    webhookEndpoints: db.collection<WebhookEndpointDoc>('webhook_endpoints'),
    events: db.collection<EventDoc>('events'),
    outbox: db.collection<OutboxDoc>('event_outbox'),
    idempotency: db.collection<IdempotencyDoc>('idempotency_keys'),
    idempotencyResults: db.collection<IdempotencyResultDoc>('idempotency_results'),
    apiKeys: db.collection<ApiKeyDoc>('api_keys'),
    webhookAttempts: db.collection<WebhookAttemptDoc>('webhook_attempts'),
  };
}

/**
 * Connects (the driver reconnects by itself after a restart of the server) and
 * makes sure the indexes exist.
 */
export async function connectMongo(url: string, dbName: string, appName: string): Promise<Mongo> {
  const client = new MongoClient(url, {
    appName,
    serverSelectionTimeoutMS: 3000,
    connectTimeoutMS: 3000,
    maxPoolSize: 50,
  });
  await client.connect();
  const db = client.db(dbName);
  const mongo = { client, db, collections: collections(db) };
  await ensureIndexes(mongo.collections);
  return mongo;
}

/** Indexes serving every query the service makes: scope, then newest first. */
export async function ensureIndexes(c: Collections): Promise<void> {
  const scoped = { project: 1, livemode: 1, _id: -1 } as const;
  await Promise.all([
    c.paymentIntents.createIndex(scoped, { name: 'scope_id' }),
    c.webhookEndpoints.createIndex(scoped, { name: 'scope_id' }),
    c.events.createIndex(scoped, { name: 'scope_id' }),
    c.events.createIndex({ project: 1, livemode: 1, type: 1, _id: -1 }, { name: 'scope_type_id' }),
    c.outbox.createIndex({ created_ms: 1 }, { name: 'age' }),
    c.idempotency.createIndex({ expires_at: 1 }, { name: 'expiry' }),
    c.idempotencyResults.createIndex({ expires_at: 1 }, { name: 'expiry' }),
    c.apiKeys.createIndex({ hash: 1 }, { name: 'hash', unique: true }),
    c.apiKeys.createIndex({ project: 1, _id: -1 }, { name: 'project_id' }),
    c.webhookAttempts.createIndex({ endpoint_id: 1, _id: -1 }, { name: 'endpoint_id' }),
  ]);
}

export function isDuplicateKey(err: unknown): boolean {
  return err instanceof MongoServerError && err.code === 11000;
}

/** Inserts `doc`; an existing document with its `_id` (a retried job) counts as done. */
export async function insertOnce<T extends { _id: string }>(collection: Collection<T>, doc: T): Promise<void> {
  try {
    await collection.insertOne(doc as Parameters<Collection<T>['insertOne']>[0]);
  } catch (err) {
    if (!isDuplicateKey(err)) throw err;
  }
}

/**
 * Inserts `doc`, or, when a document with its `_id` already exists (a retried job),
 * returns the stored one: the write is idempotent on the id.
 */
export async function insertOrRead<T extends { _id: string }>(collection: Collection<T>, doc: T): Promise<T> {
  try {
    await collection.insertOne(doc as Parameters<Collection<T>['insertOne']>[0]);
    return doc;
  } catch (err) {
    if (!isDuplicateKey(err)) throw err;
  }
  const stored = (await collection.findOne({ _id: doc._id } as Parameters<Collection<T>['findOne']>[0])) as T | null;
  if (!stored) throw new Error(`document ${doc._id} vanished after a duplicate-key error`);
  return stored;
}
