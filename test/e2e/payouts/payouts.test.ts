/**
 * Payouts in test mode, black-box (DESIGN.md section 17): created from a funded
 * balance, checked as a confirm is, held and released, decided by the destination's
 * last three digits, canceled while enqueued, listed, and made in batches.
 */
import test from 'ava';
import { mapLimit } from '../../helpers/payment-intent-lifecycle.js';
import {
  createPayout,
  eventTypesOf,
  fund,
  listAllPayouts,
  payee,
  PO,
  POB,
  retrieveBatch,
  waitForPayout,
  type Payout,
  type PayoutBatch,
} from '../../helpers/payouts.js';
import { until } from '../../helpers/service.js';
import { useService } from '../../helpers/use-service.js';

const e2e = useService(test, {
  workers: 1,
  // 008 stays enqueued long enough to be canceled whatever the machine's load.
  env: { SIMULATOR_APPROVAL_DELAY_MS: '100', SIMULATOR_PROCESSING_DELAY_MS: '200', SIMULATOR_PAYOUT_ENQUEUED_MS: '600000' },
});

test('a payout to a number ending 000 is pending at once, then paid; its number masked, its events created then paid', async (t) => {
  const key = await e2e.key('paid');
  await fund(e2e.service, key, 20_000);
  const res = await createPayout(e2e.service, key, { amount: 5000, phone_number: payee('000'), description: 'June wages', metadata: { employee: '42' } });
  t.is(res.status, 200, res.text);
  const po = res.body as Payout;
  t.like(po, { object: 'payout', amount: 5000, currency: 'xof', operator: 'mtn_momo', status: 'pending', failure_code: null, batch: null, arrival_date: null, livemode: false });
  t.deepEqual(po.metadata, { employee: '42' });
  t.regex(po.id, /^po_/);
  t.false(res.text.includes(payee('000')), 'the full number is never shown');
  t.regex(po.destination.phone_number, /\*/);
  const paid = await waitForPayout(e2e.service, key, po.id, 'paid');
  t.true(typeof paid.arrival_date === 'number' && paid.arrival_date >= po.created);
  await until('its events', async () => ((await eventTypesOf(e2e.service, key, po.id)).length === 2 ? true : undefined));
  t.deepEqual(await eventTypesOf(e2e.service, key, po.id), ['payout.created', 'payout.paid']);
});

test('the last three digits decide each failure, with its message; every failed hold is released', async (t) => {
  const key = await e2e.key('failures');
  await fund(e2e.service, key, 20_000);
  const cases = { '005': 'recipient_not_found', '006': 'recipient_limit_exceeded', '007': 'recipient_account_blocked', '009': 'generic_failure' } as const;
  const made = await Promise.all(
    Object.keys(cases).map(async (suffix, i) => {
      const res = await createPayout(e2e.service, key, { amount: 5000, phone_number: payee(suffix, i) });
      t.is(res.status, 200, res.text);
      return { suffix: suffix as keyof typeof cases, id: (res.body as Payout).id };
    }),
  );
  // The four hold the whole balance: nothing more can go out meanwhile.
  const short = await createPayout(e2e.service, key, { amount: 100, phone_number: payee('000', 9) });
  t.is(short.status, 400, short.text);
  t.like(short.body.error, { type: 'invalid_request_error', code: 'balance_insufficient', param: 'amount' });
  for (const { suffix, id } of made) {
    const failed = await waitForPayout(e2e.service, key, id, 'failed');
    t.is(failed.failure_code, cases[suffix]);
    t.is(typeof failed.failure_message, 'string');
    t.is(failed.arrival_date, null);
    await until(`${id}'s failed event`, async () => ((await eventTypesOf(e2e.service, key, id)).includes('payout.failed') ? true : undefined));
  }
  // Released: the whole balance can go out again, and not a unit more.
  const whole = await createPayout(e2e.service, key, { amount: 20_000, phone_number: payee('000', 8) });
  t.is(whole.status, 200, whole.text);
  const more = await createPayout(e2e.service, key, { amount: 100, phone_number: payee('000', 7) });
  t.is(more.body.error?.code, 'balance_insufficient', more.text);
});

