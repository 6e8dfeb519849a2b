/**
 * The requests of the lifecycle, black-box: how a confirm chooses its operator
 * (named, selected, or by the phone's country code from the documented table),
 * what it refuses before anything starts, form-encoded bodies, an unknown intent
 * (404, nothing enqueued, nothing recorded), and idempotency keys on confirm and
 * cancel (the first answer replayed byte for byte, nothing done twice).
 */
import test from 'ava';
import { Queue } from 'bullmq';
import { QUEUES } from '../../../common/jobs.js';
import { Service, uniqueName, type ApiResponse } from '../../helpers/service.js';
import {
  cancel,
  confirm,
  createIntent,
  eventsOf,
  listAllEvents,
  PI,
  phone,
  retrieve,
  waitForStatus,
} from '../../helpers/payment-intent-lifecycle.js';

let service: Service;
let creates: Queue;

test.before(async () => {
  // Slow operators: the intents stay in requires_action while the tests look at them.
  service = await Service.start({ workers: 1, env: { WRITE_TIMEOUT_MS: '30000', SIMULATOR_APPROVAL_DELAY_MS: '600000', SIMULATOR_PROCESSING_DELAY_MS: '600000' } });
  creates = new Queue(QUEUES.writes, { connection: { url: service.env.REDIS_URL }, prefix: service.prefix });
});

test.after.always(async () => {
  await creates?.close();
  await service?.stop();
});

const FORM = { 'Content-Type': 'application/x-www-form-urlencoded' };

function postForm(key: string, path: string, rawBody: string, headers: Record<string, string> = {}): Promise<ApiResponse> {
  return service.request('POST', path, { key, rawBody, headers: { ...FORM, ...headers } });
}

async function operatorChosen(key: string, create: Record<string, unknown>, body: Record<string, unknown>): Promise<ApiResponse> {
  const pi = await createIntent(service, key, create);
  return confirm(service, key, pi.id, body);
}

test('automatic_operator: the first allowed operator serving the phone country, in the intent’s own order', async (t) => {
  const key = await service.issueKey(uniqueName('auto'));
  const cases: Array<{ create: Record<string, unknown>; phone: string; operator: string }> = [
    // Catalog order: mtn_momo, orange_money, moov_money, wave, airtel_money, mpesa.
    // These numbers carry a prefix no operator holds (test/helpers), so the calling code decides.
    { create: { currency: 'kes' }, phone: phone('254', '000'), operator: 'airtel_money' },
    { create: {}, phone: phone('225', '000'), operator: 'mtn_momo' },
    { create: {}, phone: phone('221', '000'), operator: 'orange_money' },
    { create: {}, phone: phone('228', '000'), operator: 'moov_money' },
    { create: { currency: 'kes', allowed_operators: ['mpesa', 'airtel_money'] }, phone: phone('254', '000'), operator: 'mpesa' },
    { create: { allowed_operators: ['wave', 'orange_money'] }, phone: phone('221', '000'), operator: 'wave' },
    { create: { amount: 250_000, currency: 'cdf', allowed_operators: ['orange_money', 'mpesa'] }, phone: phone('243', '000'), operator: 'orange_money' },
    { create: { currency: 'usd', allowed_operators: ['airtel_money', 'mpesa'] }, phone: phone('243', '000'), operator: 'airtel_money' },
  ];
  for (const c of cases) {
    const res = await operatorChosen(key, c.create, { phone_number: c.phone });
    t.is(res.status, 200, res.text);
    t.is(res.body.payment_details.operator, c.operator, `${c.phone} with ${JSON.stringify(c.create)}`);
    t.is(res.body.status, 'requires_action');
  }
});

