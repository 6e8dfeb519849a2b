/**
 * Whether an operator can take payments now, as `GET /v1/operators` reports it
 * (DESIGN.md section 10): `operational`, `degraded` or `unavailable`.
 *
 * - Test mode: every operator is `operational`; the simulator answers.
 * - Live mode: an operator is `unavailable` until its connector is configured
 *   (section 12: one group of variables per operator, complete), and `degraded`
 *   while most of its recent operator calls failed or timed out.
 *
 * No connector ships yet (worker/operators/connector.ts, `liveConnectors()`), so
 * {@link liveOperatorConfigured} answers false for every operator. When connectors
 * arrive, it is the one place that decides from the config groups (e.g. every
 * `MTN_MOMO_…` variable set), and the worker's `liveConnectors()` builds a
 * connector for exactly those operators.
 */
import type { Config } from './config.js';

export type OperatorStatus = 'operational' | 'degraded' | 'unavailable';

/** Live mode: whether `operator`'s connector is configured in this deployment. None is yet. */
export function liveOperatorConfigured(_config: Config, _operator: string): boolean {
  return false;
}

/**
 * How an operator's recent live calls went. A connector records its calls and their
 * outcomes; until one exists there are no live calls, and {@link NO_CALLS_RECORDED}
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
