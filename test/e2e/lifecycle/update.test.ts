/**
 * `POST /v1/payment_intents/{id}` (DESIGN.md section 7): `description` and
 * `metadata` change in any status that is not final, metadata merged as Stripe does
 * (a key set to "" is removed, others stay); `amount`, `currency`, the operators and
 * `expires_at` only while `new`. An update records no event and leaves the status
 * and the attempt alone. Settling never happens here (a ten-minute
 * SIMULATOR_PROCESSING_DELAY_MS), so an intent stays in `processing`.
 */
import test from 'ava';
import {
  confirm,
  createIntent,
  eventsOf,
  listAllEvents,
  PI,
  phone,
  retrieve,
  update,
  waitForStatus,
} from '../../helpers/payment-intent-lifecycle.js';
import { useService } from '../../helpers/use-service.js';

const e2e = useService(test, { workers: 1, env: { WRITE_TIMEOUT_MS: '30000', SIMULATOR_APPROVAL_DELAY_MS: '100', SIMULATOR_PROCESSING_DELAY_MS: '600000' } });

async function eventTypes(key: string, id: string): Promise<string[]> {
  return eventsOf(await listAllEvents(e2e.service, key), id).map((e) => e.type);
}

test('while new: every field can change; metadata is merged and "" removes a key; no event is recorded', async (t) => {
  const key = await e2e.key('update-new');
  const pi = await createIntent(e2e.service, key, { amount: 1000, description: 'first', metadata: { order: '1', color: 'red', size: 'm' } });
  const expiresAt = Math.floor(Date.now() / 1000) + 3 * 3600;
  const res = await update(e2e.service, key, pi.id, {
    amount: 2500,
    currency: 'KES',
    description: 'second',
    metadata: { color: '', size: 'l', 'a.b$c': 'dotted' },
    allowed_operators: ['wave', 'mpesa'],
    selected_operator: 'mpesa',
    automatic_operator: false,
    expires_at: expiresAt,
  });
  t.is(res.status, 200, res.text);
  const want = {
    id: pi.id,
    status: 'new',
    amount: 2500,
    currency: 'kes',
    description: 'second',
    metadata: { order: '1', size: 'l', 'a.b$c': 'dotted' },
    allowed_operators: ['wave', 'mpesa'],
    selected_operator: 'mpesa',
    automatic_operator: false,
    expires_at: expiresAt,
    client_secret: pi.client_secret,
    created: pi.created,
  };
  t.like(res.body, want);
  t.deepEqual(res.body.metadata, want.metadata, 'color removed, size replaced, order kept');
  t.deepEqual(await retrieve(e2e.service, key, pi.id), res.body);

  const cleared = await update(e2e.service, key, pi.id, { description: null, metadata: { order: '', size: '', 'a.b$c': '' } });
  t.is(cleared.status, 200, cleared.text);
  t.like(cleared.body, { description: null, metadata: {}, amount: 2500 });
  const none = await update(e2e.service, key, pi.id, {});
  t.is(none.status, 200, none.text);
  t.deepEqual(none.body, cleared.body, 'an empty update changes nothing');
  t.deepEqual(await eventTypes(key, pi.id), ['payment_intent.created'], 'updates record no event');

  // The operators changed: the confirm follows them.
  const confirmed = await confirm(e2e.service, key, pi.id, { phone_number: phone('254', '000') });
  t.is(confirmed.status, 200, confirmed.text);
  t.is(confirmed.body.payment_details.operator, 'mpesa', 'the updated selected_operator');
});

