/**
 * Failed admin and dashboard sign-ins (DESIGN section 20, "Strangers cost little"):
 * each is logged at warn (the address and the surface, never what was tried) and
 * counted in `/metrics` (`admin_auth_failures_total{surface}`); past
 * `FAILURES_PER_MINUTE` failures from one address in a minute, that address gets 429
 * `rate_limit` on the admin API and the dashboard until the minute ends, right or
 * wrong token alike, so the token cannot be guessed at speed. Counted in Redis, so
 * every api process shares the count.
 */
import type { Redis } from 'ioredis';
import { Counter, type Registry } from 'prom-client';
import { errors } from '../common/errors.js';
import type { Logger } from '../common/logger.js';

export const FAILURES_PER_MINUTE = 10;

export class AdminFailures {
  private readonly counter: Counter<'surface'> | null;

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly logger: Logger,
    registry?: Registry,
  ) {
    this.counter = registry
      ? new Counter({ name: 'admin_auth_failures_total', help: 'Failed admin API and dashboard authentications, by surface.', labelNames: ['surface'], registers: [registry] })
      : null;
  }

  /** The address's failures of the minute that began with its first one. */
  private key(address: string): string {
    return `${this.prefix}:admin-failures:${address}`;
  }

  /** Throws 429 while `address` has failed too often within its minute. */
  async refuseIfSlowed(address: string): Promise<void> {
    const key = this.key(address);
    const [count, ttl] = await Promise.all([this.redis.get(key), this.redis.pttl(key)]).catch(() => [null, 0] as const);
    if (Number(count ?? 0) >= FAILURES_PER_MINUTE) throw errors.rateLimit(Math.max(1, Math.ceil(Number(ttl) / 1000)));
  }

  /** Notes one failed authentication. */
  async failed(address: string, surface: 'admin_api' | 'dashboard'): Promise<void> {
    this.counter?.inc({ surface });
    const key = this.key(address);
    const count = await this.redis.incr(key).catch(() => 0);
    if (count === 1) await this.redis.pexpire(key, 60_000).catch(() => undefined);
    this.logger.warn({ address, surface, failures_this_minute: count }, 'admin authentication failed');
  }
}
