/**
 * Refunds, black-box (DESIGN.md section 11): real api and worker processes, the
 * simulator's delays shortened. Whole and partial refunds, what remains refundable,
 * the simulator's refund outcomes by phone number, the operators' refund support,
 * the intent's new amounts, the events (listed and delivered to a `*` endpoint), the
 * list's filter and cursors, updates, idempotency, and bad input leaving nothing.
 */
import test from 'ava';
import { QUEUES } from '../../../common/jobs.js';
import { idTime } from '../../../common/ids.js';
import type { PaymentIntentDoc } from '../../../common/documents.js';
import { serviceQueue, uniqueName } from '../../helpers/service.js';
import { createEndpoint } from '../../helpers/webhook-fixtures.js';
import { createIntent, listAllEvents, retrieve, waitForDeliveredTypes } from '../../helpers/payment-intent-lifecycle.js';
import { listAllRefunds, paidIntent, RE, refund, retrieveRefund, waitForRefund, type Refund } from '../../helpers/refunds.js';
import { useService } from '../../helpers/use-service.js';

const e2e = useService(test, {
  workers: 1,
  env: { WRITE_TIMEOUT_MS: '30000', SIMULATOR_APPROVAL_DELAY_MS: '100', SIMULATOR_PROCESSING_DELAY_MS: '100', SIMULATOR_SLOW_DELAY_MS: '5000' },
  receiver: true,
});

const key = (name: string) => e2e.key(name);

async function storedIntent(id: string): Promise<PaymentIntentDoc> {
  const db = await e2e.service.db();
  return (await db.collection<PaymentIntentDoc>('payment_intents').findOne({ _id: id })) as PaymentIntentDoc;
}

test('a refund without an amount gives back the whole payment: pending, then succeeded, with its events delivered', async (t) => {
  const k = await key('whole');
  const endpoint = await createEndpoint(e2e.service, k, e2e.receiver.url('/whole'), ['*']);
  t.truthy(endpoint.id);
  const pi = await paidIntent(e2e.service, k, { amount: 5000 });
  t.is(pi.amount_received, 5000);
  t.is(pi.amount_refunded, 0);

  const res = await refund(e2e.service, k, { payment_intent: pi.id, reason: 'requested_by_customer', metadata: { ticket: '42' } });
  t.is(res.status, 200, res.text);
  const created = res.body as Refund;
  t.regex(created.id, /^re_[0-9A-Za-z]{26}$/);
  t.deepEqual(Object.keys(created), ['id', 'object', 'amount', 'currency', 'payment_intent', 'status', 'reason', 'failure_reason', 'description', 'metadata', 'operator', 'created', 'livemode']);
  t.like(created, { object: 'refund', amount: 5000, currency: 'xof', payment_intent: pi.id, status: 'pending', reason: 'requested_by_customer', failure_reason: null, description: null, operator: 'mtn_momo', livemode: false });
  t.deepEqual(created.metadata, { ticket: '42' });

  const done = await waitForRefund(e2e.service, k, created.id, 'succeeded');
  t.like(done, { id: created.id, amount: 5000, failure_reason: null });
  const after = await retrieve(e2e.service, k, pi.id);
  t.like(after, { status: 'succeeded', amount_received: 5000, amount_refunded: 5000 });

  // Nothing remains: a second refund is refused, and changes nothing.
  const again = await refund(e2e.service, k, { payment_intent: pi.id });
  t.is(again.status, 400, again.text);
  t.like(again.body.error, { code: 'charge_already_refunded', param: 'payment_intent' });

  await waitForDeliveredTypes(e2e.receiver, '/whole', new Map([[created.id, ['refund.created', 'refund.succeeded']], [pi.id, ['payment_intent.refunded']]]));
  const events = await listAllEvents(e2e.service, k);
  const ofRefund = events.filter((e) => e.type.startsWith('refund.') || e.type === 'payment_intent.refunded').reverse();
  t.deepEqual(ofRefund.map((e) => e.type), ['refund.created', 'refund.succeeded', 'payment_intent.refunded']);
  t.like(ofRefund[0]!.data.object, { id: created.id, status: 'pending' });
  t.like(ofRefund[1]!.data.object, { id: created.id, status: 'succeeded' });
  t.like(ofRefund[2]!.data.object, { id: pi.id, amount_refunded: 5000, amount_received: 5000 });
  // Listed with a type filter too, and retrievable.
  const listed = await e2e.service.request('GET', '/v1/events?type=refund.succeeded', { key: k });
  t.deepEqual(listed.body.data.map((e: { id: string }) => e.id), [ofRefund[1]!.id]);
  const one = await e2e.service.request('GET', `/v1/events/${ofRefund[2]!.id}`, { key: k });
  t.is(one.status, 200);
});

