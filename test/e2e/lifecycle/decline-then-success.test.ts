/**
 * A declined attempt leaves the intent payable (DESIGN.md section 7, as Stripe):
 * back in `new` with `last_payment_error`, then a new confirm with another number
 * starts a new attempt that succeeds. The first attempt's answers never touch the
 * second, and every event of both attempts is listed and delivered once, signed.
 */
import test from 'ava';
import { QUEUES } from '../../../common/jobs.js';
import { uniqueName, untilIdle } from '../../helpers/service.js';
import { createEndpoint } from '../../helpers/webhook-fixtures.js';
import {
  confirm,
  createIntent,
  eventsOf,
  listAllEvents,
  masked,
  phone,
  retrieve,
  waitForDeliveries,
  waitForStatus,
} from '../../helpers/payment-intent-lifecycle.js';
import { useService } from '../../helpers/use-service.js';

const e2e = useService(test, { workers: 1, env: { WRITE_TIMEOUT_MS: '30000', SIMULATOR_APPROVAL_DELAY_MS: '100', SIMULATOR_PROCESSING_DELAY_MS: '150' }, receiver: true });

test('declined with insufficient_funds (003), confirmed again with a 000 number: succeeded', async (t) => {
  const project = uniqueName('again');
  const key = await e2e.service.issueKey(project);
  const endpoint = await createEndpoint(e2e.service, key, e2e.receiver.url(`/${project}`));
  const pi = await createIntent(e2e.service, key, { amount: 3000, currency: 'kes', allowed_operators: ['mpesa', 'airtel_money'] });
  const poor = phone('254', '003');
  const rich = phone('254', '000', 1);

  const first = await confirm(e2e.service, key, pi.id, { operator: 'mpesa', phone_number: poor });
  t.is(first.status, 200, first.text);
  t.is(first.body.status, 'requires_action');
  const declined = await waitForStatus(e2e.service, key, pi.id, 'new', 30_000, (p) => p.last_payment_error !== null);
  t.deepEqual(declined.last_payment_error, {
    code: 'payment_declined',
    operator: 'mpesa',
    operator_decline_code: 'insufficient_funds',
    message: declined.last_payment_error?.message ?? '',
  });
  t.is(declined.next_action, null);

  const second = await confirm(e2e.service, key, pi.id, { operator: 'airtel_money', phone_number: rich });
  t.is(second.status, 200, second.text);
  t.like(second.body, {
    status: 'requires_action',
    last_payment_error: null,
    payment_details: { operator: 'airtel_money', phone_number: masked(rich) },
    next_action: { type: 'await_phone_approval', await_phone_approval: { operator: 'airtel_money', phone_number: masked(rich) } },
  });
  const paid = await waitForStatus(e2e.service, key, pi.id, 'succeeded');
  t.like(paid, { last_payment_error: null, next_action: null, payment_details: { operator: 'airtel_money', phone_number: masked(rich) } });

  await untilIdle(e2e.service, [QUEUES.writes, QUEUES.intents, QUEUES.events]); // a late answer of the first attempt has run by now
  const events = eventsOf(await listAllEvents(e2e.service, key), pi.id);
  t.deepEqual(
    events.map((e) => e.type.replace('payment_intent.', '')),
    ['created', 'requires_action', 'processing', 'payment_failed', 'requires_action', 'processing', 'succeeded'],
  );
  t.is((await retrieve(e2e.service, key, pi.id)).status, 'succeeded', 'still succeeded');
  t.like(events[3]!.data.object, { status: 'new', last_payment_error: { operator: 'mpesa', operator_decline_code: 'insufficient_funds' } });
  t.like(events[4]!.data.object, { status: 'requires_action', last_payment_error: null, payment_details: { operator: 'airtel_money' } });
  const deliveries = await waitForDeliveries(e2e.receiver, `/${project}`, endpoint.secret, events.map((e) => e.id));
  t.deepEqual(deliveries.map((d) => d.webhookId).sort(), events.map((e) => e.id).sort());
});

test('refused at once (005, 402), then confirmed again with a 000 number: succeeded', async (t) => {
  const key = await e2e.key('again402');
  const pi = await createIntent(e2e.service, key);

  const refused = await confirm(e2e.service, key, pi.id, { operator: 'mtn_momo', phone_number: phone('225', '005') });
  t.is(refused.status, 402, refused.text);
  t.is(refused.body.error.operator_decline_code, 'payer_not_found');
  t.like(refused.body.error.payment_intent, { status: 'new', last_payment_error: { operator_decline_code: 'payer_not_found' } });

  const retried = await confirm(e2e.service, key, pi.id, { operator: 'mtn_momo', phone_number: phone('225', '000') });
  t.is(retried.status, 200, retried.text);
  t.like(retried.body, { status: 'requires_action', last_payment_error: null });
  await waitForStatus(e2e.service, key, pi.id, 'succeeded');
  const events = eventsOf(await listAllEvents(e2e.service, key), pi.id);
  t.deepEqual(
    events.map((e) => e.type.replace('payment_intent.', '')),
    ['created', 'payment_failed', 'requires_action', 'processing', 'succeeded'],
  );
});
