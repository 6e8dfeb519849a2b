import test from 'ava';
import { DEFAULT_OPERATORS } from '../../common/config.js';
import {
  catalogEntry,
  CATALOG_OPERATORS,
  COUNTRIES,
  countryOf,
  OPERATOR_CATALOG,
  predictOperator,
  refundSupport,
  resolveNumber,
  termsFor,
} from '../../common/operator-catalog.js';

test('the catalog lists the six operators, in the default order, each country once per currency', (t) => {
  t.deepEqual([...CATALOG_OPERATORS], ['mtn_momo', 'orange_money', 'moov_money', 'wave', 'airtel_money', 'mpesa']);
  t.deepEqual(DEFAULT_OPERATORS, [...CATALOG_OPERATORS]);
  for (const entry of OPERATOR_CATALOG) {
    const seen = new Set<string>();
    for (const terms of entry.countries) {
      t.true(terms.minAmount >= 1 && terms.minAmount < terms.maxAmount, `${entry.id} ${terms.country}`);
      t.is(terms.callingCode, COUNTRIES.find((c) => c.code === terms.country)?.callingCode ?? '');
      for (const currency of terms.currencies) {
        t.false(seen.has(`${terms.country}/${currency}`), `${entry.id} ${terms.country} ${currency} once`);
        seen.add(`${terms.country}/${currency}`);
      }
    }
  }
});

test('no two networks share a prefix in one country', (t) => {
  for (const country of COUNTRIES) {
    const owners = new Map<string, string>();
    for (const entry of OPERATOR_CATALOG) {
      for (const terms of entry.countries.filter((x) => x.country === country.code)) {
        for (const prefix of terms.prefixes ?? []) {
          for (const [other, owner] of owners) {
            if (owner !== entry.id) t.false(prefix.startsWith(other) || other.startsWith(prefix), `${country.code}: ${prefix} (${entry.id}) and ${other} (${owner})`);
          }
          owners.set(prefix, entry.id);
        }
      }
    }
  }
});

test('helpers: entry, country, terms, refunds, resolution and prediction', (t) => {
  t.is(catalogEntry('mpesa')?.flow, 'phone_approval');
  t.is(catalogEntry('paypal'), null);
  t.is(countryOf('+254722000000')?.code, 'KE');
  t.is(countryOf('+4915100000000'), null);
  t.like(termsFor('mpesa', 'KE', 'KES'), { minAmount: 100, maxAmount: 25_000_000 });
  t.is(termsFor('mpesa', 'KE', 'xof'), null);
  t.is(refundSupport('mtn_momo', 'UG'), 'partial');
  t.is(refundSupport('mpesa', 'KE'), 'full');
  t.is(refundSupport('orange_money', 'CI'), 'none');
  t.is(refundSupport('mpesa', 'CI'), 'none', 'not served there');
  t.deepEqual(resolveNumber('+2250700000000'), { country: COUNTRIES.find((c) => c.code === 'CI'), operator: 'orange_money', candidates: ['orange_money', 'wave'] });
  t.like(resolveNumber('+2250900000000'), { operator: null, candidates: ['mtn_momo', 'orange_money', 'moov_money', 'wave'] });
  t.is(resolveNumber('+2290197000000').operator, 'mtn_momo', "Benin's ten digits");
  t.is(resolveNumber('+2290199000000').operator, 'moov_money');
  t.is(predictOperator('+256772000000', ['airtel_money', 'mtn_momo']), 'mtn_momo');
  t.is(predictOperator('+256702000000', ['mtn_momo', 'airtel_money']), 'airtel_money');
});
