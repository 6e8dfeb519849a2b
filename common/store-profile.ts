/**
 * What the document store can do, as named capabilities: decided once at start-up
 * (asked of the server, or forced with `STORE_PROFILE`) and injected, so that code
 * asks for a capability, never for a product. Two profiles: a MongoDB server, and
 * the MongoDB-compatible server of the local stack and the test suite. Why each
 * capability differs between them, and what each one costs: docs/storage.md.
 */
import type { Db } from 'mongodb';

export const STORE_PROFILE_NAMES = ['mongodb', 'ferretdb'] as const;
export type StoreProfileName = (typeof STORE_PROFILE_NAMES)[number];

export interface StoreProfile {
  name: StoreProfileName;
  /**
   * The server applies an update's filter and its write as one atomic step, so a
   * condition in the filter decides a race by itself. When true, a transition's
   * update names the intent's status, attempt and `rev` as it read them; when
   * false, it names `_id` alone (the condition would decide nothing, and costs a
   * scan there), and the record lock is the only guard.
   */
  atomicConditionalUpdates: boolean;
  /** Default of `WORKER_WRITES_IN_FLIGHT`: a worker's writes (batched inserts, transition updates) in flight at once. */
  writesInFlight: number;
  /** Default of `WORKER_TRANSITION_WRITES_IN_FLIGHT`: how many of those may be transition updates. */
  transitionWritesInFlight: number;
  /** Default of `WORKER_TRANSITION_BATCH_MAX`: the most transition updates one command carries (worker/fenced-updates.ts). */
  transitionBatchMax: number;
  /**
   * The longest the store may spend on one update of a command before it starts the
   * next, waiting for its lock included: on the local stack's store SQLite's busy
   * timeout, which the stack sets to 1 s (scripts/lib/servers.mjs). A grouped update
   * renews its lock for this much per update ahead of it (worker/fenced-updates.ts).
   * 0 on MongoDB, where the conditional update decides races by itself.
   */
  updateStatementBoundMs: number;
  /**
   * Default of `WORKER_INTENTS_CONCURRENCY`: the intents queue's jobs a worker takes
   * at once. Each transition holds its intent's lock while it waits for a transition
   * lane; with one lane, more jobs only wait there, and a worker killed meanwhile
   * leaves every one of them (its job to be found stalled, its lock to lapse).
   */
  intentsConcurrency: number;
  /**
   * The server serves a filter from an index. When true, a sweeper's walk reads each
   * project's page of its work as a range of an index (worker/sweep-walk.ts); when
   * false (every filter but a lone `_id` scans the collection), a pass reads all of
   * its candidates with one query instead of one scan per class and per page.
   */
  queriesUseIndexes: boolean;
  /**
   * The server takes `$elemMatch` with field conditions (`{metadata: {$elemMatch: {k, v}}}`):
   * a metadata search then bounds one index on the pair; without it, the key and the
   * value are matched apart and the pair checked in the api (api/queries/search.ts).
   */
  elemMatchFields: boolean;
}

export const STORE_PROFILES: Readonly<Record<StoreProfileName, StoreProfile>> = {
  mongodb: { name: 'mongodb', atomicConditionalUpdates: true, writesInFlight: 32, transitionWritesInFlight: 16, transitionBatchMax: 64, updateStatementBoundMs: 0, intentsConcurrency: 64, queriesUseIndexes: true, elemMatchFields: true },
  // One writer (SQLite): more writes in flight only queue inside the database.
  ferretdb: { name: 'ferretdb', atomicConditionalUpdates: false, writesInFlight: 2, transitionWritesInFlight: 1, transitionBatchMax: 16, updateStatementBoundMs: 1000, intentsConcurrency: 16, queriesUseIndexes: false, elemMatchFields: false },
};

/**
 * The filter of an update that must find the document as it was read: `_id` plus
 * `condition` where the store applies a filter and its write as one atomic step
 * (`atomicConditionalUpdates`), so the condition decides a race by itself; `_id`
 * alone elsewhere, where the condition would decide nothing and costs a scan, and
 * the record lock is the only guard (docs/storage.md).
 */
export function conditionalUpdateFilter<Id, C extends object>(
  profile: Pick<StoreProfile, 'atomicConditionalUpdates'>,
  _id: Id,
  condition: C,
): { _id: Id } | ({ _id: Id } & C) {
  return profile.atomicConditionalUpdates ? { _id, ...condition } : { _id };
}

/** The profile of the server behind `db`: one `buildInfo`, whose `ferretdbVersion` names the local stack's server. */
export async function detectStoreProfile(db: Db): Promise<StoreProfile> {
  const info = await db.admin().command({ buildInfo: 1 });
  return typeof info.ferretdbVersion === 'string' ? STORE_PROFILES.ferretdb : STORE_PROFILES.mongodb;
}

/** The forced profile when there is one (`STORE_PROFILE`), the detected one otherwise. */
export function resolveStoreProfile(forced: StoreProfileName | null, db: Db): Promise<StoreProfile> {
  return forced ? Promise.resolve(STORE_PROFILES[forced]) : detectStoreProfile(db);
}
