/**
 * A breaker per live operator account (DESIGN section 14, "Faults are retried on a
 * schedule, with a breaker"). The workers' connectors count each call's fate: an
 * answer closes the breaker, no answer (a timeout, a refused or broken connection, a
 * 5xx) counts one failure in a row; `OPERATOR_BREAKER_FAILURES` in a row open it.
 * While it is open:
 *
 * - the account is `unavailable` in `GET /v1/operators`;
 * - a new confirm through it is answered 503 `operator_unavailable` with
 *   `Retry-After` by the api, before anything is enqueued (the intent is unchanged);
 * - the attempts already in flight keep their checks on the poll schedule, and the
 *   worker probes the account (a token call) every few seconds; the first answer,
 *   probe or check, closes it.
 *
 * Throttling (a 429) is not counted: the operator answered, and asked us to slow down.
 *
 * State: one Redis hash per account (`fails`, `opened_ms`), no secret in it. Redis
 * losing it closes the breaker: the next calls count again.
 */
import type { Redis } from 'ioredis';

export interface BreakerState {
  open: boolean;
  failures: number;
  /** When it opened (epoch ms), while open. */
  openedMs: number | null;
}

/** How long a refused confirm is told to wait (`Retry-After`), and how often the worker probes an open account. */
export const BREAKER_PROBE_MS = 5_000;

function breakerKey(prefix: string, account: string): string {
  return `${prefix}:operator-breaker:${account}`;
}

/** A call through `account` was answered: the breaker closes (best effort). */
export async function breakerSuccess(redis: Redis, prefix: string, account: string): Promise<void> {
  await redis.del(breakerKey(prefix, account)).catch(() => undefined);
}

/** A call through `account` got no answer: one more failure in a row; opens at `threshold`. Returns whether it is open. */
export async function breakerFailure(redis: Redis, prefix: string, account: string, threshold: number, nowMs: number): Promise<boolean> {
  const key = breakerKey(prefix, account);
  try {
    const failures = await redis.hincrby(key, 'fails', 1);
    if (failures >= threshold) await redis.hsetnx(key, 'opened_ms', String(nowMs));
    await redis.pexpire(key, 24 * 3600_000);
    return failures >= threshold;
  } catch {
    return false;
  }
}

export async function breakerState(redis: Redis, prefix: string, account: string, threshold: number): Promise<BreakerState> {
  const [fails, opened] = await redis.hmget(breakerKey(prefix, account), 'fails', 'opened_ms');
  const failures = Number(fails ?? 0);
  const open = failures >= threshold;
  return { open, failures, openedMs: open && opened ? Number(opened) : null };
}
