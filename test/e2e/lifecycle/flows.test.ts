/**
 * Every operator flow with every magic suffix (DESIGN.md section 7), black-box: real
 * api and worker processes, the simulator's delays shortened. Each intent reaches
 * the documented status with the documented `next_action` and `last_payment_error`;
 * its events are listed by `/v1/events` in the order they happened, each with the
 * intent as it was after the transition; and a subscribed receiver gets each event
 * once, signed (verified with the `standardwebhooks` package), byte for byte what
 * `/v1/events/{id}` shows. The redirect flow's page is driven here over plain HTTP;
 * checkout-browser.test.ts drives it in Chromium.
 */
import test, { type ExecutionContext } from 'ava';
import { QUEUES } from '../../../common/jobs.js';
import { uniqueName, untilIdle, type ApiResponse } from '../../helpers/service.js';
import { createEndpoint } from '../../helpers/webhook-fixtures.js';
import {
  confirm,
  createIntent,
  eventsOf,
  listAllEvents,
  masked,
  phone,
  listAllIntents,
  mapLimit,
  waitForDeliveredTypes,
  waitForDeliveries,
  type Intent,
  type IntentEvent,
} from '../../helpers/payment-intent-lifecycle.js';
import { useService } from '../../helpers/use-service.js';

const e2e = useService(test, {
  workers: 1,
  env: { WRITE_TIMEOUT_MS: '30000', SIMULATOR_APPROVAL_DELAY_MS: '100', SIMULATOR_PROCESSING_DELAY_MS: '100', SIMULATOR_SLOW_DELAY_MS: '1500' },
  receiver: true,
});

/**
 * Requests in flight per test. On FerretDB every read and update scans its
 * collection, so the service confirms a few dozen intents a second here: an
 * unbounded burst of confirms would only measure the queue's timeout.
 */
const CONCURRENCY = 4;

const SUFFIXES = ['000', '001', '002', '003', '004', '005', '006', '007', '008', '009', '010', '011', '427'] as const;
type Suffix = (typeof SUFFIXES)[number];

/** What the simulator does with each suffix: the decline code, and at which step. */
const DECLINES: Partial<Record<Suffix, { code: string; stage: 'confirm' | 'payer' | 'processing' }>> = {
  '001': { code: 'payer_declined', stage: 'payer' },
  '002': { code: 'approval_timeout', stage: 'payer' },
  '003': { code: 'insufficient_funds', stage: 'processing' },
  '004': { code: 'incorrect_pin', stage: 'payer' },
  '005': { code: 'payer_not_found', stage: 'confirm' },
  '006': { code: 'limit_exceeded', stage: 'processing' },
  '007': { code: 'payer_account_blocked', stage: 'processing' },
  '008': { code: 'operator_unavailable', stage: 'processing' },
  '009': { code: 'generic_decline', stage: 'processing' },
};

const E = (...types: string[]) => ['created', ...types].map((type) => `payment_intent.${type}`);

/**
 * The events each suffix gives, in order, and the status it ends in, for a flow whose
 * payer step comes before processing (phone approval, and Pay on the checkout page).
 * With a one-time code the payer's step is the code itself: every decline but the
 * immediate one comes after processing.
 */
function expected(suffix: Suffix, flow: 'payer_step' | 'otp'): { types: string[]; status: string; decline: string | null } {
  const decline = DECLINES[suffix];
  if (suffix === '010') return { types: E('requires_action'), status: 'requires_action', decline: null };
  if (!decline) return { types: E('requires_action', 'processing', 'succeeded'), status: 'succeeded', decline: null };
  if (decline.stage === 'confirm') return { types: E('payment_failed'), status: 'new', decline: decline.code };
  if (decline.stage === 'payer' && flow === 'payer_step') return { types: E('requires_action', 'payment_failed'), status: 'new', decline: decline.code };
  return { types: E('requires_action', 'processing', 'payment_failed'), status: 'new', decline: decline.code };
}

interface Scenario {
  operator: string;
  suffix: Suffix;
  phoneNumber: string;
  intent: Intent;
  /** The first confirm's answer. */
  answer: ApiResponse;
}

