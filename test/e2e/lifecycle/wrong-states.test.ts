/**
 * An operation the intent's status does not allow is refused with 400
 * `payment_intent_unexpected_state`, naming the status, and changes nothing: no
 * event, no new attempt. Settling takes a few seconds here (a long
 * SIMULATOR_PROCESSING_DELAY_MS), so an intent can be caught in `processing`.
 */
import test, { type ExecutionContext } from 'ava';
import { type ApiResponse } from '../../helpers/service.js';
import {
  cancel,
  confirm,
  createIntent,
  eventsOf,
  listAllEvents,
  phone,
  retrieve,
  update,
  waitForStatus,
  type Intent,
} from '../../helpers/payment-intent-lifecycle.js';
import { useService } from '../../helpers/use-service.js';

const PROCESSING_MS = 8000;

const e2e = useService(test, {
  workers: 1,
  env: { WRITE_TIMEOUT_MS: '30000', SIMULATOR_APPROVAL_DELAY_MS: '100', SIMULATOR_PROCESSING_DELAY_MS: String(PROCESSING_MS) },
});

function unexpected(t: ExecutionContext, res: ApiResponse, status: string, what: string, param?: string): void {
  t.is(res.status, 400, `${what}: ${res.text}`);
  t.like(res.body.error, { type: 'invalid_request_error', code: 'payment_intent_unexpected_state' }, what);
  t.true((res.body.error.message as string).includes(status), `${what}: the message names ${status}: ${res.body.error.message}`);
  t.is(res.body.error.param, param, what);
  t.regex(res.body.error.doc_url, /\/docs\/errors#payment_intent_unexpected_state$/);
}

/** The intent and its event types, to compare before and after a refused request. */
async function snapshot(key: string, id: string): Promise<{ pi: Intent; types: string[] }> {
  return { pi: await retrieve(e2e.service, key, id), types: eventsOf(await listAllEvents(e2e.service, key), id).map((e) => e.type) };
}

test('processing: cancel, confirm and an amount update are refused; once succeeded, confirm, cancel and any update are', async (t) => {
  const key = await e2e.key('states');
  const pi = await createIntent(e2e.service, key, { amount: 4200 });
  const number = phone('225', '000');
  const paying = await confirm(e2e.service, key, pi.id, { operator: 'orange_money', phone_number: number, otp: '123456' });
  t.is(paying.status, 200, paying.text);
  t.is(paying.body.status, 'processing');
  const inProcessing = await snapshot(key, pi.id);

  unexpected(t, await cancel(e2e.service, key, pi.id, { cancellation_reason: 'requested_by_customer' }), 'processing', 'cancel in processing');
  unexpected(t, await confirm(e2e.service, key, pi.id, { operator: 'orange_money', phone_number: number, otp: '123456' }), 'processing', 'confirm in processing');
  unexpected(t, await update(e2e.service, key, pi.id, { amount: 1 }), 'processing', 'amount in processing', 'amount');
  t.deepEqual(await snapshot(key, pi.id), inProcessing, 'nothing changed while processing');

  const paid = await waitForStatus(e2e.service, key, pi.id, 'succeeded', PROCESSING_MS + 30_000);
  t.is(paid.amount, 4200);
  const done = await snapshot(key, pi.id);
  t.deepEqual(done.types, ['payment_intent.created', 'payment_intent.processing', 'payment_intent.succeeded']);

  unexpected(t, await confirm(e2e.service, key, pi.id, { operator: 'mtn_momo', phone_number: number }), 'succeeded', 'confirm when succeeded');
  unexpected(t, await cancel(e2e.service, key, pi.id), 'succeeded', 'cancel when succeeded');
  unexpected(t, await update(e2e.service, key, pi.id, { description: 'too late' }), 'succeeded', 'description when succeeded');
  unexpected(t, await update(e2e.service, key, pi.id, { metadata: { a: 'b' } }), 'succeeded', 'metadata when succeeded');
  t.deepEqual(await snapshot(key, pi.id), done, 'nothing changed once succeeded');
});

test('requires_action: amount, currency, operators and expires_at are refused, a plain confirm too; canceled is final', async (t) => {
  const key = await e2e.key('states-ra');
  const pi = await createIntent(e2e.service, key, { amount: 900, currency: 'kes' });
  const number = phone('254', '010'); // the operator never answers: it stays in requires_action
  const confirmed = await confirm(e2e.service, key, pi.id, { operator: 'mpesa', phone_number: number });
  t.is(confirmed.status, 200, confirmed.text);
  t.is(confirmed.body.status, 'requires_action');
  const waiting = await snapshot(key, pi.id);

  const later = Math.floor(Date.now() / 1000) + 7200;
  for (const [field, value] of [
    ['amount', 901],
    ['currency', 'xof'],
    ['allowed_operators', ['mpesa']],
    ['selected_operator', 'mpesa'],
    ['automatic_operator', false],
    ['expires_at', later],
  ] as const) {
    unexpected(t, await update(e2e.service, key, pi.id, { [field]: value }), 'requires_action', `${field} in requires_action`, field);
  }
  unexpected(t, await confirm(e2e.service, key, pi.id, { operator: 'mpesa', phone_number: number }), 'requires_action', 'a second confirm without otp');
  t.deepEqual(await snapshot(key, pi.id), waiting, 'nothing changed');

  const canceled = await cancel(e2e.service, key, pi.id, { cancellation_reason: 'fraudulent' });
  t.is(canceled.status, 200, canceled.text);
  t.like(canceled.body, { status: 'canceled', cancellation_reason: 'fraudulent', next_action: null });
  const final = await snapshot(key, pi.id);
  unexpected(t, await cancel(e2e.service, key, pi.id), 'canceled', 'cancel when canceled');
  unexpected(t, await confirm(e2e.service, key, pi.id, { operator: 'mpesa', phone_number: phone('254', '000') }), 'canceled', 'confirm when canceled');
  unexpected(t, await update(e2e.service, key, pi.id, { description: 'x' }), 'canceled', 'update when canceled');
  t.deepEqual(await snapshot(key, pi.id), final);
  t.deepEqual(final.types, ['payment_intent.created', 'payment_intent.requires_action', 'payment_intent.canceled']);
});

test('an invalid cancellation_reason is refused before anything happens', async (t) => {
  const key = await e2e.key('states-reason');
  const pi = await createIntent(e2e.service, key);
  const res = await cancel(e2e.service, key, pi.id, { cancellation_reason: 'bored' });
  t.is(res.status, 400);
  t.like(res.body.error, { code: 'parameter_invalid', param: 'cancellation_reason' });
  t.is((await retrieve(e2e.service, key, pi.id)).status, 'new');
  const ok = await cancel(e2e.service, key, pi.id, { cancellation_reason: null });
  t.is(ok.status, 200, ok.text);
  t.like(ok.body, { status: 'canceled', cancellation_reason: null });
  t.true(ok.body.canceled_at >= pi.created);
});
