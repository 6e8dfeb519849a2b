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
import { configuredOperators, type Config } from './config.js';

export type OperatorStatus = 'operational' | 'degraded' | 'unavailable';

/** Live mode: whether `operator`'s connector is configured in this deployment. */
export function liveOperatorConfigured(config: Pick<Config, 'liveOperators'>, operator: string): boolean {
  return configuredOperators(config).includes(operator);
}

/**
 * How an operator's recent live calls went. Not recorded yet: {@link NO_CALLS_RECORDED}
 * says no operator is failing, so a configured operator shows `operational`.
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
