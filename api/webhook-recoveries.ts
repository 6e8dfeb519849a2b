/**
 * One recovery per webhook endpoint at a time, across every api process (security
 * review H2): a recovery holds its endpoint's lock from before its job is enqueued
 * until it is answered; another recovery of the endpoint meanwhile is refused at
 * once with 409 `webhook_recovery_in_progress`, before anything is enqueued. A lock
 * left by a dead api process expires with its lease (the api's whole wait).
 */
import type { Redis } from 'ioredis';
import { TokenLock } from '../common/redis-lock.js';

/** The recovery locks of endpoints: the service's one Redis lock (common/redis-lock.ts), taken in one try. */
export class WebhookRecoveryLocks {
  constructor(
    private readonly redis: Redis,
    private readonly options: { prefix: string; leaseMs: number },
  ) {}

  private keyOf(endpointId: string): string {
    return `${this.options.prefix}:webhook-recovery:${endpointId}`;
  }

  /** The lock, taken for `holder` (the request's id); null while another recovery holds it. Freed with its `release`. */
  async take(endpointId: string, holder: string): Promise<TokenLock | null> {
    const lock = new TokenLock(this.redis, this.keyOf(endpointId), { ttlMs: this.options.leaseMs, waitMs: 0, heartbeat: false, value: () => holder });
    return (await lock.tryAcquire()).taken ? lock : null;
  }
}
