/**
 * One recovery per webhook endpoint at a time, across every api process (security
 * review H2): a recovery holds its endpoint's lock from before its job is enqueued
 * until it is answered; another recovery of the endpoint meanwhile is refused at
 * once with 409 `webhook_recovery_in_progress`, before anything is enqueued. A lock
 * left by a dead api process expires with its lease (the api's whole wait).
 */
import type { Redis } from 'ioredis';

/** KEYS[1] the lock; ARGV[1] its holder. Deletes it only if it is still this holder's. */
const RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

export class WebhookRecoveryLocks {
  constructor(
    private readonly redis: Redis,
    private readonly options: { prefix: string; leaseMs: number },
  ) {}

  private keyOf(endpointId: string): string {
    return `${this.options.prefix}:webhook-recovery:${endpointId}`;
  }

  /** True when taken for `holder` (the request's id); false while another recovery holds it. */
  async take(endpointId: string, holder: string): Promise<boolean> {
    return (await this.redis.set(this.keyOf(endpointId), holder, 'PX', this.options.leaseMs, 'NX')) === 'OK';
  }

  async release(endpointId: string, holder: string): Promise<void> {
    await this.redis.eval(RELEASE, 1, this.keyOf(endpointId), holder);
  }
}
