/**
 * Group commit for inserts. What it promises:
 *
 * - Each caller gets its own document's outcome. Documents meeting in the same
 *   window go to MongoDB as one `insertMany({ordered: false})` per collection, so
 *   the database pays one commit for many objects; a document refused for a
 *   duplicate key rejects only its own caller, with an error `isDuplicateKey`
 *   recognises, and the others are stored.
 * - An infrastructure fault (a lost connection, a lock error, anything but a
 *   per-document write error) rejects every caller of the batch, so each job is
 *   retried by BullMQ. Some of the batch may have been stored: a retried job finds
 *   its document through the duplicate key, as after any crash.
 * - A batch is flushed when it holds `maxDocs` documents, or `waitMs` after its
 *   first one arrived, whichever comes first. With `maxDocs` ≤ 1 or `waitMs` 0
 *   every insert goes alone (no batching).
 * - With a write gate (write-gate.ts), a flushed batch waits its turn
 *   there, in the gate's first lane, and documents that arrive meanwhile join it (up
 *   to `maxDocs`): the busier the database, the more each commit carries.
 */
import { MongoBulkWriteError, type Collection } from 'mongodb';
import { DocumentWriteError } from '../common/mongo.js';
import type { WriteGate } from './write-gate.js';

export interface GroupCommitOptions {
  maxDocs: number;
  waitMs: number;
  /** The process's write gate: flushes take turns there with its other writes. */
  gate?: WriteGate;
}

interface Pending {
  doc: unknown;
  resolve: () => void;
  reject: (err: unknown) => void;
}

interface Batch {
  collection: Collection;
  pending: Pending[];
  timer: NodeJS.Timeout | null;
  /** Flushed, waiting for its turn at the gate: it still takes documents, up to `maxDocs`. */
  queued: boolean;
}

export class InsertBatcher {
  private readonly batches = new Map<string, Batch>();
  /** Batches flushed and documents they held, for metrics and the benchmark. */
  readonly stats = { flushes: 0, documents: 0 };

  constructor(private readonly options: GroupCommitOptions) {}

  get enabled(): boolean {
    return this.options.maxDocs > 1 && this.options.waitMs > 0;
  }

  /** Resolves once `doc` is stored; rejects with its duplicate-key error, or the batch's fault. */
  async insert<T extends object>(collection: Collection<T>, doc: T): Promise<void> {
    if (!this.enabled) {
      await collection.insertOne(doc as Parameters<Collection<T>['insertOne']>[0]);
      return;
    }
    const key = `${collection.dbName}.${collection.collectionName}`;
    let batch = this.batches.get(key);
    if (!batch || batch.pending.length >= this.options.maxDocs) {
      batch = { collection: collection as unknown as Collection, pending: [], timer: null, queued: false };
      this.batches.set(key, batch);
    }
    const stored = new Promise<void>((resolve, reject) => batch.pending.push({ doc, resolve, reject }));
    if (batch.queued) return stored;
    if (batch.pending.length >= this.options.maxDocs) {
      this.flush(key);
    } else if (batch.timer === null) {
      batch.timer = setTimeout(() => this.flush(key), this.options.waitMs);
    }
    return stored;
  }

  /**
   * Inserts `docs` as `insert` does, their batch sent at once: for a writer that has
   * all its documents in hand (a ledger round's transactions), which waiting for
   * others would only delay. Each document's promise settles as `insert`'s.
   */
  insertNow<T extends object>(collection: Collection<T>, docs: T[]): Array<Promise<void>> {
    const stored = docs.map((doc) => this.insert(collection, doc));
    if (this.enabled) this.flush(`${collection.dbName}.${collection.collectionName}`);
    return stored;
  }

  /** Sends whatever is waiting now (used at shutdown). */
  flushAll(): void {
    for (const key of [...this.batches.keys()]) this.flush(key);
  }

  private flush(key: string): void {
    const batch = this.batches.get(key);
    if (!batch || batch.pending.length === 0 || batch.queued) return;
    if (batch.timer) clearTimeout(batch.timer);
    batch.timer = null;
    batch.queued = true;
    const send = (): Promise<void> => {
      // Taken at its turn: the documents that joined while it waited go with it.
      if (this.batches.get(key) === batch) this.batches.delete(key);
      const { pending, collection } = batch;
      this.stats.flushes++;
      this.stats.documents += pending.length;
      return collection.insertMany(pending.map((p) => p.doc) as Parameters<Collection['insertMany']>[0], { ordered: false }).then(
        () => {
          for (const p of pending) p.resolve();
        },
        (err: unknown) => settleFailedBatch(pending, err),
      );
    };
    if (this.options.gate) void this.options.gate.run(send, 'first');
    else void send();
  }
}

/** Per-document write errors fail their own documents only; anything else fails them all. */
function settleFailedBatch(pending: Pending[], err: unknown): void {
  if (!(err instanceof MongoBulkWriteError)) {
    for (const p of pending) p.reject(err);
    return;
  }
  const writeErrors = Array.isArray(err.writeErrors) ? err.writeErrors : [err.writeErrors];
  const failed = new Map<number, DocumentWriteError>();
  for (const w of writeErrors) failed.set(w.index, new DocumentWriteError(w.code, w.errmsg ?? `write error ${w.code}`));
  // A batch-wide problem (a write concern error, or errors not tied to documents)
  // leaves each document's fate unknown: retry them all.
  if (failed.size === 0 || err.err) {
    for (const p of pending) p.reject(err);
    return;
  }
  pending.forEach((p, index) => {
    const own = failed.get(index);
    if (own) p.reject(own);
    else p.resolve();
  });
}