test('partial refunds add up; the default amount is what remains; more than that is amount_too_large', async (t) => {
  const k = await key('partial');
  const pi = await paidIntent(e2e.service, k, { amount: 1000, n: 1 });
  const first = await refund(e2e.service, k, { payment_intent: pi.id, amount: 300 });
  t.is(first.status, 200, first.text);
  const tooLarge = await refund(e2e.service, k, { payment_intent: pi.id, amount: 701 });
  t.is(tooLarge.status, 400);
  t.like(tooLarge.body.error, { code: 'amount_too_large', param: 'amount', type: 'invalid_request_error' });
  const second = await refund(e2e.service, k, { payment_intent: pi.id, amount: 200 });
  t.is(second.status, 200, second.text);
  // Pending refunds hold their amount: what remains is 500 whether or not they ended.
  const rest = await refund(e2e.service, k, { payment_intent: pi.id });
  t.is(rest.status, 200, rest.text);
  t.is(rest.body.amount, 500);
  const none = await refund(e2e.service, k, { payment_intent: pi.id, amount: 1 });
  t.like(none.body.error, { code: 'charge_already_refunded' });

  for (const r of [first, second, rest]) await waitForRefund(e2e.service, k, r.body.id as string, 'succeeded');
  const after = await retrieve(e2e.service, k, pi.id);
  t.is(after.amount_refunded, 1000);
  const stored = await storedIntent(pi.id);
  t.is(stored.amount_held, 1000);
  t.is(stored.refunds?.length, 3);
});

test('a payment made with a number ending 020 pays, but its refunds fail with payer_account_blocked and release their hold', async (t) => {
  const k = await key('fails');
  await createEndpoint(e2e.service, k, e2e.receiver.url('/fails'), ['refund.failed']);
  const pi = await paidIntent(e2e.service, k, { amount: 800, suffix: '020', n: 2 });
  const res = await refund(e2e.service, k, { payment_intent: pi.id, amount: 800 });
  t.is(res.status, 200, res.text);
  const failed = await waitForRefund(e2e.service, k, res.body.id as string, 'failed');
  t.is(failed.failure_reason, 'payer_account_blocked');
  const after = await retrieve(e2e.service, k, pi.id);
  t.is(after.amount_refunded, 0);
  t.is((await storedIntent(pi.id)).amount_held, 0);
  await waitForDeliveredTypes(e2e.receiver, '/fails', new Map([[failed.id, ['refund.failed']]]));
  // Released: the whole amount can be asked again.
  const again = await refund(e2e.service, k, { payment_intent: pi.id });
  t.is(again.status, 200, again.text);
  t.is(again.body.amount, 800);
});

