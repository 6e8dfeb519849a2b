/**
 * Live mode has no simulator and, in this build, no operator connector: a confirm
 * with a live key is refused with 400 `operator_not_configured` (no fake live
 * payment), whatever the operator and whatever the phone number, and nothing
 * changes: the intent stays `new` with no attempt, and no event is recorded. What
 * needs no operator (update, cancel) works as in test mode.
 */
import test from 'ava';
import { uniqueName } from '../../helpers/service.js';
import { cancel, confirm, createIntent, eventsOf, listAllEvents, phone, retrieve, update } from '../../helpers/payment-intent-lifecycle.js';
import { useService } from '../../helpers/use-service.js';

const e2e = useService(test, { workers: 1, env: { WRITE_TIMEOUT_MS: '30000', SIMULATOR_APPROVAL_DELAY_MS: '50', SIMULATOR_PROCESSING_DELAY_MS: '50' } });

test('a live confirm without a connector: 400 operator_not_configured for every operator, and nothing changes', async (t) => {
  const project = uniqueName('live');
  const [liveKey, testKey] = await Promise.all([e2e.service.issueKey(project, true), e2e.service.issueKey(project, false)]);
  const pi = await createIntent(e2e.service, liveKey, { amount: 10_000 });
  const inKes = await createIntent(e2e.service, liveKey, { amount: 10_000, currency: 'kes' });
  t.true(pi.livemode);
  const before = await retrieve(e2e.service, liveKey, pi.id);
  const beforeKes = await retrieve(e2e.service, liveKey, inKes.id);

  // Each in a currency the operator takes in that country: only the missing connector refuses.
  const attempts: Array<{ intent: string; body: Record<string, unknown>; operator: string }> = [
    { intent: pi.id, body: { operator: 'mtn_momo', phone_number: phone('225', '000') }, operator: 'mtn_momo' },
    { intent: inKes.id, body: { operator: 'mpesa', phone_number: phone('254', '005') }, operator: 'mpesa' },
    { intent: pi.id, body: { operator: 'wave', phone_number: phone('221', '000'), return_url: 'https://shop.example/back' }, operator: 'wave' },
    { intent: pi.id, body: { operator: 'orange_money', phone_number: phone('225', '000') }, operator: 'orange_money' },
    { intent: pi.id, body: { operator: 'orange_money', phone_number: phone('225', '000'), otp: '123456' }, operator: 'orange_money' },
    { intent: inKes.id, body: { phone_number: phone('254', '000') }, operator: 'airtel_money' },
    { intent: pi.id, body: { phone_number: phone('228', '000') }, operator: 'moov_money' },
  ];
  for (const { intent, body, operator } of attempts) {
    const res = await confirm(e2e.service, liveKey, intent, body, { 'Idempotency-Key': `live-${JSON.stringify(body)}` });
    t.is(res.status, 400, `${JSON.stringify(body)}: ${res.text}`);
    t.like(res.body.error, { type: 'invalid_request_error', code: 'operator_not_configured', param: 'operator' });
    t.regex(res.body.error.message, new RegExp(operator));
    t.is(res.body.error.payment_intent, undefined);
  }
  t.deepEqual(await retrieve(e2e.service, liveKey, pi.id), before, 'still new, no attempt, no error');
  t.deepEqual(await retrieve(e2e.service, liveKey, inKes.id), beforeKes, 'still new, no attempt, no error');
  const liveEvents = await listAllEvents(e2e.service, liveKey);
  t.deepEqual(eventsOf(liveEvents, pi.id).map((e) => e.type), ['payment_intent.created'], 'no new event');
  t.true(liveEvents.every((e) => e.livemode));

  // The live intent does not exist for the test key of the same project.
  const fromTest = await confirm(e2e.service, testKey, pi.id, { operator: 'mtn_momo', phone_number: phone('225', '000') });
  t.is(fromTest.status, 404, fromTest.text);
  t.deepEqual(await listAllEvents(e2e.service, testKey), []);
});

test('a live intent can still be updated and canceled; its events stay live', async (t) => {
  const liveKey = await e2e.key('live-cancel', true);
  const pi = await createIntent(e2e.service, liveKey);
  const updated = await update(e2e.service, liveKey, pi.id, { description: 'live order', amount: 4321 });
  t.is(updated.status, 200, updated.text);
  t.like(updated.body, { description: 'live order', amount: 4321, livemode: true });
  const canceled = await cancel(e2e.service, liveKey, pi.id, { cancellation_reason: 'requested_by_customer' });
  t.is(canceled.status, 200, canceled.text);
  t.like(canceled.body, { status: 'canceled', livemode: true, cancellation_reason: 'requested_by_customer' });
  const events = eventsOf(await listAllEvents(e2e.service, liveKey), pi.id);
  t.deepEqual(events.map((e) => e.type), ['payment_intent.created', 'payment_intent.canceled']);
  t.true(events.every((e) => e.livemode && e.data.object.livemode));
});
