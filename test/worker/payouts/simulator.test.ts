import test from 'ava';
import { simulatedPayout } from '../../../worker/payouts/simulator.js';
import { mtnPayoutFailure } from '../../../worker/operators/mtn-momo/wire.js';
import { wavePayoutOutcome } from '../../../worker/operators/wave/wire.js';

test("test mode: a payout's last three digits decide its end, masked or not", (t) => {
  t.deepEqual(simulatedPayout('+2250500000000'), { kind: 'paid', enqueued: false });
  t.deepEqual(simulatedPayout('+2250500000123'), { kind: 'paid', enqueued: false });
  t.deepEqual(simulatedPayout('+22505*****008'), { kind: 'paid', enqueued: true });
  t.deepEqual(simulatedPayout('+2250500000005'), { kind: 'failed', code: 'recipient_not_found' });
  t.deepEqual(simulatedPayout('+2250500000006'), { kind: 'failed', code: 'recipient_limit_exceeded' });
  t.deepEqual(simulatedPayout('+2250500000007'), { kind: 'failed', code: 'recipient_account_blocked' });
  t.deepEqual(simulatedPayout('+2250500000009'), { kind: 'failed', code: 'generic_failure' });
});

test("MTN: a transfer's reason, a string or {code, message}, maps to a payout failure; unknown ones are generic", (t) => {
  t.deepEqual(mtnPayoutFailure('PAYEE_NOT_FOUND'), { code: 'recipient_not_found', operatorCode: 'PAYEE_NOT_FOUND' });
  t.deepEqual(mtnPayoutFailure({ code: 'NOT_ENOUGH_FUNDS', message: 'x' }), { code: 'balance_insufficient', operatorCode: 'NOT_ENOUGH_FUNDS' });
  t.deepEqual(mtnPayoutFailure('SOMETHING_NEW'), { code: 'generic_failure', operatorCode: 'SOMETHING_NEW' });
  t.deepEqual(mtnPayoutFailure(undefined), { code: 'generic_failure' });
});

test("Wave: a payout's status reads as paid, pending or failed by its error code", (t) => {
  t.deepEqual(wavePayoutOutcome({ id: 'pt-1', status: 'succeeded' }), { kind: 'paid', operatorReference: 'pt-1' });
  t.deepEqual(wavePayoutOutcome({ id: 'pt-1', status: 'processing' }), { kind: 'pending', operatorReference: 'pt-1' });
  t.deepEqual(wavePayoutOutcome({ id: 'pt-1', status: 'failed', payout_error: { error_code: 'blocked-account' } }), { kind: 'failed', code: 'recipient_account_blocked', operatorCode: 'blocked-account' });
  t.deepEqual(wavePayoutOutcome({ id: 'pt-1', status: 'reversed' }), { kind: 'failed', code: 'generic_failure', operatorCode: 'reversed' });
});