test('a payment made with a number ending 021 has refunds that stay pending past the processing delay, then succeed', async (t) => {
  const k = await key('slow');
  const pi = await paidIntent(e2e.service, k, { amount: 700, suffix: '021', n: 3 });
  const res = await refund(e2e.service, k, { payment_intent: pi.id, amount: 100 });
  t.is(res.status, 200, res.text);
  const done = await waitForRefund(e2e.service, k, res.body.id as string, 'succeeded');
  t.is(done.amount, 100);
  // The simulator answered "pending" until SIMULATOR_SLOW_DELAY_MS after the refund was
  // made (any other number's refund succeeds at its first poll, 100 ms after the
  // request): its success was recorded no sooner.
  const succeeded = (await listAllEvents(e2e.service, k, 'refund.succeeded')).find((e) => e.data.object.id === done.id);
  t.truthy(succeeded);
  t.true(idTime(succeeded!.id) - idTime(done.id) >= 1500, `succeeded ${idTime(succeeded!.id) - idTime(done.id)} ms after the refund was made`);
  t.is((await retrieve(e2e.service, k, pi.id)).amount_refunded, 100);
});

test('only a succeeded intent of the caller\'s scope can be refunded', async (t) => {
  const k = await key('states');
  const fresh = await createIntent(e2e.service, k, { amount: 1000 });
  t.is(fresh.amount_received, 0);
  const res = await refund(e2e.service, k, { payment_intent: fresh.id });
  t.is(res.status, 400);
  t.like(res.body.error, { code: 'payment_intent_unexpected_state', param: 'payment_intent' });
  t.regex(res.body.error.message, /status of new/);

  const unknown = await refund(e2e.service, k, { payment_intent: 'pi_00000000000000000000000000' });
  t.is(unknown.status, 404);
  t.like(unknown.body.error, { code: 'resource_missing', param: 'payment_intent' });
  const malformed = await refund(e2e.service, k, { payment_intent: 'nope' });
  t.is(malformed.status, 404);
  t.like(malformed.body.error, { code: 'resource_missing', param: 'payment_intent' });

  const other = await key('states-other');
  const theirs = await paidIntent(e2e.service, other, { amount: 900, n: 4 });
  const across = await refund(e2e.service, k, { payment_intent: theirs.id });
  t.is(across.status, 404);
  t.like(across.body.error, { code: 'resource_missing', param: 'payment_intent' });
  t.deepEqual(await listAllRefunds(e2e.service, k), []);
  t.deepEqual(await listAllRefunds(e2e.service, other), []);
});

test('an operator without refunds refuses every refund; one that refunds only in full refuses a partial amount', async (t) => {
  const k = await key('support');
  const orange = await paidIntent(e2e.service, k, { amount: 1000, operator: 'orange_money', n: 5 });
  const none = await refund(e2e.service, k, { payment_intent: orange.id });
  t.is(none.status, 400);
  t.like(none.body.error, { code: 'refund_not_supported' });

  const mpesa = await paidIntent(e2e.service, k, { amount: 2000, operator: 'mpesa', n: 6 });
  const partial = await refund(e2e.service, k, { payment_intent: mpesa.id, amount: 500 });
  t.is(partial.status, 400);
  t.like(partial.body.error, { code: 'refund_not_supported', param: 'amount' });
  const whole = await refund(e2e.service, k, { payment_intent: mpesa.id });
  t.is(whole.status, 200, whole.text);
  t.like(whole.body, { amount: 2000, currency: 'kes', operator: 'mpesa' });
  await waitForRefund(e2e.service, k, whole.body.id as string, 'succeeded');
  t.is((await retrieve(e2e.service, k, mpesa.id)).amount_refunded, 2000);
  t.deepEqual((await listAllRefunds(e2e.service, k)).map((r) => r.id), [whole.body.id]);
});

