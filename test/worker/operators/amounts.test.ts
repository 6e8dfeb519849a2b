/**
 * One currency table (DESIGN section 14): every amount sent to an operator comes from
 * the ISO 4217 exponent of common/money.ts. A test per connector's currencies: each
 * currency the live accounts' operators take in the catalog goes out in its unit.
 */
import test from 'ava';
import { currencyExponent } from '../../../common/money.js';
import { OPERATOR_CATALOG } from '../../../common/operator-catalog.js';
import { majorUnits, wholeMajorUnits } from '../../../worker/operators/amounts.js';

test('two-decimal currencies go out in major units with their cents; zero-decimal ones as they are', (t) => {
  t.is(majorUnits(10_000, 'cdf'), '100', 'CDF has two decimals: 100.00, never 10000');
  t.is(majorUnits(1250, 'ghs'), '12.50');
  t.is(majorUnits(1205, 'kes'), '12.05');
  t.is(majorUnits(5000, 'xof'), '5000');
  t.is(majorUnits(500, 'eur'), '5');
  t.is(wholeMajorUnits(10_000, 'kes'), 100);
  t.is(wholeMajorUnits(10_050, 'kes'), null, 'Daraja takes whole shillings only');
  t.is(wholeMajorUnits(10_000, 'cdf'), 100);
});

test("every currency of MTN MoMo, M-Pesa and Wave goes out by its exponent", (t) => {
  for (const entry of OPERATOR_CATALOG.filter((e) => ['mtn_momo', 'mpesa', 'wave'].includes(e.id))) {
    for (const terms of entry.countries) {
      for (const currency of terms.currencies) {
        const exponent = currencyExponent(currency);
        const amount = terms.minAmount;
        const expected = exponent === 0 ? String(amount) : (amount / 10 ** exponent).toFixed(exponent).replace(/\.0+$/, '');
        t.is(majorUnits(amount, currency), expected, `${entry.id} ${terms.country} ${currency}`);
      }
    }
  }
});
