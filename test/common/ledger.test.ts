/** The ledger's vocabulary (common/ledger.ts) and an operator account's fees (common/operator-accounts.ts). */
import test from 'ava';
import type { BalanceTransactionDoc } from '../../common/documents.js';
import { balanceId, entriesOf, feeOf, NO_FEE, tailEntry, tailTransactions } from '../../common/ledger.js';
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

test("a balance's tail keeps each transaction as a string and gives it back whole; a tail of whole documents reads as it is", (t) => {
  const scope = { project: 'acme', livemode: true, currency: 'xof' };
  const txn: BalanceTransactionDoc = {
    _id: 'txn_1', ...scope, key: 'payment:pi_1', type: 'payment', amount: 1000, fee: 30, net: 970, source: 'pi_1', operator: 'wave',
    description: 'Order, "42"', created: 1_700_000_000, created_ms: 1_700_000_000_123, seq: 7, balance_after: 5970, entries: entriesOf('payment', 1000, 30),
  };
  const refund: BalanceTransactionDoc = { ...txn, _id: 'txn_2', key: 'refund:re_1:held', type: 'refund', amount: -400, fee: 0, net: -400, source: 're_1', operator: null, description: null, seq: 8, balance_after: 5570, entries: entriesOf('refund', -400, 0) };
  const entries = [tailEntry(txn), tailEntry(refund)];
  t.true(entries.every((e) => typeof e === 'string' && !e.includes('acme')), 'the balance says the scope once');
  t.deepEqual(tailTransactions({ ...scope, tail: entries }), [txn, refund]);
  t.deepEqual(tailTransactions({ ...scope, tail: [txn, entries[1]!] }), [txn, refund]);
});