test('bad input gets a clear 4xx and leaves nothing behind: no refund, no hold, no job, no idempotency record', async (t) => {
  const project = uniqueName('bad');
  const k = await e2e.service.issueKey(project);
  const pi = await paidIntent(e2e.service, k, { amount: 1000, n: 7 });
  const before = await storedIntent(pi.id);
  const cases: Array<[Record<string, unknown>, string, string]> = [
    [{ payment_intent: pi.id, amount: 0 }, 'amount_too_small', 'amount'],
    [{ payment_intent: pi.id, amount: -5 }, 'amount_too_small', 'amount'],
    [{ payment_intent: pi.id, amount: 12.5 }, 'parameter_invalid_integer', 'amount'],
    [{ payment_intent: pi.id, amount: '100' }, 'parameter_invalid_integer', 'amount'],
    [{ payment_intent: pi.id, reason: 'changed_my_mind' }, 'parameter_invalid', 'reason'],
    [{ payment_intent: pi.id, charge: 'ch_1' }, 'parameter_unknown', 'charge'],
    [{ amount: 100 }, 'parameter_missing', 'payment_intent'],
    [{ payment_intent: pi.id, metadata: { k: 1 } }, 'metadata_invalid', 'metadata[k]'],
  ];
  for (const [i, [body, code, param]] of cases.entries()) {
    const res = await refund(e2e.service, k, body, { 'Idempotency-Key': `bad-${i}` });
    t.is(res.status, 400, `${JSON.stringify(body)}: ${res.text}`);
    t.like(res.body.error, { code, param });
  }
  // Form bodies meet the same rules.
  const form = await e2e.service.request('POST', RE, { key: k, rawBody: `payment_intent=${pi.id}&amount=1.5`, headers: { 'Content-Type': 'application/x-www-form-urlencoded' } });
  t.like(form.body.error, { code: 'parameter_invalid_integer', param: 'amount' });

  t.deepEqual(await listAllRefunds(e2e.service, k), []);
  const after = await storedIntent(pi.id);
  t.is(after.amount_held ?? 0, before.amount_held ?? 0);
  t.is(after.rev, before.rev);
  const db = await e2e.service.db();
  t.is(await db.collection('idempotency_records').countDocuments({ project }), 0);
  const queue = serviceQueue(e2e.service, QUEUES.writes);
  try {
    const jobs = await queue.getJobs(['waiting', 'active', 'delayed', 'completed', 'failed']);
    t.deepEqual(jobs.filter((j) => j.name === 'refund.create.v1' && j.data.project === project).map((j) => j.id), []);
  } finally {
    await queue.close();
  }
  // None of the keys was recorded: each can be used for a good request now.
  const good = await refund(e2e.service, k, { payment_intent: pi.id, amount: 10 }, { 'Idempotency-Key': 'bad-0' });
  t.is(good.status, 200, good.text);
});

