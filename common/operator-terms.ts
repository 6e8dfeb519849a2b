/**
 * What an operator itself would refuse of a payment or a payout (DESIGN.md section
 * 10), checked in test mode too, so a merchant who passes in test mode passes in live
 * mode: a country it does not serve, a currency it does not take there, an amount
 * outside its bounds for one payment; live mode's missing account, and MTN's sandbox.
 * The confirm (worker/lifecycle/decide.ts) and the payouts (api/schemas/payouts.ts)
 * share these checks.
 */
import type { ErrorDetail } from './errors.js';
import { formatAmount } from './money.js';
import { catalogEntry, countryOf, currenciesIn, termsFor, termsIn } from './operator-catalog.js';
import { MTN_SANDBOX } from './operator-accounts.js';

/** What is checked: an amount in a currency, of a payment intent or of a payout. */
export interface Money {
  amount: number;
  currency: string;
}

/**
 * What the operator itself would refuse (DESIGN.md section 10), checked in test mode
 * too: a country it does not serve, a currency it does not take there, an amount
 * outside its bounds for one payment. Null when the operator takes the payment.
 */
export function catalogRefusal(doc: Money, operator: string, phone: string, subject = 'PaymentIntent'): ErrorDetail | null {
  const entry = catalogEntry(operator);
  const country = countryOf(phone);
  const served = entry === null || country === null ? [] : termsIn(operator, country.code);
  if (entry === null || country === null || served.length === 0) {
    const where = country === null ? 'the country of this number' : `${country.name} (+${country.callingCode})`;
    const countries = [...new Set(entry?.countries.map((t) => t.country) ?? [])].join(', ');
    return {
      code: 'phone_number_invalid',
      message: `Invalid phone_number: ${operator} does not serve ${where}${countries ? `; it serves ${countries}` : ''}.`,
      param: 'phone_number',
    };
  }
  const terms = termsFor(operator, country.code, doc.currency);
  if (terms === null) {
    return {
      code: 'currency_not_supported',
      message: `${entry.name} does not take ${doc.currency} in ${country.name}; it takes ${currenciesIn(operator, country.code).join(', ')} there. ${subject === 'PaymentIntent' ? "Update the PaymentIntent's currency, or pay with another operator." : `Use that currency, or another operator.`}`,
      param: 'currency',
    };
  }
  if (doc.amount < terms.minAmount) {
    return {
      code: 'amount_too_small',
      message: `Invalid amount: ${formatAmount(doc.amount, doc.currency)} is below ${entry.name}'s minimum in ${country.name}, ${formatAmount(terms.minAmount, doc.currency)}.`,
      param: 'amount',
    };
  }
  if (doc.amount > terms.maxAmount) {
    return {
      code: 'amount_too_large',
      message: `Invalid amount: ${formatAmount(doc.amount, doc.currency)} is above ${entry.name}'s maximum for one payment in ${country.name}, ${formatAmount(terms.maxAmount, doc.currency)}.`,
      param: 'amount',
    };
  }
  return null;
}

/** How a live account of `operator` is configured, for an error's message: the variables, or that no connector exists. */
export function howToConfigure(operator: string): string {
  const group = operator === 'mtn_momo' ? 'MTN_MOMO_*' : operator === 'mpesa' ? 'MPESA_*' : operator === 'wave' ? 'WAVE_* (and WAVE_COUNTRY)' : null;
  return group
    ? `set the ${group} variables for an account that serves it, or add one to OPERATOR_ACCOUNTS_FILE (docs/live-operators.md)`
    : 'this service has no connector for it yet (docs/live-operators.md)';
}

export function notConfigured(operator: string, phone: string): ErrorDetail {
  const country = countryOf(phone);
  const where = country ? `${country.name} (+${country.callingCode})` : 'this number\'s country';
  const how = howToConfigure(operator);
  return {
    code: 'operator_not_configured',
    message: `No live ${operator} account serves ${where}: ${how}.`,
    param: 'operator',
  };
}

/**
 * MTN's sandbox account takes EUR and MTN's test numbers only (DESIGN section 14),
 * whatever the catalog says of real countries.
 */
export function sandboxRefusal(doc: Money, phone: string): ErrorDetail | null {
  if (!MTN_SANDBOX.numbers.test(phone)) {
    return { code: 'phone_number_invalid', message: "Invalid phone_number: MTN's sandbox takes its test numbers only, +46733123450 to +46733123459 and +56733123450 to +56733123459.", param: 'phone_number' };
  }
  if (doc.currency !== MTN_SANDBOX.currency) {
    return { code: 'currency_not_supported', message: `MTN's sandbox takes eur only, not ${doc.currency}. Update the PaymentIntent's currency.`, param: 'currency' };
  }
  if (doc.amount < MTN_SANDBOX.minAmount || doc.amount > MTN_SANDBOX.maxAmount) {
    return { code: doc.amount < MTN_SANDBOX.minAmount ? 'amount_too_small' : 'amount_too_large', message: `Invalid amount: MTN's sandbox takes ${formatAmount(MTN_SANDBOX.minAmount, 'eur')} to ${formatAmount(MTN_SANDBOX.maxAmount, 'eur')}.`, param: 'amount' };
  }
  return null;
}

