/**
 * A payout's callback brings its next look forward (DESIGN.md section 17;
 * api/routes/operator-callbacks.ts): with the poll schedule ten minutes apart, a
 * payout that MTN (its transfer callback) or Daraja (its B2C `Result`) reports done is
 * paid within seconds, though the callback often comes while the step that asked is
 * still running. A callback carries no authority: the look reads the operator's
 * answer. A payout whose callback is dropped waits for its poll.
 */
import test from 'ava';
import type { MtnMomoFake } from '../../fakes/mtn-momo-fake.js';
import type { MpesaFake } from '../../fakes/mpesa-fake.js';
import { mtnReferenceId } from '../../../worker/operators/mtn-momo/wire.js';
import { LivePayouts } from '../../helpers/live-payouts.js';
import { sleep, until, type Service } from '../../helpers/service.js';
import { retrievePayout, waitForPayout } from '../../helpers/payouts.js';

/** The payouts' polls: one look ten minutes after the request, far past any wait here. */
const POLL_SCHEDULE_MS = '600000';

let live: LivePayouts;
let mtn: MtnMomoFake;
let mpesa: MpesaFake;
let service: Service;
let key: string;

const fresh = (callingCode: string) => live.fresh(callingCode);
const payout = (body: Record<string, unknown>) => live.payout(body);

test.before(async () => {
  live = await LivePayouts.start('payout-callbacks', { OPERATOR_POLL_SCHEDULE_MS: POLL_SCHEDULE_MS });
  ({ mtn, mpesa, service, key } = live);
});

test.after.always(() => live?.stop());

test.serial("MTN: the transfer's callback has the payout looked at now, and paid, not at its poll ten minutes on", async (t) => {
  const po = await payout({ amount: 5000, phone_number: fresh('225'), operator: 'mtn_momo' });
  const paid = await waitForPayout(service, key, po.id, 'paid', 30_000);
  t.true(mtn.callbacksSent.includes(mtnReferenceId(`payout:${po.id}`)), 'MTN sent its callback');
  t.is(mtn.paidTo(po.id), 1);
  t.is(typeof paid.arrival_date, 'number');
});

test.serial("M-Pesa: the B2C Result at our ResultURL has the payout looked at now, and paid, not at its poll ten minutes on", async (t) => {
  const po = await payout({ amount: 50_000, currency: 'kes', phone_number: fresh('254'), operator: 'mpesa' });
  await waitForPayout(service, key, po.id, 'paid', 30_000);
  t.is(mpesa.paidFor(po.id), 1);
});

test.serial('MTN: a callback that overtakes the answer to the transfer request, while the step that asked still runs, has the next look taken as soon as that step schedules it', async (t) => {
  mtn.callbackBeforeAnswerMs = 500;
  t.teardown(() => (mtn.callbackBeforeAnswerMs = null));
  const po = await payout({ amount: 3000, phone_number: fresh('225'), operator: 'mtn_momo' });
  await waitForPayout(service, key, po.id, 'paid', 30_000);
  t.is(mtn.paidTo(po.id), 1);
});

test.serial('MTN: with its callback dropped, the payout waits in transit for its poll', async (t) => {
  mtn.dropCallbacks = true;
  t.teardown(() => (mtn.dropCallbacks = false));
  const po = await payout({ amount: 4000, phone_number: fresh('225'), operator: 'mtn_momo' });
  await until('MTN to hold the transfer', () => mtn.transfers.get(mtnReferenceId(`payout:${po.id}`)));
  // What the callback test above is measured against: the same transfer, paid at MTN, with no callback.
  await sleep(5000);
  t.is((await retrievePayout(service, key, po.id)).status, 'in_transit');
  t.is(mtn.paidTo(po.id), 1, 'paid at MTN all the same');
});
