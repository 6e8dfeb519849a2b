/**
 * The intents this worker wrote last, kept for its next change of the same intent:
 * a payment's steps follow each other within seconds, each in a job of its own, and
 * each read the intent from MongoDB under its lock (a find by `_id`: a quarter of
 * the store's commands on a payment's path). The intent's token in Redis
 * (common/intent-tokens.ts) says whether a kept copy is still the stored intent:
 *
 * - Every write of an intent replaces its token with its lock's fence, right before
 *   the write; the writer that keeps the intent set the token with its lock's
 *   release, after its write, and keeps the value it set.
 * - The next change of the intent reads the token with its lock's acquisition, in
 *   the same round trip (worker/record-lock.ts, `acquire(read)`). The same value:
 *   no write since, the kept copy is the intent. Another value, or none (expired,
 *   set by an api's reader, lost with Redis): it is read from MongoDB.
 * - A copy is used once (the change keeps its own result), at most `maxAgeMs` after
 *   it was kept, and only in its own scope. All are dropped when the Redis
 *   connection closes: a Redis back from an older snapshot could hold an old token
 *   again (as the endpoint lists are, docs/decisions/0018-kept-endpoint-lists.md).
 * - A change that lost a race (a conditional update that matched nothing, a lock
 *   lost in between) reads MongoDB again: a kept copy only ever saves a first read.
 *
 * docs/decisions/0020-kept-intents-in-workers.md.
 */
import type { PaymentIntentDoc } from '../../common/documents.js';
import type { Scope } from '../../common/jobs.js';

export interface KeptDocsOptions {
  /** Intents kept at most; the oldest dropped first. */
  max: number;
  maxAgeMs: number;
  /** Epoch ms. */
  now: () => number;
}

export const KEPT_DOCS: Omit<KeptDocsOptions, 'now'> = { max: 5_000, maxAgeMs: 30_000 };

interface Entry {
  token: string;
  doc: PaymentIntentDoc;
  at: number;
}

export class KeptIntentDocs {
  private readonly entries = new Map<string, Entry>();
  /** Changes that found their intent kept, and those that read it: for tests and profiles. */
  hits = 0;
  misses = 0;

  constructor(private readonly options: KeptDocsOptions) {}

  /** After a write of `doc` (as stored, without `created_event`), whose release set the intent's token to `token`. */
  keep(doc: PaymentIntentDoc, token: string): void {
    this.entries.delete(doc._id);
    if (this.entries.size >= this.options.max) this.entries.delete(this.entries.keys().next().value as string);
    this.entries.set(doc._id, { token, doc, at: this.options.now() });
  }

  /**
   * The intent as this worker last wrote it, if `token` (read with the intent's lock)
   * is the one its write set; null otherwise. Taken out either way.
   */
  take(id: string, scope: Scope, token: string | null): PaymentIntentDoc | null {
    const entry = this.entries.get(id);
    if (entry) this.entries.delete(id);
    const fresh =
      entry !== undefined &&
      token !== null &&
      entry.token === token &&
      this.options.now() - entry.at <= this.options.maxAgeMs &&
      entry.doc.project === scope.project &&
      entry.doc.livemode === scope.livemode;
    if (fresh) this.hits++;
    else this.misses++;
    return fresh ? entry.doc : null;
  }

  clear(): void {
    this.entries.clear();
  }
}