test('form bodies, idempotent replays, updates of description and metadata, and the list with its filter and cursors', async (t) => {
  const k = await key('misc');
  const a = await paidIntent(e2e.service, k, { amount: 1000, n: 8 });
  const b = await paidIntent(e2e.service, k, { amount: 1000, n: 9 });
  const form = await e2e.service.request('POST', RE, {
    key: k,
    rawBody: `payment_intent=${a.id}&amount=100&reason=duplicate&description=twice&metadata[order]=7`,
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', 'Idempotency-Key': 'form-1' },
  });
  t.is(form.status, 200, form.text);
  t.like(form.body, { amount: 100, reason: 'duplicate', description: 'twice' });
  const replay = await e2e.service.request('POST', RE, {
    key: k,
    rawBody: `payment_intent=${a.id}&amount=100&reason=duplicate&description=twice&metadata[order]=7`,
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', 'Idempotency-Key': 'form-1' },
  });
  t.is(replay.text, form.text);
  t.is(replay.headers.get('idempotent-replayed'), 'true');
  const reused = await refund(e2e.service, k, { payment_intent: a.id, amount: 200 }, { 'Idempotency-Key': 'form-1' });
  t.like(reused.body.error, { code: 'idempotency_key_reused' });

  const ids: string[] = [form.body.id];
  for (const [pi, amount] of [[b, 10], [a, 20], [b, 30], [a, 40]] as const) {
    const res = await refund(e2e.service, k, { payment_intent: pi.id, amount });
    t.is(res.status, 200, res.text);
    ids.push(res.body.id);
  }
  const all = await listAllRefunds(e2e.service, k, undefined, 2);
  t.deepEqual(all.map((r) => r.id), [...ids].reverse());
  const ofA = await listAllRefunds(e2e.service, k, a.id, 1);
  t.deepEqual(ofA.map((r) => r.amount), [40, 20, 100]);
  const before = await e2e.service.request('GET', `${RE}?payment_intent=${a.id}&ending_before=${ofA[2]!.id}&limit=1`, { key: k });
  t.deepEqual(before.body.data.map((r: Refund) => r.id), [ofA[1]!.id]);
  t.true(before.body.has_more);
  const badCursor = await e2e.service.request('GET', `${RE}?starting_after=re_00000000000000000000000000`, { key: k });
  t.is(badCursor.status, 400);
  t.like(badCursor.body.error, { code: 'resource_missing', param: 'starting_after' });
  const unknownParam = await e2e.service.request('GET', `${RE}?charge=ch_1`, { key: k });
  t.like(unknownParam.body.error, { code: 'parameter_unknown', param: 'charge' });

  const updated = await e2e.service.request('POST', `${RE}/${form.body.id}`, { key: k, body: { description: null, metadata: { order: '', note: 'ok' } } });
  t.is(updated.status, 200, updated.text);
  t.like(updated.body, { id: form.body.id, description: null, amount: 100 });
  t.deepEqual(updated.body.metadata, { note: 'ok' });
  const amountChange = await e2e.service.request('POST', `${RE}/${form.body.id}`, { key: k, body: { amount: 5 } });
  t.like(amountChange.body.error, { code: 'parameter_unknown', param: 'amount' });
  t.like(await retrieveRefund(e2e.service, k, form.body.id), { description: null, metadata: { note: 'ok' } });
  // The create's replay is still the first answer, byte for byte.
  const later = await e2e.service.request('POST', RE, {
    key: k,
    rawBody: `payment_intent=${a.id}&amount=100&reason=duplicate&description=twice&metadata[order]=7`,
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', 'Idempotency-Key': 'form-1' },
  });
  t.is(later.text, form.text);

  const other = await key('misc-other');
  const missing = await e2e.service.request('GET', `${RE}/${form.body.id}`, { key: other });
  t.is(missing.status, 404);
  const missingUpdate = await e2e.service.request('POST', `${RE}/${form.body.id}`, { key: other, body: { description: 'x' } });
  t.is(missingUpdate.status, 404);
});

test('live mode: a refund through an operator without a connector answers operator_not_configured and holds nothing', async (t) => {
  const project = uniqueName('live');
  const live = await e2e.service.issueKey(project, true);
  const db = await e2e.service.db();
  const id = `pi_00VbYV85n9aIzXB1ggNYQfQ${uniqueName('x').slice(-3)}`;
  await db.collection<PaymentIntentDoc>('payment_intents').insertOne({
    _id: id, project, livemode: true, amount: 3000, currency: 'xof', description: null, status: 'succeeded', client_secret: `${id}_secret_x`,
    automatic_operator: false, allowed_operators: ['mtn_momo'], selected_operator: 'mtn_momo', metadata: [], created: 1_700_000_000, expires_at: 1_900_000_000,
    attempt: 1, rev: 3, payment: { operator: 'mtn_momo', phone_number: null, phone_masked: '+225*******000', return_url: null, checkout_token: null },
  });
  const res = await refund(e2e.service, live, { payment_intent: id });
  t.is(res.status, 400, res.text);
  t.like(res.body.error, { code: 'operator_not_configured' });
  t.regex(res.body.error.message, /MTN_MOMO_\* variables/, 'the message says what to configure');
  t.is((await storedIntent(id)).amount_held, undefined);
  t.deepEqual(await listAllRefunds(e2e.service, live), []);
});
