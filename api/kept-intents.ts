/**
 * Payment intents an api process has read, kept for its retrieves
 * (`GET /v1/payment_intents/:id`), which a checkout page or a server waiting for the
 * outcome sends about once a second: on the local stack's store each is a read of the
 * whole document (docs/performance.md), and they grow with the wait. A kept intent is
 * used only while its token in Redis is the one it was read under
 * (common/intent-tokens.ts); every write of the intent replaces the token before and
 * after it, before its job answers.
 *
 * - No token (an intent no one changed for a while, Redis lost its data): one is set,
 *   and the intent read under it; if there is no such intent in the scope, the token
 *   set for it goes again (an id that names nothing leaves no key in Redis).
 * - Redis unreachable: the intent is read from MongoDB, and not kept.
 * - The process's Redis connection closed (a restart, a rollback to an older token):
 *   every kept intent is dropped (`clear`).
 * - An intent is kept `maxAgeMs` at most, whatever the token says, and at most
 *   `maxEntries` of them, the oldest read forgotten first.
 * - Kept by scope and id: another scope's key does not find it here, and is answered
 *   by MongoDB (404).
 */
import type { Redis } from 'ioredis';
import type { PaymentIntentDoc } from '../common/documents.js';
import { freshIntentToken, INTENT_TOKEN_TTL_MS, intentTokenKey } from '../common/intent-tokens.js';
import { isId } from '../common/ids.js';
import type { Scope } from '../common/jobs.js';

const MAX_AGE_MS = 60_000;
const MAX_ENTRIES = 5_000;

export interface KeptIntentsDeps {
  redis: Redis;
  prefix: string;
  now: () => number;
  maxAgeMs?: number;
  maxEntries?: number;
}

interface Kept {
  token: string;
  doc: PaymentIntentDoc;
  readAt: number;
}

export class KeptIntents {
  private readonly kept = new Map<string, Kept>();
  /** Reads from MongoDB since the process started (the tests count them). */
  reads = 0;

  constructor(private readonly deps: KeptIntentsDeps) {}

  /** The intent, kept or read by `read` (which throws the 404 of a missing one). */
  async get(scope: Scope, id: string, read: () => Promise<PaymentIntentDoc>): Promise<PaymentIntentDoc> {
    const name = `${scope.livemode ? 'live' : 'test'}\n${scope.project}\n${id}`;
    const { token, made } = await this.tokenOf(id);
    const kept = this.kept.get(name);
    const now = this.deps.now();
    if (token !== null && kept && kept.token === token && now - kept.readAt < (this.deps.maxAgeMs ?? MAX_AGE_MS)) return kept.doc;
    this.reads++;
    let doc: PaymentIntentDoc;
    try {
      doc = await read();
    } catch (err) {
      // No such intent in this scope: the token made for it goes again, so that
      // reads of ids that name nothing leave no key behind in Redis. (Dropping a token
      // only makes the next read of the intent read it again.)
      if (made) await this.deps.redis.del(intentTokenKey(this.deps.prefix, id)).catch(() => undefined);
      throw err;
    }
    this.kept.delete(name);
    if (token === null) return doc;
    if (this.kept.size >= (this.deps.maxEntries ?? MAX_ENTRIES)) this.kept.delete(this.kept.keys().next().value as string);
    this.kept.set(name, { token, doc, readAt: now });
    return doc;
  }

  /** Forgets every kept intent (the Redis connection closed: its tokens may have gone back). */
  clear(): void {
    this.kept.clear();
  }

  get size(): number {
    return this.kept.size;
  }

  /**
   * The intent's token (set now if there was none: `made`), or null when Redis does
   * not answer or the id is no intent's.
   */
  private async tokenOf(id: string): Promise<{ token: string | null; made: boolean }> {
    if (!isId('payment_intent', id)) return { token: null, made: false };
    const key = intentTokenKey(this.deps.prefix, id);
    try {
      const token = await this.deps.redis.get(key);
      if (token !== null) return { token, made: false };
      const made = (await this.deps.redis.set(key, freshIntentToken(), 'PX', INTENT_TOKEN_TTL_MS, 'NX')) === 'OK';
      return { token: await this.deps.redis.get(key), made };
    } catch {
      return { token: null, made: false };
    }
  }
}
