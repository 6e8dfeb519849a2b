import type { WaveConfig } from '../../common/config.js';
import type { ConnectorDeps, OperatorConnector } from './connector.js';

export function waveConnector(_config: WaveConfig, _deps: ConnectorDeps & { now: () => number; timeoutMs: number }): OperatorConnector {
  throw new Error('not yet');
}
