/**
 * Group commit for fenced updates: the transitions of payment intents
 * (lifecycle/transition.ts) and their refunds' ledger (refunds/ledger.ts), and the
 * refunds' own status writes, which are not fenced (refunds/record.ts). What it
 * promises:
 *
 * - Each caller gets its own update's outcome. Updates that meet at the write gate
 *   go to MongoDB as one `bulkWrite({ordered: false})` per collection: one command,
 *   one round trip, where each update was one of both. On MongoDB that is one
 *   command for many writes; on the local stack's store each update is still its own
 *   commit, but it pays the command's and the round trip's cost once, and the batch's
 *   updates do not collide with each other for SQLite's lock
 *   (docs/decisions/0023-grouped-transition-updates.md).
 * - Every update is fenced (record-lock.ts) right before its batch is sent, all of
 *   the batch's fences in one burst of Redis calls: an update whose lock is no
 *   longer its writer's is not sent (`lost`), and the others go. The store carries
 *   out a command's updates one after another, each waiting at most its bound for
 *   the store's lock; each update's lock is renewed for the time the updates before
 *   it may take, so one sent by a worker killed meanwhile lands under its lock.
 * - The batch's answer counts the updates that matched, not which did. When every
 *   update matched, each is `updated`. Otherwise the count cannot say which one lost
 *   its race (on a store with conditional updates), and every update of the batch is
 *   `unknown`: its caller reads the record again and decides again, and finds its
 *   own change there when it was applied (both callers recognise their own change).
 *   A batch of one is answered exactly.
 * - A document's own write error fails its own caller; any other fault fails every
 *   caller of the batch, and each retries its update (re-fenced) as after a lost
 *   connection. Re-sending an applied update is harmless: on a store without
 *   conditions it writes the same fields again, on one with them it matches nothing.
 * - With `maxDocs` 1 every update goes alone, as it did before batching.
 */
import { MongoBulkWriteError, type AnyBulkWriteOperation, type Collection, type Document, type Filter, type UpdateFilter } from 'mongodb';
import { DocumentWriteError } from '../common/mongo.js';
import type { Gate } from './write-gate.js';

export interface FencedUpdate<T extends Document> {
  collection: Collection<T>;
  filter: Filter<T>;
  update: UpdateFilter<T>;
  /**
   * Renews the writer's lock right before the batch is sent, for `extraMs` more than
   * its own ttl (see `statementBoundMs`); false when it is no longer the writer's.
   */
  fence: (extraMs: number) => Promise<boolean>;
}

/**
 * `updated`: applied. `lost`: not sent, the lock was no longer the writer's.
 * `unknown`: sent, and either it matched nothing (a lost race) or the batch cannot
 * say which of its updates did: read again and decide again.
 */
export type FencedOutcome = 'updated' | 'lost' | 'unknown';

export interface FencedUpdatesOptions {
  /** The most updates one command carries. */
  maxDocs: number;
  /** The transitions' lane of the process's write gate: batches take turns there. */
  gate: Gate;
  /**
   * How long the store may take over each update of a command before it starts the
   * next (the store profile's `updateStatementBoundMs`). The update at place `i`
   * of a batch lands at most `i` of these later than one sent alone, so its lock is
   * renewed for that much longer: a write a killed worker had sent still lands
   * before its lock can lapse (record-lock.ts).
   */
  statementBoundMs: number;
}

interface Pending {
  update: FencedUpdate<Document>;
  resolve: (outcome: FencedOutcome) => void;
  reject: (err: unknown) => void;
}

interface Batch {
  collection: Collection;
  pending: Pending[];
}

export class FencedUpdates {
  /** Waiting for its turn at the gate, per collection: it takes updates up to `maxDocs`. */
  private readonly open = new Map<string, Batch>();
  /** Batches sent and the updates they carried, for tests and the benchmark. */
  readonly stats = { batches: 0, updates: 0 };

  constructor(private readonly options: FencedUpdatesOptions) {}

  /** Resolves to the update's outcome; rejects with its own write error or the batch's fault. */
  update<T extends Document>(update: FencedUpdate<T>): Promise<FencedOutcome> {
    const key = `${update.collection.dbName}.${update.collection.collectionName}`;
    let batch = this.open.get(key);
    const fresh = !batch;
    if (!batch) {
      batch = { collection: update.collection as unknown as Collection, pending: [] };
      this.open.set(key, batch);
    }
    const { pending } = batch;
    const outcome = new Promise<FencedOutcome>((resolve, reject) => pending.push({ update: update as unknown as FencedUpdate<Document>, resolve, reject }));
    // Full: it goes as it is when its turn comes; the next update starts another.
    if (pending.length >= this.options.maxDocs) this.open.delete(key);
    if (fresh) {
      const send = () => {
        if (this.open.get(key) === batch) this.open.delete(key);
        return this.send(batch);
      };
      void this.options.gate.run(send);
    }
    return outcome;
  }

  private async send(batch: Batch): Promise<void> {
    const fences = await Promise.all(
      batch.pending.map((p, i) =>
        p.update.fence(i * this.options.statementBoundMs).then(
          (held) => held,
          (err: unknown) => {
            p.reject(err);
            return null;
          },
        ),
      ),
    );
    const going: Pending[] = [];
    batch.pending.forEach((p, i) => {
      if (fences[i] === true) going.push(p);
      else if (fences[i] === false) p.resolve('lost');
    });
    if (going.length === 0) return;
    this.stats.batches++;
    this.stats.updates += going.length;
    const operations: AnyBulkWriteOperation[] = going.map((p) => ({ updateOne: { filter: p.update.filter, update: p.update.update } }));
    try {
      const result = await batch.collection.bulkWrite(operations, { ordered: false });
      const outcome: FencedOutcome = result.matchedCount === going.length ? 'updated' : 'unknown';
      for (const p of going) p.resolve(outcome);
    } catch (err) {
      settleFailedBatch(going, err);
    }
  }
}

/** Per-document write errors fail their own updates only (the rest are `unknown`); anything else fails them all. */
function settleFailedBatch(pending: Pending[], err: unknown): void {
  if (!(err instanceof MongoBulkWriteError) || err.err) {
    for (const p of pending) p.reject(err);
    return;
  }
  const writeErrors = Array.isArray(err.writeErrors) ? err.writeErrors : [err.writeErrors];
  const failed = new Map<number, DocumentWriteError>();
  for (const w of writeErrors) failed.set(w.index, new DocumentWriteError(w.code, w.errmsg ?? `write error ${w.code}`));
  if (failed.size === 0) {
    for (const p of pending) p.reject(err);
    return;
  }
  pending.forEach((p, index) => {
    const own = failed.get(index);
    if (own) p.reject(own);
    else p.resolve('unknown');
  });
}
