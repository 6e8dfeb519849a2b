/**
 * Pieces of the idempotency protocol shared by the api (lock, replay) and the worker
 * (durable record, cache of the result). The protocol itself is described in
 * api/middleware/idempotency.ts.
 */
import { createHash, createHmac } from 'node:crypto';
import type { IdempotencyJobInfo, Scope } from './jobs.js';

/** `_id` of the durable record and basis of the job id: one per (project, livemode, key). */
export function scopeHash(scope: Scope, key: string): string {
  return createHash('sha256')
    .update(`${scope.project}\n${scope.livemode ? 'live' : 'test'}\n${key}`)
    .digest('hex');
}

/** BullMQ job ids may not contain `:`; hex and `-` are safe. */
export function idempotentJobId(hash: string): string {
  return `idem-${hash}`;
}

/**
 * JSON with object keys sorted at every level, so that key order and white space do
 * not make two identical requests look different.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(obj[k])}`).join(',')}}`;
}

/** "The same request": same method, same path, same parsed body (see `canonicalRequest`), under the service's key. */
export function requestFingerprint(key: Buffer, method: string, path: string, body: unknown, encoding: 'json' | 'form' = 'json'): string {
  return fingerprintOf(key, canonicalRequest(method, path, body, encoding));
}

/**
 * What the fingerprint hashes: two requests are the same when these strings are
 * equal. The body is compared as parsed, before any coercion, so a form body is
 * marked as one: its strings mean something else than the same strings in JSON
 * (`amount=5` is valid, `{"amount": "5"}` is not), and a replay must never answer
 * a request it does not stand for. A JSON body's string is unchanged by the mark.
 */
export function canonicalRequest(method: string, path: string, body: unknown, encoding: 'json' | 'form' = 'json'): string {
  return `${method.toUpperCase()} ${path}\n${encoding === 'form' ? 'form ' : ''}${canonicalJson(body)}`;
}

/**
 * The fingerprint kept with a key's result (in Redis, in MongoDB, in the job and its
 * published answer): an HMAC under a key of the service's own that Redis never holds
 * (`service_keys`, common/service-keys.ts). A plain hash of a confirm's body gave the
 * payer's full phone number and one-time code back to anyone who read it: few numbers
 * share the masked one's country code and last digits, and 10^7 guesses take seconds.
 */
export function fingerprintOf(key: Buffer, canonical: string): string {
  return createHmac('sha256', key).update(canonical).digest('hex');
}

/** The id of the service key the fingerprints are made with. */
export const FINGERPRINT_KEY_ID = 'idempotency_fingerprint';

/**
 * Whether a recorded fingerprint stands for this request: made under the key's
 * current version, or under another version the api held (a rotation within the
 * key's lifetime: common/service-keys.ts). Fingerprints are compared, never opened,
 * so every version still held must be tried.
 */
export function fingerprintMatches(info: Pick<IdempotencyJobInfo, 'fingerprint' | 'formerFingerprints'>, recorded: string): boolean {
  return recorded === info.fingerprint || (info.formerFingerprints?.includes(recorded) ?? false);
}

export function redisKey(prefix: string, hash: string): string {
  return `${prefix}:idem:${hash}`;
}

/**
 * What Redis holds under `redisKey`: an in-flight lock, or a completed result. A
 * result is kept as the fingerprint and the id of the object it created, never as
 * the response body: the body holds the object's secret, and Redis caches no
 * secret. The api renders the answer again from the stored object.
 */
export type CachedEntry =
  | { s: 'lock'; t: string }
  /** `id`: the object the key created; `exp`: epoch ms when the key expires. */
  | { s: 'done'; fp: string; id: string; status: number; exp: number };

export function encodeDone(fingerprint: string, objectId: string, status: number, expiresAt: number): string {
  return JSON.stringify({ s: 'done', fp: fingerprint, id: objectId, status, exp: expiresAt } satisfies CachedEntry);
}

/** The entry, or null for none, garbage, or a result cached by an older version (which held the body). */
export function decodeEntry(raw: string | null): CachedEntry | null {
  if (raw === null) return null;
  try {
    const parsed = JSON.parse(raw) as CachedEntry;
    if (parsed?.s === 'lock') return parsed;
    return parsed?.s === 'done' && typeof parsed.id === 'string' ? parsed : null;
  } catch {
    return null;
  }
}

/**
 * In a cached entry, in place of an object id: the answer of a mutation, kept in its
 * own durable record (`idempotency_records`, `_id` the scope hash).
 */
export const RECORD_POINTER_PREFIX = 'idr:';

export function recordPointer(scopeHash: string): string {
  return `${RECORD_POINTER_PREFIX}${scopeHash}`;
}
