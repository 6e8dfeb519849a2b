/**
 * Payment intents a process keeps in memory, each under the value its token in Redis
 * had (common/intent-tokens.ts): a kept intent is used only while that token is
 * unchanged. Every write of an intent replaces the token right before the write (the
 * lock's fence) and after it (the lock's release), before its job answers. One class,
 * used two ways:
 *
 * - **An api's retrieves** (`get`, docs/decisions/0019-kept-intents-for-retrieves.md):
 *   `GET /v1/payment_intents/:id`, which a checkout page or a server waiting for the
 *   outcome sends about once a second. The token is read (and set when there is none:
 *   an intent no one changed for a while, Redis lost its data); a kept intent answers
 *   while the token is the one it was read under, else the intent is read under the
 *   token and kept. An id that names no intent in the scope leaves no token behind.
 *   Redis unreachable: the intent is read from MongoDB, and not kept.
 * - **A worker's next change** (`keep`, `take`, docs/decisions/0020-kept-intents-in-workers.md):
 *   the writer keeps the intent under the value its lock's release set; the next
 *   change reads the token with its lock's acquisition (worker/record-lock.ts,
 *   `acquire(read)`) and takes the copy if the value is the same. A copy is taken
 *   once (the change keeps its own result); a change that lost a race reads MongoDB
 *   again: a kept copy only ever saves a first read.
 *
 * Either way an intent is used only in its own scope (another scope's key does not
 * find it, and is answered by MongoDB), at most `maxAgeMs` after it was kept whatever
 * the token says, and at most `maxEntries` are kept, the oldest forgotten first. All
 * are dropped when the Redis connection closes (`clear`): a Redis back from an older
 * snapshot could hold an old token again.
 */
import type { Redis } from 'ioredis';
import type { PaymentIntentDoc } from './documents.js';
import { freshIntentToken, INTENT_TOKEN_TTL_MS, intentTokenKey } from './intent-tokens.js';
import { isId } from './ids.js';
import type { Scope } from './jobs.js';

export interface KeptIntentsOptions {
  redis: Redis;
  prefix: string;
  /** Epoch ms. */
  now: () => number;
  /** How long a kept intent may be used at most, whatever its token says. */
  maxAgeMs: number;
  /** Intents kept at most; the oldest dropped first. */
  maxEntries: number;
}

/** An api's retrieves: polled about once a second while a payment is on its way. */
export const KEPT_FOR_RETRIEVES = { maxAgeMs: 60_000, maxEntries: 5_000 } as const;
/** A worker's next change of an intent: a payment's steps follow each other within seconds. */
export const KEPT_FOR_CHANGES = { maxAgeMs: 30_000, maxEntries: 5_000 } as const;

interface Entry {
  token: string;
  doc: PaymentIntentDoc;
  at: number;
}

export class KeptIntents {
  private readonly entries = new Map<string, Entry>();
  /** Lookups that found their intent kept, and those that read it (for tests and profiles). */
  hits = 0;
  misses = 0;

  constructor(private readonly options: KeptIntentsOptions) {}

  /** Keeps `doc` (as stored) under `token`, the value its token has now. */
  keep(doc: PaymentIntentDoc, token: string): void {
    this.entries.delete(doc._id);
    if (this.entries.size >= this.options.maxEntries) this.entries.delete(this.entries.keys().next().value as string);
    this.entries.set(doc._id, { token, doc, at: this.options.now() });
  }

  /**
   * The intent as kept, if `token` (read with the intent's lock) is the one it was
   * kept under, in `scope` and young enough; null otherwise. Taken out either way.
   */
  take(scope: Scope, id: string, token: string | null): PaymentIntentDoc | null {
    const doc = this.find(scope, id, token);
    this.entries.delete(id);
    if (doc) this.hits++;
    else this.misses++;
    return doc;
  }

  /**
   * The intent, kept or read by `read` (which throws the 404 of a missing one) and
   * kept under its token; read and not kept when Redis does not answer.
   */
  async get(scope: Scope, id: string, read: () => Promise<PaymentIntentDoc>): Promise<PaymentIntentDoc> {
    const { token, made } = await this.tokenOf(id);
    const kept = this.find(scope, id, token);
    if (kept) {
      this.hits++;
      return kept;
    }
    this.misses++;
    let doc: PaymentIntentDoc;
    try {
      doc = await read();
    } catch (err) {
      // No such intent in this scope: the token made for it goes again, so that
      // reads of ids that name nothing leave no key behind in Redis. (Dropping a token
      // only makes the next read of the intent read it again.)
      if (made) await this.options.redis.del(intentTokenKey(this.options.prefix, id)).catch(() => undefined);
      throw err;
    }
    this.entries.delete(id);
    if (token !== null) this.keep(doc, token);
    return doc;
  }

  /** Forgets every kept intent (the Redis connection closed: its tokens may have gone back). */
  clear(): void {
    this.entries.clear();
  }

  get size(): number {
    return this.entries.size;
  }

  private find(scope: Scope, id: string, token: string | null): PaymentIntentDoc | null {
    const entry = this.entries.get(id);
    const fresh =
      entry !== undefined &&
      token !== null &&
      entry.token === token &&
      this.options.now() - entry.at <= this.options.maxAgeMs &&
      entry.doc.project === scope.project &&
      entry.doc.livemode === scope.livemode;
    return fresh ? entry.doc : null;
  }

  /**
   * The intent's token (set now if there was none: `made`), or null when Redis does
   * not answer or the id is no intent's.
   */
  private async tokenOf(id: string): Promise<{ token: string | null; made: boolean }> {
    if (!isId('payment_intent', id)) return { token: null, made: false };
    const key = intentTokenKey(this.options.prefix, id);
    try {
      const token = await this.options.redis.get(key);
      if (token !== null) return { token, made: false };
      const made = (await this.options.redis.set(key, freshIntentToken(), 'PX', INTENT_TOKEN_TTL_MS, 'NX')) === 'OK';
      return { token: await this.options.redis.get(key), made };
    } catch {
      return { token: null, made: false };
    }
  }
}
