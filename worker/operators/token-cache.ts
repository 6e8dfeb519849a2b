/**
 * An operator's OAuth access token (MTN's per product, Daraja's), kept until shortly
 * before it expires.
 *
 * - The token stays in this process's memory only. DESIGN section 5: Redis holds no
 *   secret, and a bearer token is one (it moves money for an hour).
 * - One refresh at a time: within the process, callers share one promise; across
 *   processes, the refresh runs under a short Redis lock (worker/record-lock.ts), so
 *   a fleet of workers that start together asks the operator one after another, not
 *   all at once. Each process still holds its own token: the operators accept several
 *   valid tokens per API user.
 * - A token the operator refuses (401) is dropped by `invalidate`, and the next call
 *   fetches a new one.
 */
import type { Redis } from 'ioredis';
import { withRecordLock } from '../record-lock.js';

export interface IssuedToken {
  token: string;
  /** Lifetime the operator announced, in seconds. */
  expiresInS: number;
}

export interface TokenCacheOptions {
  redis: Redis;
  /** Redis key of the refresh lock; it holds a random holder id, never the token. */
  lockKey: string;
  issue: () => Promise<IssuedToken>;
  now: () => number;
  /** Refresh this long before the announced expiry. */
  marginMs: number;
  /** How long a refresh may wait for another process's. */
  lockWaitMs: number;
}

export class TokenCache {
  private current: { token: string; refreshAtMs: number } | null = null;
  private refreshing: Promise<string> | null = null;

  constructor(private readonly options: TokenCacheOptions) {}

  async get(): Promise<string> {
    if (this.current && this.options.now() < this.current.refreshAtMs) return this.current.token;
    this.refreshing ??= this.refresh().finally(() => {
      this.refreshing = null;
    });
    return this.refreshing;
  }

  /** Asks the operator for a new token (and keeps it): the breaker's probe (common/operator-breaker.ts). */
  async probe(): Promise<void> {
    this.current = null;
    await this.get();
  }

  /** Forgets `token` if it is still the cached one (the operator refused it). */
  invalidate(token: string): void {
    if (this.current?.token === token) this.current = null;
  }

  private async refresh(): Promise<string> {
    const { redis, lockKey, issue, now, marginMs, lockWaitMs } = this.options;
    return withRecordLock(redis, lockKey, async () => {
      const issued = await issue();
      const lifetimeMs = Math.max(0, issued.expiresInS * 1000);
      // A token shorter-lived than the margin is used once, then refreshed.
      this.current = { token: issued.token, refreshAtMs: now() + Math.max(0, lifetimeMs - marginMs) };
      return issued.token;
    }, { ttlMs: 15_000, waitMs: lockWaitMs });
  }
}