test('short of balance: 400 balance_insufficient, nothing created', async (t) => {
  const key = await e2e.key('empty');
  const res = await createPayout(e2e.service, key, { amount: 5000, phone_number: payee('000') });
  t.is(res.status, 400, res.text);
  t.like(res.body.error, { code: 'balance_insufficient', param: 'amount' });
  t.deepEqual(await listAllPayouts(e2e.service, key), []);
});

test('checked as a confirm is: number, country, currency, bounds; nothing created', async (t) => {
  const key = await e2e.key('checks');
  await fund(e2e.service, key, 5000);
  const refusals: Array<[Record<string, unknown>, string, string]> = [
    [{ amount: 5000, phone_number: '0700' }, 'phone_number_invalid', 'phone_number'],
    [{ amount: 5000, phone_number: payee('000'), operator: 'mpesa', currency: 'kes' }, 'phone_number_invalid', 'phone_number'],
    [{ amount: 5000, phone_number: payee('000'), currency: 'kes' }, 'currency_not_supported', 'currency'],
    [{ amount: 50, phone_number: payee('000') }, 'amount_too_small', 'amount'],
    [{ amount: 2_000_000, phone_number: payee('000') }, 'amount_too_large', 'amount'],
    [{ amount: '5000', phone_number: payee('000') }, 'parameter_invalid_integer', 'amount'],
    [{ amount: 5000, phone_number: payee('000'), operator: 'nope' }, 'operator_invalid', 'operator'],
    [{ amount: 5000, phone_number: payee('000'), destination: 'x' }, 'parameter_unknown', 'destination'],
    [{ phone_number: payee('000') }, 'parameter_missing', 'amount'],
  ];
  for (const [body, code, param] of refusals) {
    const res = await createPayout(e2e.service, key, body);
    t.is(res.status, 400, `${JSON.stringify(body)}: ${res.text}`);
    t.like(res.body.error, { code, param }, JSON.stringify(body));
  }
  const currencyMissing = await e2e.service.request('POST', PO, { key, body: { amount: 5000, phone_number: payee('000') } });
  t.like(currencyMissing.body.error, { code: 'parameter_missing', param: 'currency' });
  t.deepEqual(await listAllPayouts(e2e.service, key), []);
});