test('after a confirm: description and metadata still change (requires_action, processing), amount does not', async (t) => {
  const key = await e2e.key('update-later');
  const slow = await createIntent(e2e.service, key, { amount: 700, metadata: { keep: 'yes', drop: 'me' } });
  const paying = await createIntent(e2e.service, key, { amount: 800, metadata: { keep: 'yes', drop: 'me' } });
  const waiting = await confirm(e2e.service, key, slow.id, { operator: 'mtn_momo', phone_number: phone('225', '010') });
  t.is(waiting.body.status, 'requires_action', waiting.text);
  const processing = await confirm(e2e.service, key, paying.id, { operator: 'orange_money', phone_number: phone('225', '000'), otp: '123456' });
  t.is(processing.body.status, 'processing', processing.text);
  await waitForStatus(e2e.service, key, paying.id, 'processing');

  for (const [pi, before] of [
    [slow, waiting.body],
    [paying, processing.body],
  ] as const) {
    const res = await update(e2e.service, key, pi.id, { description: `now ${before.status}`, metadata: { drop: '', added: '1' } });
    t.is(res.status, 200, res.text);
    t.deepEqual(res.body, { ...before, description: `now ${before.status}`, metadata: { keep: 'yes', added: '1' } }, 'only description and metadata changed');
    const amount = await update(e2e.service, key, pi.id, { amount: 1, description: 'not this either' });
    t.is(amount.status, 400, amount.text);
    t.like(amount.body.error, { code: 'payment_intent_unexpected_state', param: 'amount' });
    t.is((await retrieve(e2e.service, key, pi.id)).description, `now ${before.status}`, 'a refused update changes no field at all');
  }
  t.deepEqual(await eventTypes(key, slow.id), ['payment_intent.created', 'payment_intent.requires_action']);
  t.deepEqual(await eventTypes(key, paying.id), ['payment_intent.created', 'payment_intent.processing']);
});

test('refusals of an update: conflicts with the intent, bad values, unknown fields; nothing changes', async (t) => {
  const key = await e2e.key('update-bad');
  const pi = await createIntent(e2e.service, key, { amount: 500, allowed_operators: ['wave', 'mpesa'], selected_operator: 'wave' });
  const now = Math.floor(Date.now() / 1000);
  const cases: Array<[Record<string, unknown>, string, string]> = [
    [{ selected_operator: 'mtn_momo' }, 'operator_invalid', 'selected_operator'],
    [{ allowed_operators: ['mpesa'] }, 'operator_invalid', 'allowed_operators'],
    [{ selected_operator: 'mpesa', automatic_operator: true }, 'parameter_conflict', 'automatic_operator'],
    [{ amount: 0 }, 'amount_too_small', 'amount'],
    [{ amount: '12' }, 'parameter_invalid_integer', 'amount'],
    [{ expires_at: now + 10 }, 'parameter_out_of_range', 'expires_at'],
    [{ currency: 'xyz' }, 'currency_invalid', 'currency'],
    [{ status: 'succeeded' }, 'parameter_unknown', 'status'],
    [{ metadata: { k: 5 } }, 'metadata_invalid', 'metadata[k]'],
  ];
  for (const [body, code, param] of cases) {
    const res = await update(e2e.service, key, pi.id, body);
    t.is(res.status, 400, `${JSON.stringify(body)}: ${res.text}`);
    t.like(res.body.error, { code, param }, JSON.stringify(body));
  }
  t.like(await retrieve(e2e.service, key, pi.id), { amount: 500, selected_operator: 'wave', allowed_operators: ['wave', 'mpesa'], automatic_operator: false });
});

test('Idempotency-Key on update replays the first answer; a create’s replay keeps its first answer after later changes', async (t) => {
  const key = await e2e.key('update-idem');
  const created = await e2e.service.request('POST', PI, { key, body: { amount: 321 }, headers: { 'Idempotency-Key': 'create-1' } });
  t.is(created.status, 200, created.text);
  const id = created.body.id as string;

  const first = await update(e2e.service, key, id, { metadata: { n: '1' } }, { 'Idempotency-Key': 'update-1' });
  t.is(first.status, 200, first.text);
  await update(e2e.service, key, id, { metadata: { n: '2' } });
  const replay = await update(e2e.service, key, id, { metadata: { n: '1' } }, { 'Idempotency-Key': 'update-1' });
  t.is(replay.text, first.text);
  t.is(replay.headers.get('idempotent-replayed'), 'true');
  t.deepEqual((await retrieve(e2e.service, key, id)).metadata, { n: '2' }, 'the replay did not apply the update again');

  const confirmed = await confirm(e2e.service, key, id, { operator: 'mtn_momo', phone_number: phone('225', '010') });
  t.is(confirmed.status, 200, confirmed.text);
  const createReplay = await e2e.service.request('POST', PI, { key, body: { amount: 321 }, headers: { 'Idempotency-Key': 'create-1' } });
  t.is(createReplay.status, 200);
  t.is(createReplay.text, created.text, 'the create is replayed as it was answered, not as the intent is now');
  t.is(createReplay.headers.get('idempotent-replayed'), 'true');
});