/** A project of its own with an endpoint subscribed to everything. */
async function scope(name: string): Promise<{ key: string; path: string; secret: string }> {
  const project = uniqueName(name);
  const key = await e2e.service.issueKey(project);
  const path = `/${project}`;
  const endpoint = await createEndpoint(e2e.service, key, e2e.receiver.url(path));
  return { key, path, secret: endpoint.secret };
}

/** The 402 of an operator that refused at once, with the intent back to `new` in the error. */
function assertDeclinedAtConfirm(t: ExecutionContext, s: Scenario): void {
  const { answer } = s;
  t.is(answer.status, 402, `${s.operator} ${s.suffix}: ${answer.text}`);
  t.like(answer.body.error, { type: 'operator_error', code: 'payment_declined', operator_decline_code: 'payer_not_found' });
  t.is(typeof answer.body.error.message, 'string');
  t.is(answer.body.error.request_id, answer.headers.get('request-id'));
  t.regex(answer.body.error.doc_url, /^http:\/\/127\.0\.0\.1:\d+\/docs\/errors#payment_declined$/);
  t.like(answer.body.error.payment_intent, {
    id: s.intent.id,
    status: 'new',
    next_action: null,
    last_payment_error: { code: 'payment_declined', operator: s.operator, operator_decline_code: 'payer_not_found' },
  });
}

/**
 * Waits until every scenario has its expected events listed, then checks the final
 * state, the events (order, types, the object each carries) and their deliveries.
 */
async function assertOutcomes(t: ExecutionContext, key: string, path: string, secret: string, scenarios: Scenario[], flow: 'payer_step' | 'otp'): Promise<void> {
  await waitForDeliveredTypes(e2e.receiver, path, new Map(scenarios.map((s) => [s.intent.id, expected(s.suffix, flow).types])));
  // A stray late transition (010 answering after all, a second success) has run by now.
  await untilIdle(e2e.service, [QUEUES.writes, QUEUES.intents, QUEUES.events]);
  const listing = await listAllEvents(e2e.service, key);
  const intents = await listAllIntents(e2e.service, key);
  t.deepEqual(
    listing.map((e) => e.id),
    [...listing].sort((a, b) => (a.id < b.id ? 1 : -1)).map((e) => e.id),
    '/v1/events lists newest first',
  );
  const allIds: string[] = [];
  for (const s of scenarios) {
    const want = expected(s.suffix, flow);
    const label = `${s.operator} ${s.suffix}`;
    const events = eventsOf(listing, s.intent.id);
    t.deepEqual(
      events.map((e) => e.type),
      want.types,
      `${label}: events in order`,
    );
    allIds.push(...events.map((e) => e.id));
    const pi = intents.get(s.intent.id)!;
    t.is(pi.status, want.status, label);
    if (want.decline) {
      t.deepEqual(pi.last_payment_error, {
        code: 'payment_declined',
        operator: s.operator,
        operator_decline_code: want.decline,
        message: pi.last_payment_error?.message ?? '',
      }, label);
      t.true((pi.last_payment_error?.message.length ?? 0) > 0, label);
    } else {
      t.is(pi.last_payment_error, null, label);
    }
    if (want.status !== 'requires_action') t.is(pi.next_action, null, `${label}: no action once the attempt ended`);
    t.deepEqual(pi.payment_details, { operator: s.operator, phone_number: masked(s.phoneNumber) }, label);
    assertEventObjects(t, label, events, pi);
  }
  t.is(new Set(allIds).size, allIds.length, 'event ids are unique');

  const deliveries = await waitForDeliveries(e2e.receiver, path, secret, allIds);
  const byId = new Map(listing.map((e) => [e.id, e] as const));
  const ours = deliveries.filter((d) => scenarios.some((s) => s.intent.id === d.event.data.object.id));
  t.deepEqual(ours.map((d) => d.webhookId).sort(), [...allIds].sort(), 'each event delivered exactly once, nothing else');
  for (const d of ours) t.deepEqual(d.event, byId.get(d.webhookId), `${d.event.type}: the delivery is the listed event`);
  // Byte for byte what the API shows, for one event of each type.
  const seen = new Set<string>();
  for (const d of ours) {
    if (seen.has(d.event.type)) continue;
    seen.add(d.event.type);
    const shown = await e2e.service.request('GET', `/v1/events/${d.webhookId}`, { key });
    t.is(d.body, shown.text, `${d.event.type}: delivered bytes`);
  }
}

/** Each event carries the intent as it was right after its transition. */
function assertEventObjects(t: ExecutionContext, label: string, events: IntentEvent[], final: Intent): void {
  for (const e of events) {
    const o = e.data.object;
    t.is(o.id, final.id);
    t.false(e.livemode);
    switch (e.type) {
      case 'payment_intent.created':
        t.like(o, { status: 'new', next_action: null, last_payment_error: null }, label);
        break;
      case 'payment_intent.requires_action':
        t.is(o.status, 'requires_action', label);
        t.not(o.next_action, null, `${label}: requires_action carries its next_action`);
        t.is(o.last_payment_error, null, label);
        break;
      case 'payment_intent.processing':
        t.like(o, { status: 'processing', next_action: null }, label);
        break;
      case 'payment_intent.succeeded':
        t.like(o, { status: 'succeeded', next_action: null, last_payment_error: null }, label);
        break;
      case 'payment_intent.payment_failed':
        t.like(o, { status: 'new', next_action: null }, label);
        t.deepEqual(o.last_payment_error, final.last_payment_error, label);
        break;
      default:
        t.fail(`${label}: unexpected event ${e.type}`);
    }
  }
  for (let i = 1; i < events.length; i++) t.true(events[i]!.created >= events[i - 1]!.created, `${label}: created times in order`);
}

/** Each operator in a country it serves, paid in a currency it takes there. */
const PHONE_OPERATORS = [
  { operator: 'mtn_momo', country: '225', currency: 'xof' },
  { operator: 'mpesa', country: '254', currency: 'kes' },
  { operator: 'airtel_money', country: '256', currency: 'ugx' },
  { operator: 'moov_money', country: '228', currency: 'xof' },
];

test('phone approval (mtn_momo, mpesa, airtel_money, moov_money): every suffix ends where the simulator table says', async (t) => {
  const { key, path, secret } = await scope('phone');
  const cases = PHONE_OPERATORS.flatMap(({ operator, country, currency }, o) =>
    SUFFIXES.map((suffix, i) => ({ operator, currency, suffix, phoneNumber: phone(country, suffix, o * 100 + i) })),
  );
  const scenarios = await mapLimit(cases, CONCURRENCY, async ({ operator, currency, suffix, phoneNumber }, i): Promise<Scenario> => {
    const intent = await createIntent(e2e.service, key, { amount: 1500 + i, currency, description: `${operator} ${suffix}` });
    const answer = await confirm(e2e.service, key, intent.id, { operator, phone_number: phoneNumber });
    return { operator, suffix, phoneNumber, intent, answer };
  });
  for (const s of scenarios) {
    if (s.suffix === '005') {
      assertDeclinedAtConfirm(t, s);
      continue;
    }
    t.is(s.answer.status, 200, `${s.operator} ${s.suffix}: ${s.answer.text}`);
    t.is(s.answer.body.status, 'requires_action');
    const action = s.answer.body.next_action;
    t.is(action.type, 'await_phone_approval');
    t.deepEqual(Object.keys(action).sort(), ['await_phone_approval', 'type']);
    t.like(action.await_phone_approval, { operator: s.operator, phone_number: masked(s.phoneNumber) });
    t.regex(action.await_phone_approval.phone_number, /^\+\d{3}\*+\d{3}$/, 'masked: the full number is never shown');
    t.regex(action.await_phone_approval.display_message, /\S/);
    t.true(action.await_phone_approval.expires_at > s.intent.created, 'the approval window ends in the future');
    t.false(s.answer.text.includes(s.phoneNumber), 'the full phone number is not in the answer');
  }
  await assertOutcomes(t, key, path, secret, scenarios, 'payer_step');
  const raw = e2e.receiver.received(path).map((r) => r.body.toString('utf8'));
  t.false(
    scenarios.some((s) => raw.some((body) => body.includes(s.phoneNumber))),
    'no event carries a full phone number',
  );
});

test('redirect (wave): the checkout page, Pay over plain HTTP, then every suffix as the table says', async (t) => {
  const { key, path, secret } = await scope('wave');
  const returnUrl = 'https://shop.example/orders/42?back=1';
  const scenarios = await mapLimit(SUFFIXES, CONCURRENCY, async (suffix, i): Promise<Scenario> => {
    const phoneNumber = phone('221', suffix, i);
    const intent = await createIntent(e2e.service, key, { amount: 700 + i, allowed_operators: ['wave', 'orange_money'] });
    const answer = await confirm(e2e.service, key, intent.id, { operator: 'wave', phone_number: phoneNumber, return_url: returnUrl });
    return { operator: 'wave', suffix, phoneNumber, intent, answer };
  });
  await mapLimit(scenarios, CONCURRENCY, async (s) => {
    if (s.suffix === '005') return assertDeclinedAtConfirm(t, s);
    t.is(s.answer.status, 200, `wave ${s.suffix}: ${s.answer.text}`);
    t.is(s.answer.body.status, 'requires_action');
    const action = s.answer.body.next_action;
    t.is(action.type, 'redirect_to_url');
    t.is(action.redirect_to_url.return_url, returnUrl);
    const url = action.redirect_to_url.url as string;
    t.true(url.startsWith(`${e2e.service.baseUrl}/test/checkout/${s.intent.id}.`), url);
    t.regex(url.slice(url.lastIndexOf('.') + 1), /^[0-9A-Za-z]{32}$/, 'an unguessable token');
    const page = await fetch(url);
    t.is(page.status, 200);
    t.regex(page.headers.get('content-type') ?? '', /^text\/html/);
    const html = await page.text();
    for (const id of ['pay', 'decline', 'cancel']) t.true(html.includes(`id="${id}"`), `the ${id} button`);
    // Another token for the same intent is not the page.
    const forged = await fetch(`${e2e.service.baseUrl}/test/checkout/${s.intent.id}.${'A'.repeat(32)}`);
    t.is(forged.status, 404);
    const paid = await fetch(`${url}/pay`, { method: 'POST', redirect: 'manual' });
    t.is(paid.status, 303);
    t.is(paid.headers.get('location'), `${returnUrl}&payment_intent=${s.intent.id}&payment_intent_client_secret=${s.intent.client_secret}`);
  });
  await assertOutcomes(t, key, path, secret, scenarios, 'payer_step');
});

test('one-time code (orange_money): otp_required, then the right code, then every suffix as the table says', async (t) => {
  const { key, path, secret } = await scope('orange');
  const scenarios = await mapLimit(SUFFIXES, CONCURRENCY, async (suffix, i): Promise<Scenario> => {
    const phoneNumber = phone('225', suffix, i);
    const intent = await createIntent(e2e.service, key, { amount: 900 + i });
    const answer = await confirm(e2e.service, key, intent.id, { operator: 'orange_money', phone_number: phoneNumber });
    return { operator: 'orange_money', suffix, phoneNumber, intent, answer };
  });
  await mapLimit(scenarios, CONCURRENCY, async (s) => {
    if (s.suffix === '005') return assertDeclinedAtConfirm(t, s);
    t.is(s.answer.status, 200, `orange ${s.suffix}: ${s.answer.text}`);
    t.like(s.answer.body, {
      status: 'requires_action',
      next_action: { type: 'otp_required', otp_required: { ussd_code: '#144*82#', otp_length: 6 } },
    });
    t.regex(s.answer.body.next_action.otp_required.display_message, /#144\*82#/);
    const second = await confirm(e2e.service, key, s.intent.id, { phone_number: s.phoneNumber, otp: '123456' });
    t.is(second.status, 200, second.text);
    if (s.suffix === '010') {
      t.like(second.body, { status: 'requires_action' }, 'the operator never answers');
    } else {
      t.like(second.body, { status: 'processing', next_action: null });
    }
  });
  await assertOutcomes(t, key, path, secret, scenarios, 'otp');
});
