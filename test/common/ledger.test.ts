/** The ledger's vocabulary (common/ledger.ts) and an operator account's fees (common/operator-accounts.ts). */
import test from 'ava';
import { balanceId, entriesOf, feeOf, NO_FEE } from '../../common/ledger.js';
import { accountOf } from '../../common/operator-accounts.js';

test('a fee is the percent rounded to the unit plus the fixed part, never more than the amount', (t) => {
  t.is(feeOf(10_000, NO_FEE), 0);
  t.is(feeOf(10_000, { percent: 1.5, fixed: 0 }), 150);
  t.is(feeOf(333, { percent: 1.5, fixed: 0 }), 5, '4.995 rounds to 5');
  t.is(feeOf(1000, { percent: 2, fixed: 25 }), 45);
  t.is(feeOf(10, { percent: 0, fixed: 25 }), 10);
});

test("a posting's double entry sums to zero, the balance moving by the net", (t) => {
  for (const [type, amount, fee] of [['payment', 1000, 30], ['refund', -400, 0], ['payout_failure', 700, 0], ['adjustment', -5, 0]] as const) {
    const entries = entriesOf(type, amount, fee);
    t.is(entries.reduce((s, e) => s + e.amount, 0), 0, type);
    t.is(entries.find((e) => e.account === 'available')?.amount, amount - fee);
  }
  t.is(balanceId({ project: 'acme', livemode: true }, 'xof'), 'acme|live|xof');
});

test("an account's fees come from its variables; a malformed one is named", (t) => {
  const vars = (extra: Record<string, string>) => (name: string) => ({ BASE_URL: 'https://w', API_KEY: 'k', WEBHOOK_SECRET: 's', ...extra })[name];
  t.deepEqual(accountOf('wave', vars({}), null, [])?.fees, NO_FEE);
  t.deepEqual(accountOf('wave', vars({ FEE_PERCENT: '1.5', FEE_FIXED: '10' }), null, [])?.fees, { percent: 1.5, fixed: 10 });
  const missing: string[] = [];
  t.is(accountOf('wave', vars({ FEE_PERCENT: '150' }), null, missing), null);
  t.deepEqual(missing, ['WAVE_FEE_PERCENT as a number from 0 to 100']);
});
