/**
 * API keys: issued to a project and a mode, stored as SHA-256 hashes only. The
 * secret exists in plain text in exactly one place: the response that issues it.
 */
import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { randomBase62, type IdGenerator } from './ids.js';
import { revocationsChannel } from './jobs.js';
import type { ApiKeyDoc } from './documents.js';
import type { Collections } from './mongo.js';

export const PROJECT_PATTERN = /^[a-z0-9][a-z0-9_-]{0,62}$/;
const KEY_PATTERN = /^sk_(test|live)_[0-9A-Za-z]{32,}$/;

export function hashKey(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

/** Cheap shape check before any lookup; a key of the wrong shape cannot exist. */
export function looksLikeKey(secret: string): boolean {
  return KEY_PATTERN.test(secret);
}

/** What issuing and revoking need: the collections, an id generator and a clock (epoch ms). */
export interface KeyStoreDeps {
  collections: Collections;
  ids: IdGenerator;
  now: () => number;
}

export async function issueKey(
  deps: KeyStoreDeps,
  project: string,
  livemode: boolean,
): Promise<{ doc: ApiKeyDoc; secret: string }> {
  const secret = `sk_${livemode ? 'live' : 'test'}_${randomBase62(40)}`;
  const doc: ApiKeyDoc = {
    _id: deps.ids.next('api_key'),
    project,
    livemode,
    hash: hashKey(secret),
    last4: secret.slice(-4),
    created: Math.floor(deps.now() / 1000),
    revoked_at: null,
  };
  await deps.collections.apiKeys.insertOne(doc);
  return { doc, secret };
}

export async function listKeys(c: Collections, project: string): Promise<ApiKeyDoc[]> {
  return c.apiKeys.find({ project }).sort({ _id: -1 }).toArray();
}

/** A revoked key, and whether the revocation reached the other api processes. */
export interface Revocation {
  doc: ApiKeyDoc;
  /**
   * False when there was no Redis to publish on, or publishing failed: the other api
   * processes then drop the key when their cache entry expires (`API_KEY_CACHE_MS`)
   * or when their subscription comes back, whichever is first.
   */
  pushed: boolean;
}

/**
 * Revokes a key, evicts it from the caller's own cache (`evictLocally`) and then
 * pushes the revocation to every api process, which drop it from their caches at
 * once. The local eviction comes first so that a failed push cannot leave the
 * caller itself accepting the key. Returns null when there is no such key.
 */
export async function revokeKey(
  deps: KeyStoreDeps,
  redis: Redis | null,
  prefix: string,
  id: string,
  evictLocally?: (hash: string) => void,
): Promise<Revocation | null> {
  const c = deps.collections;
  const now = Math.floor(deps.now() / 1000);
  await c.apiKeys.updateOne({ _id: id, revoked_at: null }, { $set: { revoked_at: now } });
  const doc = await c.apiKeys.findOne({ _id: id });
  if (!doc) return null;
  evictLocally?.(doc.hash);
  if (!redis) return { doc, pushed: false };
  const pushed = await redis.publish(revocationsChannel(prefix), doc.hash).then(
    () => true,
    () => false,
  );
  return { doc, pushed };
}

/** Bound of each of the cache's two maps; past it the oldest entries go. */
const MAX_ENTRIES = 10_000;

/**
 * An api process's view of the keys: lookups are cached for a short while, and a
 * revocation published by any process evicts the key everywhere at once. Unknown
 * keys are remembered too, briefly (`negativeTtlMs`), so that a client repeating a
 * garbage key costs no MongoDB query each time.
 *
 * A revocation may arrive while a lookup of the same key is reading MongoDB; that
 * read may predate the revocation. So every eviction bumps a generation, and a
 * lookup caches what it read only if no eviction happened meanwhile.
 *
 * Lookups of one key at the same moment share one read, if it began after the
 * last eviction: after a restart, or once the cache was cleared, a burst of
 * requests with one key costs one query, not one each (each may be a scan,
 * docs/storage.md: a chaos run counted 1,600 of them in 40 s, at 1.4 s each behind
 * one another).
 */
export class ApiKeyCache {
  private readonly known = new Map<string, { doc: ApiKeyDoc; until: number }>();
  private readonly unknown = new Map<string, number>();
  private generation = 0;
  private readonly reading = new Map<string, { generation: number; doc: Promise<ApiKeyDoc | null> }>();

  constructor(
    private readonly c: Collections,
    private readonly ttlMs: number,
    private readonly now: () => number,
    private readonly negativeTtlMs = 0,
  ) {}

  /** The active key for this secret, or null when unknown or revoked. */
  async lookup(secret: string): Promise<ApiKeyDoc | null> {
    if (!looksLikeKey(secret)) return null;
    const hash = hashKey(secret);
    const now = this.now();
    const cached = this.known.get(hash);
    if (cached && cached.until > now) return cached.doc;
    const unknownUntil = this.unknown.get(hash);
    if (unknownUntil !== undefined && unknownUntil > now) return null;
    const shared = this.reading.get(hash);
    if (shared && shared.generation === this.generation) return shared.doc;
    const generation = this.generation;
    const doc = this.c.apiKeys.findOne({ hash }).then((found) => {
      const active = found && found.revoked_at === null ? found : null;
      if (generation === this.generation) this.remember(hash, active);
      return active;
    });
    const read = { generation, doc };
    this.reading.set(hash, read);
    const done = () => {
      if (this.reading.get(hash) === read) this.reading.delete(hash);
    };
    doc.then(done, done);
    return doc;
  }

  evict(hash: string): void {
    this.generation++;
    this.known.delete(hash);
  }

  /** After a lost subscription nothing can be trusted: revocations may have been missed. */
  clear(): void {
    this.generation++;
    this.known.clear();
    this.unknown.clear();
  }

  private remember(hash: string, doc: ApiKeyDoc | null): void {
    const now = this.now();
    if (doc) {
      this.unknown.delete(hash);
      if (this.ttlMs > 0) keepBounded(this.known, hash, { doc, until: now + this.ttlMs });
      return;
    }
    this.known.delete(hash);
    if (this.negativeTtlMs > 0) keepBounded(this.unknown, hash, now + this.negativeTtlMs);
  }
}

/** Sets `key`, dropping the oldest entry first when the map is full. */
function keepBounded<V>(map: Map<string, V>, key: string, value: V): void {
  map.delete(key);
  if (map.size >= MAX_ENTRIES) map.delete(map.keys().next().value as string);
  map.set(key, value);
}
