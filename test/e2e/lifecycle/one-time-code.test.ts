/**
 * Orange Money's one-time code, black-box: a confirm without `otp` asks for one
 * (`otp_required`, the USSD code to dial); a wrong code is declined at once (402
 * `invalid_otp`) and the intent is back in `new`, ready for another confirm; the
 * right code (`123456` in test mode) goes to `processing`, then `succeeded`.
 */
import test from 'ava';
import { uniqueName } from '../../helpers/service.js';
import { createEndpoint } from '../../helpers/webhook-fixtures.js';
import {
  confirm,
  createIntent,
  listAllEvents,
  eventsOf,
  phone,
  retrieve,
  waitForDeliveries,
  waitForStatus,
} from '../../helpers/payment-intent-lifecycle.js';
import { useService } from '../../helpers/use-service.js';

const e2e = useService(test, { workers: 1, env: { WRITE_TIMEOUT_MS: '30000', SIMULATOR_APPROVAL_DELAY_MS: '100', SIMULATOR_PROCESSING_DELAY_MS: '150' }, receiver: true });

const ORANGE = phone('225', '000');

async function types(key: string, id: string): Promise<string[]> {
  return eventsOf(await listAllEvents(e2e.service, key), id).map((e) => e.type.replace('payment_intent.', ''));
}

test('otp_required, a wrong code (402 invalid_otp, back to new), then a new attempt with the right code succeeds', async (t) => {
  const project = uniqueName('otp');
  const key = await e2e.service.issueKey(project);
  const endpoint = await createEndpoint(e2e.service, key, e2e.receiver.url(`/${project}`));
  const pi = await createIntent(e2e.service, key, { amount: 5000, selected_operator: 'orange_money', automatic_operator: false });

  const asked = await confirm(e2e.service, key, pi.id, { phone_number: ORANGE });
  t.is(asked.status, 200, asked.text);
  t.like(asked.body, { status: 'requires_action', last_payment_error: null, payment_details: { operator: 'orange_money', phone_number: '+225*******000' } });
  t.deepEqual(Object.keys(asked.body.next_action).sort(), ['otp_required', 'type']);
  t.like(asked.body.next_action, { type: 'otp_required', otp_required: { ussd_code: '#144*82#', otp_length: 6 } });
  t.regex(asked.body.next_action.otp_required.display_message, /\S/);

  // In requires_action a confirm may only bring the code.
  const noCode = await confirm(e2e.service, key, pi.id, { phone_number: ORANGE });
  t.is(noCode.status, 400, noCode.text);
  t.is(noCode.body.error.code, 'payment_intent_unexpected_state');
  t.regex(noCode.body.error.message, /requires_action/);

  const wrong = await confirm(e2e.service, key, pi.id, { phone_number: ORANGE, otp: '654321' }, { 'Idempotency-Key': 'wrong-otp' });
  t.is(wrong.status, 402, wrong.text);
  t.like(wrong.body.error, {
    type: 'operator_error',
    code: 'payment_declined',
    operator_decline_code: 'invalid_otp',
    payment_intent: { id: pi.id, status: 'new', next_action: null, last_payment_error: { code: 'payment_declined', operator: 'orange_money', operator_decline_code: 'invalid_otp' } },
  });
  t.is(wrong.body.error.request_id, wrong.headers.get('request-id'));
  const declined = await retrieve(e2e.service, key, pi.id);
  t.like(declined, { status: 'new', next_action: null, last_payment_error: { operator_decline_code: 'invalid_otp' } });

  // The 402 is recorded: the same request with the same key replays it, and nothing happens twice.
  const replay = await confirm(e2e.service, key, pi.id, { phone_number: ORANGE, otp: '654321' }, { 'Idempotency-Key': 'wrong-otp' });
  t.is(replay.status, 402);
  t.is(replay.text, wrong.text, 'byte for byte');
  t.is(replay.headers.get('idempotent-replayed'), 'true');
  t.not(replay.headers.get('request-id'), wrong.headers.get('request-id'));

  // A new attempt: the code is asked again, the previous error cleared.
  const again = await confirm(e2e.service, key, pi.id, { phone_number: ORANGE });
  t.is(again.status, 200, again.text);
  t.like(again.body, { status: 'requires_action', last_payment_error: null, next_action: { type: 'otp_required' } });
  const right = await confirm(e2e.service, key, pi.id, { phone_number: ORANGE, otp: '123456' });
  t.is(right.status, 200, right.text);
  t.like(right.body, { status: 'processing', next_action: null, last_payment_error: null });

  const paid = await waitForStatus(e2e.service, key, pi.id, 'succeeded');
  t.like(paid, { next_action: null, last_payment_error: null });
  t.deepEqual(await types(key, pi.id), ['created', 'requires_action', 'payment_failed', 'requires_action', 'processing', 'succeeded']);
  const listed = eventsOf(await listAllEvents(e2e.service, key), pi.id);
  const deliveries = await waitForDeliveries(e2e.receiver, `/${project}`, endpoint.secret, listed.map((e) => e.id));
  t.deepEqual(deliveries.map((d) => d.webhookId).sort(), listed.map((e) => e.id).sort(), 'each event once, signed');
  const failed = deliveries.find((d) => d.event.type === 'payment_intent.payment_failed')!;
  t.like(failed.event.data.object.last_payment_error, { operator_decline_code: 'invalid_otp' });
});

test('the code in the first confirm: the right one goes straight to processing, a wrong one is a 402', async (t) => {
  const key = await e2e.key('otp-once');
  const [good, bad] = await Promise.all([createIntent(e2e.service, key), createIntent(e2e.service, key)]);

  const right = await confirm(e2e.service, key, good.id, { operator: 'orange_money', phone_number: ORANGE, otp: '123456' });
  t.is(right.status, 200, right.text);
  t.like(right.body, { status: 'processing', next_action: null });
  await waitForStatus(e2e.service, key, good.id, 'succeeded');
  t.deepEqual(await types(key, good.id), ['created', 'processing', 'succeeded'], 'no action was needed');

  const wrong = await confirm(e2e.service, key, bad.id, { operator: 'orange_money', phone_number: ORANGE, otp: '000000' });
  t.is(wrong.status, 402, wrong.text);
  t.like(wrong.body.error, { code: 'payment_declined', operator_decline_code: 'invalid_otp', payment_intent: { status: 'new' } });
  t.deepEqual(await types(key, bad.id), ['created', 'payment_failed']);
});

test('a code given to an operator without one-time codes, or a malformed code, is refused and changes nothing', async (t) => {
  const key = await e2e.key('otp-refused');
  const pi = await createIntent(e2e.service, key);

  const notOrange = await confirm(e2e.service, key, pi.id, { operator: 'mtn_momo', phone_number: ORANGE, otp: '123456' });
  t.is(notOrange.status, 400, notOrange.text);
  t.like(notOrange.body.error, { type: 'invalid_request_error', code: 'parameter_invalid', param: 'otp' });

  const empty = await confirm(e2e.service, key, pi.id, { operator: 'orange_money', phone_number: ORANGE, otp: '' });
  t.is(empty.status, 400, empty.text);
  t.like(empty.body.error, { code: 'parameter_invalid_string', param: 'otp' });

  const number = await confirm(e2e.service, key, pi.id, { operator: 'orange_money', phone_number: ORANGE, otp: 123456 });
  t.is(number.status, 400, number.text);
  t.is(number.body.error.param, 'otp');

  t.like(await retrieve(e2e.service, key, pi.id), { status: 'new', next_action: null, last_payment_error: null, payment_details: null });
  t.deepEqual(await types(key, pi.id), ['created']);
});
