/**
 * Live payouts through the three connectors' disbursement APIs (DESIGN.md sections 14
 * and 17), black-box against the operators' fakes (test/fakes/): MTN Disbursement
 * `transfer`, Daraja B2C, Wave's Payout API. The balance is funded by live payments
 * the fakes' payers approve. What is checked at the operator: one transfer per payout,
 * whatever answers were lost or throttled; outcomes from the operator's record only;
 * payouts `enqueued` while the account's breaker is open, sent once it closes.
 */
import test from 'ava';
import type { MtnMomoFake } from '../../fakes/mtn-momo-fake.js';
import type { MpesaFake } from '../../fakes/mpesa-fake.js';
import type { WaveFake } from '../../fakes/wave-fake.js';
import { mtnReferenceId } from '../../../worker/operators/mtn-momo/wire.js';
import { LivePayouts } from '../../helpers/live-payouts.js';
import { until, type Service } from '../../helpers/service.js';
import { eventTypesOf, PO, retrievePayout, waitForPayout } from '../../helpers/payouts.js';

const TRANSFER = '/disbursement/v1_0/transfer';

let live: LivePayouts;
let mtn: MtnMomoFake;
let mpesa: MpesaFake;
let wave: WaveFake;
let service: Service;
let key: string;

const fresh = (callingCode: string) => live.fresh(callingCode);
const payout = (body: Record<string, unknown>) => live.payout(body);
const msisdn = (e164: string) => e164.slice(1);

test.before(async () => {
  live = await LivePayouts.start('live-payouts', { OPERATOR_POLL_SCHEDULE_MS: '1000,2000', OPERATOR_TIMEOUT_MS: '2000', OPERATOR_BREAKER_FAILURES: '2', INTENTS_SWEEP_INTERVAL_MS: '2000' });
  ({ mtn, mpesa, wave, service, key } = live);
});

test.after.always(() => live?.stop());

test.serial('MTN: a Disbursement transfer under a reference derived from the payout, paid once; the number only in the request', async (t) => {
  const number = fresh('225');
  const po = await payout({ amount: 5000, phone_number: number, operator: 'mtn_momo' });
  t.true(po.livemode);
  const paid = await waitForPayout(service, key, po.id, 'paid');
  const ref = mtnReferenceId(`payout:${po.id}`);
  const transfer = mtn.transfers.get(ref)!;
  t.like(transfer.body, { amount: '5000', currency: 'XOF', externalId: po.id, payee: { partyIdType: 'MSISDN', partyId: msisdn(number) } });
  t.is(mtn.paidTo(po.id), 1);
  t.is(typeof paid.arrival_date, 'number');
  t.deepEqual(await eventTypesOf(service, key, po.id), ['payout.created', 'payout.paid']);
});

test.serial("MTN: a transfer's lost answer and a throttled retry still make one transfer", async (t) => {
  const dropped = mtn.server.answersDropped;
  mtn.server.dropAnswerNext(1, (r) => r.path === TRANSFER);
  mtn.server.throttleNext(1, 1, (r) => r.path === TRANSFER);
  const po = await payout({ amount: 3000, phone_number: fresh('225'), operator: 'mtn_momo' });
  await waitForPayout(service, key, po.id, 'paid');
  t.is(mtn.server.answersDropped, dropped + 1);
  t.true(mtn.transfersPer(mtnReferenceId(`payout:${po.id}`)) >= 2, 'asked again under the same reference');
  t.is(mtn.paidTo(po.id), 1);
});

test.serial("MTN: the operator's reason, mapped, fails the payout; nothing assumed before MTN's final answer", async (t) => {
  const number = fresh('225');
  mtn.payeeOutcomes.set(msisdn(number), 'PAYEE_NOT_FOUND');
  mtn.holdTransfers = true;
  try {
    const po = await payout({ amount: 2000, phone_number: number, operator: 'mtn_momo' });
    const ref = mtnReferenceId(`payout:${po.id}`);
    await until('MTN to hold the transfer', () => mtn.transfers.get(ref));
    await until('a status look', () => (mtn.server.count('GET', `${TRANSFER}/${ref}`) >= 2 ? true : undefined));
    t.is((await retrievePayout(service, key, po.id)).status, 'in_transit');
    await mtn.settle(ref);
    const failed = await waitForPayout(service, key, po.id, 'failed');
    t.is(failed.failure_code, 'recipient_not_found');
  } finally {
    mtn.holdTransfers = false;
  }
});

