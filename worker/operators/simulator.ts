/**
 * Test mode's operator for refunds: the same interface as a live connector
 * (./connector.ts), answering from the payment's phone number as section 11 says.
 * Like the payment simulator (worker/lifecycle/decide.ts), it keeps no state: what it
 * needs travels in its own reference, and time is read from the refund's id.
 *
 * - `refund` always answers `pending`; the worker asks for the outcome after
 *   `SIMULATOR_PROCESSING_DELAY_MS`.
 * - The payment's number ending `020`: the refund fails, `payer_account_blocked`.
 * - Ending `021`: it stays pending until `SIMULATOR_SLOW_DELAY_MS` (60 s by default)
 *   after the refund was made, then succeeds.
 * - Any other number: it succeeds.
 *
 * The worker gives it the payment's masked number (`+225*******020`): its last three
 * digits are all the simulator reads, and the full number is not kept once the
 * payment ends.
 */
import { idTime } from '../../common/ids.js';
import type { SimulatorConfig } from '../../common/config.js';
import type { OperatorConnector, RefundRequest, RefundResult } from './connector.js';

export const REFUND_FAILS_SUFFIX = '020';
export const REFUND_SLOW_SUFFIX = '021';

/** `sim_<suffix>_<refund id>`: the simulator's reference, which carries what its answers depend on. */
function reference(request: RefundRequest): string {
  const suffix = request.phoneNumber?.slice(-3) ?? '000';
  return `sim_${/^[0-9]{3}$/.test(suffix) ? suffix : '000'}_${request.refundId}`;
}

export function refundSimulator(config: Pick<SimulatorConfig, 'slowDelayMs'>, now: () => number = Date.now): Pick<OperatorConnector, 'refund' | 'refundOutcome'> {
  return {
    async refund(request) {
      return { kind: 'pending', operatorReference: reference(request) };
    },
    async refundOutcome(request, operatorReference): Promise<RefundResult> {
      const refundId = request.refundId;
      const suffix = /^sim_([0-9]{3})_/.exec(operatorReference ?? '')?.[1] ?? '000';
      if (suffix === REFUND_FAILS_SUFFIX) return { kind: 'failed', code: 'payer_account_blocked', operatorCode: 'ACCOUNT_BLOCKED' };
      if (suffix === REFUND_SLOW_SUFFIX && now() < idTime(refundId) + config.slowDelayMs) return { kind: 'pending', ...(operatorReference ? { operatorReference } : {}) };
      return { kind: 'succeeded', ...(operatorReference ? { operatorReference } : {}) };
    },
  };
}
