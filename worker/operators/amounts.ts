/**
 * Amounts as the operators' APIs take them. This service holds amounts in the
 * currency's smallest unit (DESIGN section 10, as Stripe does); MTN, Daraja and Wave
 * take the major unit as a decimal string (MTN, Wave) or a whole number (Daraja).
 * Zero-decimal here: XOF, XAF, UGX, RWF, GNF and a few more; the rest (GHS, ZMW,
 * NGN, KES) have two decimals. Daraja takes whole shillings only (`wholeMajorUnits`).
 * The operator catalog (issue 26) will own this table; until then it lives here.
 */
const ZERO_DECIMAL = new Set(['xof', 'xaf', 'ugx', 'rwf', 'gnf', 'bif', 'cdf', 'djf', 'kmf', 'mga']);

/** The amount in the currency's major unit, as the decimal string MTN and Wave expect ("1500", "12.50"). */
export function majorUnits(amount: number, currency: string): string {
  if (ZERO_DECIMAL.has(currency.toLowerCase())) return String(amount);
  const whole = Math.floor(amount / 100);
  const cents = amount % 100;
  return cents === 0 ? String(whole) : `${whole}.${String(cents).padStart(2, '0')}`;
}

/** The amount as a whole number of major units (Daraja's `Amount`), or null when it has a fraction. */
export function wholeMajorUnits(amount: number, currency: string): number | null {
  if (ZERO_DECIMAL.has(currency.toLowerCase())) return amount;
  return amount % 100 === 0 ? amount / 100 : null;
}
