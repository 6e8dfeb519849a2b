/**
 * Test mode's payouts (DESIGN.md section 17): the destination number's last three
 * digits decide how a payout ends, as a simulated operator would answer. Pure.
 *
 * | ends | outcome |
 * |---|---|
 * | `000` (and any other) | paid |
 * | `005` | failed, `recipient_not_found` |
 * | `006` | failed, `recipient_limit_exceeded` |
 * | `007` | failed, `recipient_account_blocked` |
 * | `008` | stays `enqueued` for `SIMULATOR_PAYOUT_ENQUEUED_MS` (30 s), then paid |
 * | `009` | failed, `generic_failure` |
 */
import type { PayoutFailureCode } from '../../common/payouts.js';

export type SimulatedPayout = { kind: 'paid'; enqueued: boolean } | { kind: 'failed'; code: PayoutFailureCode };

const FAILURES: Readonly<Record<string, PayoutFailureCode>> = {
  '005': 'recipient_not_found',
  '006': 'recipient_limit_exceeded',
  '007': 'recipient_account_blocked',
  '009': 'generic_failure',
};

/** The outcome of a test-mode payout to `phone` (full or masked: only its last three digits are read). */
export function simulatedPayout(phone: string): SimulatedPayout {
  const suffix = phone.slice(-3);
  const code = FAILURES[suffix];
  if (code) return { kind: 'failed', code };
  return { kind: 'paid', enqueued: suffix === '008' };
}