test('the operator of a confirm: named, else selected_operator; refused when none can be chosen', async (t) => {
  const key = await service.issueKey(uniqueName('operator'));
  // Safaricom's prefix would predict mpesa: selected_operator wins over the prediction.
  const selected = await operatorChosen(key, { currency: 'kes', selected_operator: 'airtel_money' }, { phone_number: '+254722000000' });
  t.is(selected.status, 200, selected.text);
  t.is(selected.body.payment_details.operator, 'airtel_money', 'selected_operator wins over the prediction');
  const named = await operatorChosen(key, { selected_operator: 'mpesa' }, { operator: 'wave', phone_number: phone('225', '000') });
  t.is(named.body.payment_details.operator, 'wave', 'a named operator wins over selected_operator');

  const refusals: Array<{ create: Record<string, unknown>; body: Record<string, unknown>; code: string; param: string }> = [
    { create: {}, body: { phone_number: '+15555550000' }, code: 'operator_invalid', param: 'operator' },
    { create: { allowed_operators: ['wave'] }, body: { phone_number: phone('254', '000') }, code: 'operator_invalid', param: 'operator' },
    { create: { allowed_operators: ['wave'] }, body: { operator: 'mpesa', phone_number: phone('254', '000') }, code: 'operator_invalid', param: 'operator' },
    { create: { automatic_operator: false }, body: { phone_number: phone('254', '000') }, code: 'parameter_missing', param: 'operator' },
    { create: {}, body: { operator: 'paypal', phone_number: phone('254', '000') }, code: 'operator_invalid', param: 'operator' },
    { create: {}, body: { operator: 'mpesa', phone_number: '0712345678' }, code: 'phone_number_invalid', param: 'phone_number' },
    { create: {}, body: { operator: 'mpesa', phone_number: '+254 712 345 678' }, code: 'phone_number_invalid', param: 'phone_number' },
    { create: {}, body: { operator: 'mpesa' }, code: 'parameter_missing', param: 'phone_number' },
    { create: {}, body: { operator: 'wave', phone_number: phone('221', '000'), return_url: 'javascript:alert(1)' }, code: 'url_invalid', param: 'return_url' },
    { create: {}, body: { operator: 'mpesa', phone_number: phone('254', '000'), tip: 5 }, code: 'parameter_unknown', param: 'tip' },
  ];
  for (const r of refusals) {
    const pi = await createIntent(service, key, r.create);
    const res = await confirm(service, key, pi.id, r.body);
    t.is(res.status, 400, `${JSON.stringify(r.body)}: ${res.text}`);
    t.like(res.body.error, { type: 'invalid_request_error', code: r.code, param: r.param }, JSON.stringify(r.body));
    t.like(await retrieve(service, key, pi.id), { status: 'new', payment_details: null, last_payment_error: null });
  }
  const listing = await listAllEvents(service, key);
  t.true(listing.every((e) => e.type === 'payment_intent.created' || e.data.object.id === selected.body.id || e.data.object.id === named.body.id), 'a refused confirm records no event');
});

test('form-encoded confirm, update and cancel work as their JSON bodies', async (t) => {
  const key = await service.issueKey(uniqueName('form'));
  const pi = await createIntent(service, key);
  const number = phone('225', '000');
  const confirmed = await postForm(
    key,
    `${PI}/${pi.id}/confirm`,
    `operator=wave&phone_number=${encodeURIComponent(number)}&return_url=${encodeURIComponent('https://shop.example/back?x=1')}`,
  );
  t.is(confirmed.status, 200, confirmed.text);
  t.like(confirmed.body, { status: 'requires_action', next_action: { type: 'redirect_to_url', redirect_to_url: { return_url: 'https://shop.example/back?x=1' } } });

  const updated = await postForm(key, `${PI}/${pi.id}`, 'description=form+order&metadata[order]=42');
  t.is(updated.status, 200, updated.text);
  t.like(updated.body, { status: 'requires_action', description: 'form order', metadata: { order: '42' } });

  const canceled = await postForm(key, `${PI}/${pi.id}/cancel`, 'cancellation_reason=requested_by_customer');
  t.is(canceled.status, 200, canceled.text);
  t.like(canceled.body, { status: 'canceled', cancellation_reason: 'requested_by_customer', next_action: null });

  const bad = await postForm(key, `${PI}/${(await createIntent(service, key)).id}/confirm`, 'operator=mpesa&phone_number=12');
  t.is(bad.status, 400);
  t.like(bad.body.error, { code: 'phone_number_invalid', param: 'phone_number' });
  const otpNumber = await postForm(key, `${PI}/${(await createIntent(service, key)).id}/confirm`, `operator=orange_money&phone_number=${encodeURIComponent(number)}&otp=123456`);
  t.is(otpNumber.status, 200, `a form value is a string, so a numeric code is one: ${otpNumber.text}`);
  t.is(otpNumber.body.status, 'processing');
});

