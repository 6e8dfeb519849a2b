import { canonicalRequest, fingerprintOf, redisKey, scopeHash } from '../../common/idempotency.js';
import type { IdempotencyJobInfo, Scope } from '../../common/jobs.js';

/** A request with an `Idempotency-Key`, described once for every step of the protocol. */
export interface KeyedRequest {
  /** The scope and key as a plain string: the key of the in-memory replays. */
  memoryKey: string;
  /** Method, path, encoding and canonical body: equal strings mean the same request. */
  canonical: string;
  /** Hashes, computed only when asked for (a replay from memory needs none). */
  readonly info: IdempotencyJobInfo;
  readonly redisKey: string;
}

/** The scope and key as a plain string: the key of the in-memory replays. */
export function memoryKeyOf(scope: Scope, key: string): string {
  return `${scope.project}\n${scope.livemode ? 'live' : 'test'}\n${key}`;
}

export function describeKeyedRequest(
  /** `fingerprintKey`: the current version; `formerFingerprintKeys`: the other versions held (a rotation). */
  options: { prefix: string; expiresAt: number; fingerprintKey: Buffer; formerFingerprintKeys?: readonly Buffer[] },
  scope: Scope,
  key: string,
  method: string,
  path: string,
  body: unknown,
  encoding: 'json' | 'form' = 'json',
): KeyedRequest {
  const canonical = canonicalRequest(method, path, body, encoding);
  let info: IdempotencyJobInfo | undefined;
  return {
    memoryKey: memoryKeyOf(scope, key),
    canonical,
    get info() {
      const former = options.formerFingerprintKeys ?? [];
      info ??= {
        scopeHash: scopeHash(scope, key),
        key,
        fingerprint: fingerprintOf(options.fingerprintKey, canonical),
        ...(former.length > 0 ? { formerFingerprints: former.map((k) => fingerprintOf(k, canonical)) } : {}),
        expiresAt: options.expiresAt,
      };
      return info;
    },
    get redisKey() {
      return redisKey(options.prefix, this.info.scopeHash);
    },
  };
}
