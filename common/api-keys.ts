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

/**
 * Revokes a key and pushes the revocation to every api process, which drop it from
 * their caches at once. Returns null when there is no such key.
 */
export async function revokeKey(deps: KeyStoreDeps, redis: Redis | null, prefix: string, id: string): Promise<ApiKeyDoc | null> {
  const c = deps.collections;
  const now = Math.floor(deps.now() / 1000);
  await c.apiKeys.updateOne({ _id: id, revoked_at: null }, { $set: { revoked_at: now } });
  const doc = await c.apiKeys.findOne({ _id: id });
  if (doc && redis) await redis.publish(revocationsChannel(prefix), doc.hash);
  return doc;
}

/**
 * An api process's view of the keys: lookups are cached for a short while, and a
 * revocation published by any process evicts the key everywhere at once.
 */
export class ApiKeyCache {
  private readonly entries = new Map<string, { doc: ApiKeyDoc; until: number }>();

  constructor(
    private readonly c: Collections,
    private readonly ttlMs: number,
    private readonly now: () => number,
  ) {}

  /** The active key for this secret, or null when unknown or revoked. */
  async lookup(secret: string): Promise<ApiKeyDoc | null> {
    if (!looksLikeKey(secret)) return null;
    const hash = hashKey(secret);
    const cached = this.entries.get(hash);
    if (cached && cached.until > this.now()) return cached.doc;
    const doc = await this.c.apiKeys.findOne({ hash });
    if (!doc || doc.revoked_at !== null) {
      this.entries.delete(hash);
      return null;
    }
    if (this.ttlMs > 0) {
      if (this.entries.size > 10_000) this.entries.clear();
      this.entries.set(hash, { doc, until: this.now() + this.ttlMs });
    }
    return doc;
  }

  evict(hash: string): void {
    this.entries.delete(hash);
  }

  /** After a lost subscription nothing can be trusted: revocations may have been missed. */
  clear(): void {
    this.entries.clear();
  }
}
