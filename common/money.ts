/**
 * Amounts as people read them (DESIGN.md section 10). An `amount` is an integer in
 * the currency's minor unit, and the ISO 4217 exponent says how many of those make
 * one major unit: none for `xof` (5000 is 5 000 francs), two for `kes` (5000 is
 * 50.00 shillings).
 *
 * The exponents come from the runtime's ICU data (`Intl.NumberFormat`'s
 * `maximumFractionDigits` for a currency), not from a hand-kept list. ICU follows
 * CLDR, which agrees with ISO 4217 for every currency of the operator catalog.
 *
 * The format is fixed, whatever the reader's locale: digits grouped by three with a
 * plain ASCII space (U+0020), a `.` before the minor digits, then the upper-case
 * code: `5 000 XOF`, `1 234.50 KES`. A plain space rather than a narrow no-break one,
 * so that what an SMS, a USSD screen or a terminal shows is what a test compares.
 */

const exponents = new Map<string, number>();

/** ISO 4217 codes the runtime knows, upper case. */
const KNOWN = new Set(Intl.supportedValuesOf('currency'));

/** An ISO 4217 code the runtime knows, in any case: what `currency` takes (and `DEFAULT_CURRENCY`). */
export function isCurrency(code: string): boolean {
  return KNOWN.has(code.toUpperCase());
}

/** Digits after the decimal point of `currency` (any case); 2 for a code the runtime does not know. */
export function currencyExponent(currency: string): number {
  const code = currency.toUpperCase();
  let exponent = exponents.get(code);
  if (exponent === undefined) {
    exponent = KNOWN.has(code)
      ? (new Intl.NumberFormat('en', { style: 'currency', currency: code }).resolvedOptions().maximumFractionDigits ?? 2)
      : 2;
    exponents.set(code, exponent);
  }
  return exponent;
}

/** The thousands separator of {@link formatAmount}: a plain ASCII space. */
export const THOUSANDS_SEPARATOR = ' ';

function groupThousands(digits: string): string {
  return digits.replace(/\B(?=(\d{3})+(?!\d))/g, THOUSANDS_SEPARATOR);
}

/**
 * `amount` (minor units, a safe integer) in `currency`, for a person:
 * `formatAmount(5000, 'xof')` is `5 000 XOF`, `formatAmount(5000, 'kes')` is `50.00 KES`.
 */
export function formatAmount(amount: number, currency: string): string {
  const exponent = currencyExponent(currency);
  const sign = amount < 0 ? '-' : '';
  const digits = String(Math.abs(Math.trunc(amount))).padStart(exponent + 1, '0');
  const major = digits.slice(0, digits.length - exponent);
  const minor = exponent > 0 ? `.${digits.slice(digits.length - exponent)}` : '';
  return `${sign}${groupThousands(major)}${minor} ${currency.toUpperCase()}`;
}

/** `amount` (minor units) as a plain decimal in major units, for files: `decimalAmount(-5050, 'kes')` is `-50.50`. */
export function decimalAmount(amount: number, currency: string): string {
  const exponent = currencyExponent(currency);
  const sign = amount < 0 ? '-' : '';
  const digits = String(Math.abs(Math.trunc(amount))).padStart(exponent + 1, '0');
  return exponent > 0 ? `${sign}${digits.slice(0, -exponent)}.${digits.slice(-exponent)}` : `${sign}${digits}`;
}
