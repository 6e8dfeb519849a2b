import type { MpesaConfig } from '../../common/config.js';
import type { ConnectorDeps, OperatorConnector } from './connector.js';

export function mpesaConnector(_config: MpesaConfig, _deps: ConnectorDeps & { now: () => number; timeoutMs: number }): OperatorConnector {
  throw new Error('not yet');
}
