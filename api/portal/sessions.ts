/**
 * The portal's sessions (DESIGN section 18), in Redis. The browser holds a random
 * token in an `HttpOnly`, `SameSite=Strict` cookie; Redis holds, under the token's
 * SHA-256 only, the session: the key's id, project and mode, the CSRF token, and the
 * secret key sealed (common/seal.ts) under a key of the service's own that Redis
 * never holds, bound to the token's hash. So neither the cookie alone nor Redis alone
 * gives the key: Redis holds no secret. Sign-out deletes the session; a session lives
 * `SESSION_TTL_S` from its sign-in at most.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Seal } from '../../common/seal.js';

export const SESSION_TTL_S = 8 * 3600;
export const SESSION_COOKIE = 'portal_session';

export interface Session {
  /** The key's id, project and mode: what the pages show. */
  keyId: string;
  project: string;
  livemode: boolean;
  csrf: string;
  /** The secret key, opened from its seal: what the portal calls `/v1` with. */
  secret: string;
}

interface Stored {
  keyId: string;
  project: string;
  livemode: boolean;
  csrf: string;
  sealed: string;
}

const hashOf = (token: string) => createHash('sha256').update(token).digest('hex');

/** Equal strings, in time independent of where they differ. */
export function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

export class PortalSessions {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly seal: Seal,
  ) {}

  private redisKey(hash: string): string {
    return `${this.prefix}:portal:session:${hash}`;
  }

  /** A new session; returns the cookie's token. */
  async create(key: { keyId: string; project: string; livemode: boolean; secret: string }): Promise<string> {
    const token = randomBytes(32).toString('base64url');
    const hash = hashOf(token);
    await this.write(hash, { ...key, csrf: randomBytes(24).toString('base64url') }, SESSION_TTL_S);
    return token;
  }

  private async write(hash: string, session: Omit<Session, never>, ttlS: number): Promise<void> {
    const stored: Stored = {
      keyId: session.keyId,
      project: session.project,
      livemode: session.livemode,
      csrf: session.csrf,
      sealed: await this.seal.seal(`portal-session:${hash}`, session.secret),
    };
    await this.redis.set(this.redisKey(hash), JSON.stringify(stored), 'EX', Math.max(1, ttlS));
  }

  /** The session of a cookie's token, or null (unknown, ended, expired, or not opening). */
  async get(token: string | undefined): Promise<Session | null> {
    if (!token || !/^[A-Za-z0-9_-]{43}$/.test(token)) return null;
    const hash = hashOf(token);
    const raw = await this.redis.get(this.redisKey(hash));
    if (raw === null) return null;
    const stored = JSON.parse(raw) as Stored;
    try {
      const secret = await this.seal.open(`portal-session:${hash}`, stored.sealed);
      return { keyId: stored.keyId, project: stored.project, livemode: stored.livemode, csrf: stored.csrf, secret };
    } catch {
      return null;
    }
  }

  /** The session now signs its calls with another key of its scope (after a roll of its own key); its lifetime is unchanged. */
  async replaceKey(token: string, key: { keyId: string; secret: string }): Promise<void> {
    const session = await this.get(token);
    if (!session) return;
    const hash = hashOf(token);
    const ttl = await this.redis.ttl(this.redisKey(hash));
    await this.write(hash, { ...session, ...key }, ttl);
  }

  async destroy(token: string | undefined): Promise<void> {
    if (!token) return;
    await this.redis.del(this.redisKey(hashOf(token)));
  }
}
