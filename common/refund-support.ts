/**
 * What refunds each operator supports (DESIGN.md section 10: the catalog's
 * `refunds` column). A stand-in until the operator catalog (common/operator-catalog.ts)
 * answers it per operator and country; callers ask this one function, so only its
 * body changes then.
 *
 * - `partial`: any amount up to what remains (MTN MoMo refunds through its
 *   Disbursement product, any amount).
 * - `full`: only the whole payment, once (M-Pesa's Reversal API reverses the whole
 *   transaction; a Wave checkout session is refunded whole).
 * - `none`: no refund API (Orange Money, Airtel Money, Moov Money).
 */
export type RefundSupport = 'partial' | 'full' | 'none';

const SUPPORT: Readonly<Record<string, RefundSupport>> = {
  mtn_momo: 'partial',
  mpesa: 'full',
  wave: 'full',
  orange_money: 'none',
  airtel_money: 'none',
  moov_money: 'none',
};

/** An operator the table does not know (a custom `OPERATORS` catalog) refunds nothing. */
export function refundSupport(operator: string): RefundSupport {
  return Object.hasOwn(SUPPORT, operator) ? (SUPPORT[operator] as RefundSupport) : 'none';
}