test('an unknown intent: 404 on confirm, cancel and update, with nothing enqueued or recorded', async (t) => {
  const project = uniqueName('missing');
  const [key, otherKey] = await Promise.all([service.issueKey(project), service.issueKey(uniqueName('other'))]);
  const foreign = await createIntent(service, otherKey);
  const unknown = 'pi_00VbYV85n9aIzXB1ggNYQfQ';
  const requests = (id: string) =>
    [
      [`${PI}/${id}/confirm`, { operator: 'mpesa', phone_number: phone('254', '000') }],
      [`${PI}/${id}/cancel`, {}],
      [`${PI}/${id}`, { description: 'x' }],
    ] as const;
  for (const id of [unknown, foreign.id]) {
    for (const [path, body] of requests(id)) {
      const plain = await service.request('POST', path, { key, body });
      const keyed = await service.request('POST', path, { key, body, headers: { 'Idempotency-Key': `missing-${path}` } });
      for (const res of [plain, keyed]) {
        t.is(res.status, 404, `${path}: ${res.text}`);
        t.like(res.body.error, { type: 'invalid_request_error', code: 'resource_missing', param: 'id' });
      }
    }
  }
  // Unkeyed jobs stay in the queue after they complete (keyed ones leave at once): none has either target.
  const jobs = await creates.getJobs(['waiting', 'active', 'delayed', 'completed', 'failed']);
  t.true(jobs.length > 0, 'the queue keeps completed jobs');
  t.deepEqual(jobs.filter((j) => [unknown, foreign.id].includes((j.data as { target?: string }).target ?? '')).map((j) => j.id), [], 'no job was enqueued');
  const db = await service.db();
  t.is(await db.collection('idempotency_records').countDocuments({ project }), 0, 'no answer was recorded');
  t.like(await retrieve(service, otherKey, foreign.id), { status: 'new', description: foreign.description });
  // The key was not spent: it works for a request that finds its intent.
  const mine = await createIntent(service, key);
  const reused = await service.request('POST', `${PI}/${mine.id}/cancel`, { key, body: {}, headers: { 'Idempotency-Key': `missing-${PI}/${unknown}/cancel` } });
  t.is(reused.status, 200, reused.text);
  t.is(reused.headers.get('idempotent-replayed'), null);
});

test('Idempotency-Key on confirm and cancel: the first answer replayed byte for byte, the change made once', async (t) => {
  const key = await service.issueKey(uniqueName('idem'));
  const pi = await createIntent(service, key);
  const body = { operator: 'mtn_momo', phone_number: phone('225', '000') };
  const [a, b] = await Promise.all([
    confirm(service, key, pi.id, body, { 'Idempotency-Key': 'confirm-1' }),
    confirm(service, key, pi.id, body, { 'Idempotency-Key': 'confirm-1' }),
  ]);
  const first = a.status === 200 ? a : b;
  t.is(first.status, 200, first.text);
  t.true([200, 409].includes(a.status) && [200, 409].includes(b.status), `${a.status} ${b.status}`);
  const replay = await confirm(service, key, pi.id, { phone_number: body.phone_number, operator: 'mtn_momo' }, { 'Idempotency-Key': 'confirm-1' });
  t.is(replay.status, 200);
  t.is(replay.text, first.text, 'byte for byte, key order of the body notwithstanding');
  t.is(replay.headers.get('idempotent-replayed'), 'true');

  const reused = await confirm(service, key, pi.id, { ...body, phone_number: phone('225', '001') }, { 'Idempotency-Key': 'confirm-1' });
  t.is(reused.status, 400);
  t.like(reused.body.error, { type: 'idempotency_error', code: 'idempotency_key_reused' });

  const canceled = await cancel(service, key, pi.id, { cancellation_reason: 'duplicate' }, { 'Idempotency-Key': 'cancel-1' });
  t.is(canceled.status, 200, canceled.text);
  t.like(canceled.body, { status: 'canceled', cancellation_reason: 'duplicate' });
  // Replays keep their first answer though the intent has moved on since.
  const confirmAgain = await confirm(service, key, pi.id, body, { 'Idempotency-Key': 'confirm-1' });
  t.is(confirmAgain.text, first.text);
  t.is(confirmAgain.body.status, 'requires_action');
  const cancelAgain = await cancel(service, key, pi.id, { cancellation_reason: 'duplicate' }, { 'Idempotency-Key': 'cancel-1' });
  t.is(cancelAgain.text, canceled.text);
  t.is(cancelAgain.headers.get('idempotent-replayed'), 'true');
  // A refusal inside the job is an answer too: recorded and replayed.
  const late = await confirm(service, key, pi.id, body, { 'Idempotency-Key': 'confirm-2' });
  t.is(late.status, 400);
  t.is(late.body.error.code, 'payment_intent_unexpected_state');
  const lateAgain = await confirm(service, key, pi.id, body, { 'Idempotency-Key': 'confirm-2' });
  t.is(lateAgain.text, late.text);
  t.is(lateAgain.headers.get('idempotent-replayed'), 'true');

  const types = eventsOf(await listAllEvents(service, key), pi.id).map((e) => e.type);
  t.deepEqual(types, ['payment_intent.created', 'payment_intent.requires_action', 'payment_intent.canceled'], 'each change once');
  t.like(await waitForStatus(service, key, pi.id, 'canceled'), { cancellation_reason: 'duplicate', next_action: null });
});
