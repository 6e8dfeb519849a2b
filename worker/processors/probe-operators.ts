/**
 * The breakers' probe (DESIGN section 14): every few seconds, one cheap call (a
 * token, a status lookup of nothing) to each live operator account whose breaker is
 * open. The connector's own accounting (worker/operators/registry.ts) closes the
 * breaker on the first answer, so new confirms are taken again; no answer keeps it
 * open. Closed accounts are not called: their own traffic tells.
 */
import type { LiveOperatorsConfig } from '../../common/config.js';
import { breakerState } from '../../common/operator-breaker.js';
import type { Redis } from 'ioredis';
import type { OperatorConnectors } from '../operators/registry.js';

export async function probeOperators(deps: { connectors: OperatorConnectors; redis: Redis; prefix: string; config: Pick<LiveOperatorsConfig, 'breakerFailures'> }): Promise<{ probed: number; closed: number }> {
  let probed = 0;
  let closed = 0;
  for (const account of deps.connectors.accounts) {
    const state = await breakerState(deps.redis, deps.prefix, account.id, deps.config.breakerFailures);
    if (!state.open) continue;
    probed++;
    const connector = deps.connectors.byId(account.id);
    if (!connector) continue;
    try {
      await connector.probe();
      closed++;
    } catch {
      // Still no answer: the breaker stays open until the next probe.
    }
  }
  return { probed, closed };
}
