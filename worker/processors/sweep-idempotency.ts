import type { Redis } from 'ioredis';
import type { Collection } from 'mongodb';
import type { Collections } from '../../common/mongo.js';
import { freeExpiredKey } from '../record-lock.js';

export interface SweepIdempotencyDeps {
  collections: Collections;
  /** Where the objects' locks are kept (../record-lock.ts). */
  redis: Redis;
  prefix: string;
}

/** Keys freed at once: each takes its object's lock for one update. */
const FREED_AT_ONCE = 8;

/**
 * Frees idempotency keys past their lifetime (no TTL indexes: docs/storage.md): the
 * object stays, its unique `idem` field goes, so the key may create anew. Lookups
 * already treat an expired key as free; this keeps the unique index honest.
 *
 * One object at a time under its lock, not one updateMany: the local stack's store
 * writes every matched document back whole, and would undo a transition of an
 * intent (which may still change for 30 days) or an endpoint change made between its
 * read and write. One path for every store: the sweep is not where time goes.
 */
export async function sweepIdempotency(deps: SweepIdempotencyDeps, now: number): Promise<{ freed: number }> {
  const c = deps.collections;
  const [pis, endpoints, records] = await Promise.all([
    freeExpired(deps, c.paymentIntents as unknown as Collection<Holder>, now),
    freeExpired(deps, c.webhookEndpoints as unknown as Collection<Holder>, now),
    // The records of mutations (confirm, cancel, updates) are documents of their own.
    c.idempotencyRecords.deleteMany({ expires_at: { $lte: now } }),
    // The creates' pointers (worker/processors/create.ts) go with their keys; not counted.
    c.idempotencyKeys.deleteMany({ expires_at: { $lte: now } }),
    // The answers of requests' mutations of payment intents (worker/lifecycle/transition.ts); not counted.
    c.intentMutations.deleteMany({ expires_at: { $lte: now } }),
  ]);
  return { freed: pis + endpoints + records.deletedCount };
}

interface Holder {
  _id: string;
  idem?: string;
  idem_expires_at?: number;
}

async function freeExpired(deps: SweepIdempotencyDeps, collection: Collection<Holder>, now: number): Promise<number> {
  const expired = await collection
    .find({ idem: { $exists: true }, idem_expires_at: { $lte: now } }, { projection: { _id: 1 } })
    .map((doc) => doc._id)
    .toArray();
  let freed = 0;
  for (let i = 0; i < expired.length; i += FREED_AT_ONCE) {
    const done = await Promise.all(expired.slice(i, i + FREED_AT_ONCE).map((id) => freeExpiredKey(deps.redis, deps.prefix, collection, id)));
    freed += done.filter(Boolean).length;
  }
  return freed;
}