test('an Idempotency-Key makes one payout of any number of identical requests, replayed byte for byte', async (t) => {
  const key = await e2e.key('idem');
  await fund(e2e.service, key, 10_000);
  const body = { amount: 3000, phone_number: payee('000') };
  const answers = await mapLimit(Array.from({ length: 6 }, (_, i) => i), 6, async () => {
    for (;;) {
      const res = await createPayout(e2e.service, key, body, { 'Idempotency-Key': 'po-1' });
      if (res.status !== 409) return res;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  });
  const ids = new Set(answers.map((res) => (res.body as Payout).id));
  t.is(ids.size, 1);
  const replay = await createPayout(e2e.service, key, body, { 'Idempotency-Key': 'po-1' });
  t.is(replay.headers.get('idempotent-replayed'), 'true');
  t.is(replay.text, answers[0]!.text);
  t.is((await listAllPayouts(e2e.service, key)).length, 1);
  const reused = await createPayout(e2e.service, key, { ...body, amount: 3001 }, { 'Idempotency-Key': 'po-1' });
  t.is(reused.body.error?.code, 'idempotency_key_reused');
});

test('cancel: an enqueued payout (008) is canceled and its hold released; a paid one, or a second cancel, is refused', async (t) => {
  const key = await e2e.key('cancel');
  await fund(e2e.service, key, 10_000);
  const enqueued = (await createPayout(e2e.service, key, { amount: 10_000, phone_number: payee('008') })).body as Payout;
  await waitForPayout(e2e.service, key, enqueued.id, 'enqueued');
  const res = await e2e.service.request('POST', `${PO}/${enqueued.id}/cancel`, { key, headers: { 'Idempotency-Key': 'cancel-1' } });
  t.is(res.status, 200, res.text);
  t.like(res.body, { id: enqueued.id, status: 'canceled' });
  const replay = await e2e.service.request('POST', `${PO}/${enqueued.id}/cancel`, { key, headers: { 'Idempotency-Key': 'cancel-1' } });
  t.is(replay.text, res.text);
  const again = await e2e.service.request('POST', `${PO}/${enqueued.id}/cancel`, { key });
  t.is(again.status, 400, again.text);
  t.like(again.body.error, { code: 'payout_unexpected_state' });
  t.regex(again.body.error.message, /canceled/);
  await until('the canceled event', async () => ((await eventTypesOf(e2e.service, key, enqueued.id)).includes('payout.canceled') ? true : undefined));
  t.deepEqual(await eventTypesOf(e2e.service, key, enqueued.id), ['payout.created', 'payout.canceled']);

  // The hold came back: the whole balance goes out again.
  const paid = (await createPayout(e2e.service, key, { amount: 10_000, phone_number: payee('000') })).body as Payout;
  await waitForPayout(e2e.service, key, paid.id, 'paid');
  const late = await e2e.service.request('POST', `${PO}/${paid.id}/cancel`, { key });
  t.like(late.body.error, { code: 'payout_unexpected_state' });
  t.regex(late.body.error.message, /paid/);
  const unknown = await e2e.service.request('POST', `${PO}/po_00000000000000000000000000/cancel`, { key });
  t.is(unknown.status, 404);
});

test('lists: newest first, filtered by status; another project sees nothing', async (t) => {
  const key = await e2e.key('lists');
  await fund(e2e.service, key, 10_000);
  const a = (await createPayout(e2e.service, key, { amount: 1000, phone_number: payee('000') })).body as Payout;
  const b = (await createPayout(e2e.service, key, { amount: 1000, phone_number: payee('005', 1) })).body as Payout;
  await waitForPayout(e2e.service, key, a.id, 'paid');
  await waitForPayout(e2e.service, key, b.id, 'failed');
  t.deepEqual((await listAllPayouts(e2e.service, key)).map((p) => p.id), [b.id, a.id]);
  t.deepEqual((await listAllPayouts(e2e.service, key, { status: 'failed' })).map((p) => p.id), [b.id]);
  const bad = await e2e.service.request('GET', `${PO}?status=lost`, { key });
  t.is(bad.status, 400);
  const other = await e2e.key('other');
  t.is((await e2e.service.request('GET', `${PO}/${a.id}`, { key: other })).status, 404);
  t.deepEqual(await listAllPayouts(e2e.service, other), []);
});

test('a batch: accepted at once, each item a payout with its own events, completed once; a retry creates nothing twice', async (t) => {
  const key = await e2e.key('batch');
  await fund(e2e.service, key, 10_000);
  const items = [
    { amount: 1000, phone_number: payee('000', 1), reference: 'r-1' },
    { amount: 1000, phone_number: payee('005', 2), reference: 'r-2', metadata: { row: '2' } },
    { amount: 1000, phone_number: payee('009', 3), reference: 'r-3' },
    { amount: 1000, phone_number: payee('000', 4), reference: 'r-4', operator: 'mtn_momo' },
  ].map((item) => ({ currency: 'xof', ...item }));
  const res = await e2e.service.request('POST', POB, { key, body: { payouts: items }, headers: { 'Idempotency-Key': 'batch-1' } });
  t.is(res.status, 200, res.text);
  const batch = res.body as PayoutBatch;
  t.like(batch, { object: 'payout_batch', status: 'processing', livemode: false, completed_at: null });
  t.like(batch.counts, { total: 4, pending: 4 });
  const retried = await e2e.service.request('POST', POB, { key, body: { payouts: items }, headers: { 'Idempotency-Key': 'batch-1' } });
  t.is(retried.text, res.text);

  const done = await until('the batch to complete', async () => {
    const now = await retrieveBatch(e2e.service, key, batch.id);
    return now.status === 'completed' ? now : undefined;
  });
  t.like(done.counts, { total: 4, paid: 2, failed: 2, pending: 0, in_transit: 0 });
  const payouts = await listAllPayouts(e2e.service, key, { batch: batch.id });
  t.is(payouts.length, 4);
  t.deepEqual(payouts.map((p) => p.reference).sort(), ['r-1', 'r-2', 'r-3', 'r-4']);
  t.true(payouts.every((p) => p.batch === batch.id));
  t.deepEqual(payouts.find((p) => p.reference === 'r-2')!.metadata, { row: '2' });
  for (const p of payouts) t.deepEqual((await eventTypesOf(e2e.service, key, p.id))[0], 'payout.created');
  await until('the completed event', async () => ((await eventTypesOf(e2e.service, key, batch.id)).length === 1 ? true : undefined));
  t.deepEqual(await eventTypesOf(e2e.service, key, batch.id), ['payout_batch.completed']);
  t.is((await listAllPayouts(e2e.service, key)).length, 4);
  const listed = await e2e.service.request('GET', `${POB}?limit=10`, { key });
  t.deepEqual((listed.body.data as PayoutBatch[]).map((b) => b.id), [batch.id]);
});

test("a batch's item short of balance fails balance_insufficient alone", async (t) => {
  const key = await e2e.key('batch-short');
  await fund(e2e.service, key, 1500);
  const items = [1000, 1000].map((amount, i) => ({ amount, currency: 'xof', phone_number: payee('000', i), reference: `s-${i}` }));
  const batch = (await e2e.service.request('POST', POB, { key, body: { payouts: items } })).body as PayoutBatch;
  const done = await until('the batch to complete', async () => {
    const now = await retrieveBatch(e2e.service, key, batch.id);
    return now.status === 'completed' ? now : undefined;
  });
  t.like(done.counts, { total: 2, paid: 1, failed: 1 });
  const failed = (await listAllPayouts(e2e.service, key, { batch: batch.id })).find((p) => p.status === 'failed');
  t.is(failed?.failure_code, 'balance_insufficient');
});

test("a batch's bad item names itself; duplicate references, empty and oversized batches are refused; nothing created", async (t) => {
  const key = await e2e.key('batch-checks');
  const item = (i: number, extra: Record<string, unknown> = {}) => ({ amount: 1000, currency: 'xof', phone_number: payee('000', i), reference: `c-${i}`, ...extra });
  const cases: Array<[unknown, string, string]> = [
    [[item(0), item(1, { phone_number: '12' })], 'phone_number_invalid', 'payouts[1][phone_number]'],
    [[item(0), item(1, { currency: 'kes' })], 'currency_not_supported', 'payouts[1][currency]'],
    [[item(0), item(1, { reference: 'c-0' })], 'parameter_invalid', 'payouts[1][reference]'],
    [[item(0, { reference: undefined })], 'parameter_missing', 'payouts[0][reference]'],
    [[], 'parameter_invalid_empty', 'payouts'],
    [Array.from({ length: 1001 }, (_, i) => item(i)), 'parameter_invalid', 'payouts'],
    ['x', 'parameter_invalid', 'payouts'],
  ];
  for (const [payouts, code, param] of cases) {
    const res = await e2e.service.request('POST', POB, { key, body: { payouts } });
    t.is(res.status, 400, res.text.slice(0, 300));
    t.like(res.body.error, { code, param });
  }
  const tooLarge = await e2e.service.request('POST', POB, { key, rawBody: JSON.stringify({ payouts: Array.from({ length: 1000 }, (_, i) => item(i, { description: 'x'.repeat(1000) })) }), headers: { 'Content-Type': 'application/json' } });
  t.is(tooLarge.status, 413);
  t.deepEqual(await listAllPayouts(e2e.service, key), []);
  const listed = await e2e.service.request('GET', `${POB}?limit=10`, { key });
  t.deepEqual(listed.body.data, []);
});
