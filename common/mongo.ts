/** MongoDB: connection, collections and indexes. The document types are in documents.ts. */
import { MongoClient, MongoServerError, type Collection, type Db } from 'mongodb';
import type { ApiKeyDoc, OutboxDoc, PaymentIntentDoc, WebhookAttemptDoc, WebhookEndpointDoc } from './documents.js';

export interface Collections {
  paymentIntents: Collection<PaymentIntentDoc>;
  webhookEndpoints: Collection<WebhookEndpointDoc>;
  outbox: Collection<OutboxDoc>;
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
    outbox: db.collection<OutboxDoc>('event_outbox'),
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

/**
 * Indexes for every query (scope, then newest first) and the unique `idem` field.
 * FerretDB enforces the unique ones on insert but uses none for queries; MongoDB uses all.
 */
export async function ensureIndexes(c: Collections): Promise<void> {
  const scoped = { project: 1, livemode: 1, _id: -1 } as const;
  // Sparse: only documents created with a key carry `idem`.
  const idem = { name: 'idem', unique: true, sparse: true };
  await Promise.all([
    c.paymentIntents.createIndex(scoped, { name: 'scope_id' }),
    c.paymentIntents.createIndex({ idem: 1 }, idem),
    c.webhookEndpoints.createIndex(scoped, { name: 'scope_id' }),
    c.webhookEndpoints.createIndex({ idem: 1 }, idem),
    c.outbox.createIndex({ created_ms: 1 }, { name: 'age' }),
    c.apiKeys.createIndex({ hash: 1 }, { name: 'hash', unique: true }),
    c.apiKeys.createIndex({ project: 1, _id: -1 }, { name: 'project_id' }),
    c.webhookAttempts.createIndex({ endpoint_id: 1, _id: -1 }, { name: 'endpoint_id' }),
  ]);
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
