/**
 * Amounts as the operators' APIs take them. This service holds amounts in the
 * currency's smallest unit (DESIGN section 10, as Stripe does); MTN and Wave take the
 * major unit as a decimal string, Daraja a whole number of major units. Every
 * conversion comes from the one currency table, the ISO 4217 exponent of
 * common/money.ts (DESIGN section 14, "One currency table"): no connector keeps a
 * list of its own, so `cdf` (two decimals) can never go out 100 times too large.
 */
import { currencyExponent } from '../../common/money.js';

/** The amount in the currency's major unit, as the decimal string MTN and Wave expect ("1500", "12.50", "1.250"). */
export function majorUnits(amount: number, currency: string): string {
  const exponent = currencyExponent(currency);
  if (exponent === 0) return String(amount);
  const scale = 10 ** exponent;
  const whole = Math.floor(amount / scale);
  const fraction = amount % scale;
  return fraction === 0 ? String(whole) : `${whole}.${String(fraction).padStart(exponent, '0')}`;
}

/** The amount as a whole number of major units (Daraja's `Amount`), or null when it has a fraction. */
export function wholeMajorUnits(amount: number, currency: string): number | null {
  const scale = 10 ** currencyExponent(currency);
  return amount % scale === 0 ? amount / scale : null;
}