test.serial('MTN down: the breaker opens, new payouts are enqueued (and can be canceled), and go out once MTN is back', async (t) => {
  mtn.server.down();
  let up = false;
  try {
    const first = await payout({ amount: 1000, phone_number: fresh('225'), operator: 'mtn_momo' });
    await until('the account to be unavailable', async () => {
      const res = await service.request('GET', '/v1/operators', { key });
      return (res.body.data as Array<{ id: string; status: string }>).find((o) => o.id === 'mtn_momo')?.status === 'unavailable' ? true : undefined;
    }, 60_000);
    const waiting = await payout({ amount: 1000, phone_number: fresh('225'), operator: 'mtn_momo' });
    const dropped = await payout({ amount: 1000, phone_number: fresh('225'), operator: 'mtn_momo' });
    await waitForPayout(service, key, waiting.id, 'enqueued');
    await waitForPayout(service, key, dropped.id, 'enqueued');
    const canceled = await service.request('POST', `${PO}/${dropped.id}/cancel`, { key });
    t.like(canceled.body, { status: 'canceled' });
    mtn.server.up();
    up = true;
    const back = Date.now();
    await waitForPayout(service, key, waiting.id, 'paid', 60_000);
    t.true(Date.now() - back < 60_000, 'sent within a minute of the recovery');
    await waitForPayout(service, key, first.id, 'paid', 60_000);
    t.is(mtn.paidTo(waiting.id), 1);
    t.is(mtn.paidTo(first.id), 1);
    t.is(mtn.transfersPer(mtnReferenceId(`payout:${dropped.id}`)), 0, 'a canceled payout never reached MTN');
  } finally {
    if (!up) mtn.server.up();
  }
});

test.serial("M-Pesa: a B2C request once, its Result at our ResultURL pays it; a lost Result is found through Transaction Status", async (t) => {
  const number = fresh('254');
  const po = await payout({ amount: 50_000, currency: 'kes', phone_number: number, operator: 'mpesa' });
  await waitForPayout(service, key, po.id, 'paid');
  t.is(mpesa.paidFor(po.id), 1);
  const sent = [...mpesa.b2cPayments.values()].find((b) => b.originatorConversationId === po.id)!;
  t.like(sent, { phone: msisdn(number), amount: 500 });

  mpesa.loseB2cResults = true;
  try {
    const lost = await payout({ amount: 20_000, currency: 'kes', phone_number: fresh('254'), operator: 'mpesa' });
    await waitForPayout(service, key, lost.id, 'paid', 90_000);
    t.true(mpesa.transactionStatusQueries >= 1);
    t.is(mpesa.paidFor(lost.id), 1);
  } finally {
    mpesa.loseB2cResults = false;
  }

  const blocked = fresh('254');
  mpesa.b2cOutcomes.set(msisdn(blocked), 2040);
  const failed = await payout({ amount: 20_000, currency: 'kes', phone_number: blocked, operator: 'mpesa' });
  // Daraja's Result comes at once, often before its answer to the request is recorded: it is kept all the same.
  t.is((await waitForPayout(service, key, failed.id, 'failed')).failure_code, 'recipient_not_found');
});

test.serial("Wave: POST /v1/payout under the payout's idempotency-key; a lost answer is asked again under it, paid once; Wave's error mapped", async (t) => {
  const dropped = wave.server.answersDropped;
  wave.server.dropAnswerNext(1, (r) => r.path === '/v1/payout');
  const number = fresh('221');
  const po = await payout({ amount: 2500, phone_number: number, operator: 'wave' });
  await waitForPayout(service, key, po.id, 'paid');
  t.is(wave.server.answersDropped, dropped + 1);
  t.is(wave.paidFor(po.id), 1);
  const requests = wave.server.log.filter((r) => r.path === '/v1/payout');
  t.true(requests.length >= 1 && requests.every((r) => r.headers['idempotency-key'] === po.id));
  t.like([...wave.payouts.values()].find((p) => p.client_reference === po.id), { receive_amount: '2500', currency: 'XOF', mobile: number });

  const blocked = fresh('221');
  wave.payoutErrors.set(blocked, 'blocked-account');
  const failed = await payout({ amount: 2500, phone_number: blocked, operator: 'wave' });
  t.is((await waitForPayout(service, key, failed.id, 'failed')).failure_code, 'recipient_account_blocked');
});
