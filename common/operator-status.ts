/**
 * Whether an operator can take payments now, as `GET /v1/operators` reports it
 * (DESIGN.md section 10): `operational`, `degraded` or `unavailable`.
 *
 * - Test mode: every operator is `operational`; the simulator answers.
 * - Live mode: an operator is `unavailable` until its connector is configured
 *   (section 12: one group of variables per operator, complete), and `degraded`
 *   while most of its recent operator calls failed or timed out.
 *
 * {@link liveOperatorConfigured} answers from the config groups
 * (`configuredOperators`, common/config.ts: every `MTN_MOMO_…` variable set, …), the
 * same test by which the worker's `liveConnectors()` builds a connector: Orange
 * Money, Airtel Money and Moov Money have none and stay `unavailable`.
 */
import type { Redis } from 'ioredis';
import { configuredOperators, type Config } from './config.js';

export type OperatorStatus = 'operational' | 'degraded' | 'unavailable';

/** Live mode: whether `operator`'s connector is configured in this deployment. */
export function liveOperatorConfigured(config: Pick<Config, 'liveOperators'>, operator: string): boolean {
  return configuredOperators(config).includes(operator);
}

/**
 * How an operator's recent live calls went: {@link redisOperatorHealth} reads what the
 * workers' connectors recorded ({@link recordOperatorCall}); {@link NO_CALLS_RECORDED}
 * says no operator is failing.
 */
export interface OperatorHealth {
  /** True when most of `operator`'s recent calls failed or timed out. */
  mostlyFailing(operator: string): Promise<boolean>;
}

export const NO_CALLS_RECORDED: OperatorHealth = { mostlyFailing: async () => false };

export async function operatorStatus(config: Config, operator: string, livemode: boolean, health: OperatorHealth): Promise<OperatorStatus> {
  if (!livemode) return 'operational';
  if (!liveOperatorConfigured(config, operator)) return 'unavailable';
  return (await health.mostlyFailing(operator)) ? 'degraded' : 'operational';
}

/** Minutes of calls that `degraded` looks at, and how many failures it takes at least. */
const HEALTH_WINDOW_MIN = 5;
const HEALTH_MIN_FAILURES = 3;

function healthKey(prefix: string, operator: string, minute: number): string {
  // Hash-tagged by the operator: one pipeline reads its minutes (one slot on a cluster).
  return `${prefix}:operator-health:{${operator}}:${minute}`;
}

/**
 * Counts one live call to `operator` in the current minute: `ok` when the operator
 * answered (whatever it said), not when it gave no answer (a 5xx, a timeout). Only
 * counts: no reference, no body. Best effort: a Redis fault is swallowed.
 */
export async function recordOperatorCall(redis: Redis, prefix: string, operator: string, ok: boolean, nowMs: number): Promise<void> {
  const key = healthKey(prefix, operator, Math.floor(nowMs / 60_000));
  await redis
    .multi()
    .hincrby(key, ok ? 'ok' : 'fail', 1)
    .pexpire(key, (HEALTH_WINDOW_MIN + 1) * 60_000)
    .exec()
    .catch(() => undefined);
}

/** `degraded` when, over the last few minutes, most calls got no answer (and at least a few did). */
export function redisOperatorHealth(redis: Redis, prefix: string, now: () => number): OperatorHealth {
  return {
    async mostlyFailing(operator: string): Promise<boolean> {
      const minute = Math.floor(now() / 60_000);
      const pipeline = redis.pipeline();
      for (let m = minute - HEALTH_WINDOW_MIN + 1; m <= minute; m++) pipeline.hmget(healthKey(prefix, operator, m), 'ok', 'fail');
      const replies = (await pipeline.exec().catch(() => null)) ?? [];
      let ok = 0;
      let fail = 0;
      for (const [err, value] of replies) {
        if (err || !Array.isArray(value)) continue;
        ok += Number(value[0] ?? 0);
        fail += Number(value[1] ?? 0);
      }
      return fail >= HEALTH_MIN_FAILURES && fail > ok;
    },
  };
}
