import test from 'ava';
import { currencyExponent, formatAmount, THOUSANDS_SEPARATOR } from '../../common/money.js';

test('exponents come from ISO 4217 as the runtime knows it', (t) => {
  for (const code of ['xof', 'xaf', 'rwf', 'ugx', 'gnf']) t.is(currencyExponent(code), 0, code);
  for (const code of ['kes', 'ghs', 'zmw', 'usd', 'ngn', 'cdf', 'tzs']) t.is(currencyExponent(code), 2, code);
  t.is(currencyExponent('BHD'), 3, 'three decimals, any case');
});

test('amounts read in major units, grouped by three with a plain ASCII space', (t) => {
  t.is(THOUSANDS_SEPARATOR, '\u0020');
  t.is(formatAmount(5000, 'xof'), '5 000 XOF');
  t.is(formatAmount(5000, 'kes'), '50.00 KES');
  t.is(formatAmount(5, 'kes'), '0.05 KES');
  t.is(formatAmount(999, 'xof'), '999 XOF');
  t.is(formatAmount(123_456_789, 'kes'), '1 234 567.89 KES');
  t.is(formatAmount(999_999_999_999, 'ugx'), '999 999 999 999 UGX');
  t.is(formatAmount(1500, 'bhd'), '1.500 BHD');
});
