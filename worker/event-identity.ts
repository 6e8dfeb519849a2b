/**
 * Exactly once, even when Redis forgets (DESIGN section 15): the record lock only
 * saves work. A Redis that lost its last seconds (a failover to a lagging replica, a
 * restore) can forget a lock, or give it back to a holder that had lost it; on a
 * store without atomic conditional updates (FerretDB, docs/storage.md) two workers
 * may then both apply the same change. What keeps the change single is its identity
 * in MongoDB: before an event is recorded (its outbox entry, its document, its
 * deliveries), its key is inserted in `event_keys` (common/documents.ts,
 * `EventKeyDoc`). The first event to take a key records the change; another event of
 * the same change finds the key taken and records nothing. A retry of the same event
 * finds its own id there and goes on (every later step is idempotent).
 */
import type { EventKeyDoc } from '../common/documents.js';
import type { Collections } from '../common/mongo.js';
import { isDuplicateKey } from '../common/mongo.js';
import type { InsertBatcher } from './group-commit.js';

export interface IdentityDeps {
  collections: Pick<Collections, 'eventKeys'>;
  inserts: InsertBatcher;
}

/** Whether `eventId` records the change named `key`: it does when it took the key first, or had taken it. */
export async function claimEvent(deps: IdentityDeps, key: string, eventId: string): Promise<boolean> {
  return (await claimEventOnce(deps, key, eventId)) !== 'other';
}

/**
 * As `claimEvent`, telling a first claim (`taken`: nothing of this change was
 * recorded before, by anyone) from a retry's (`mine`) and another event's (`other`).
 */
export async function claimEventOnce(deps: IdentityDeps, key: string, eventId: string): Promise<'taken' | 'mine' | 'other'> {
  return (await claimEventNaming(deps, key, eventId)).outcome;
}

/**
 * As `claimEventOnce`, the claim also naming what the change's first writer chose
 * beside its event (`names`: a payment's balance transaction, ../balance/ledger.ts
 * `HeldIdentity`), so one insert claims both. A retry gets back the claim as stored.
 */
export async function claimEventNaming(
  deps: IdentityDeps,
  key: string,
  eventId: string,
  names: Pick<EventKeyDoc, 'txn' | 'claimed_ms'> = {},
): Promise<{ outcome: 'taken' | 'mine' | 'other'; claim: EventKeyDoc | null }> {
  const doc: EventKeyDoc = { _id: key, event: eventId, ...names };
  try {
    await deps.inserts.insert(deps.collections.eventKeys, doc);
    return { outcome: 'taken', claim: doc };
  } catch (err) {
    if (!isDuplicateKey(err)) throw err;
  }
  const taken = await deps.collections.eventKeys.findOne({ _id: key });
  return { outcome: taken?.event === eventId ? 'mine' : 'other', claim: taken };
}
