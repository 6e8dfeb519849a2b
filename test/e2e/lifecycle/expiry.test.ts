/**
 * Expiry at `expires_at` (DESIGN.md section 7), black-box. SLOW: `expires_at` cannot
 * be less than a minute ahead and the service has no clock to move, so this file
 * creates every intent it needs at once, all expiring in 61 s, and waits about 65 s
 * once for all of them (the only wait of its kind in the suite).
 *
 * - `new` and `requires_action` (suffix 010: the operator never answers; and a
 *   redirect the payer never follows) end `expired`, with `payment_intent.expired`
 *   listed and delivered, signed;
 * - an attempt in `processing` at `expires_at` resolves first: a success stays
 *   succeeded; a decline hands the intent to its expiry;
 * - `expires_at` moved by an update: the old expiry job is replaced by one at the new
 *   time (one expiry job per intent); a canceled intent: its expiry changes nothing;
 * - a confirm racing the expiry: one side wins; an intent never ends both confirmed
 *   and expired, and an operator answer that comes after the expiry is dropped as late;
 * - past `expires_at` the intent is expired even while its expiry job has not run
 *   (the intents queue paused): a confirm is refused, a payer's answer dropped.
 */
import test from 'ava';
import { Queue } from 'bullmq';
import { QUEUES } from '../../../common/jobs.js';
import { sleep, uniqueName, until, untilIdle, withService, type ApiResponse } from '../../helpers/service.js';
import { createEndpoint } from '../../helpers/webhook-fixtures.js';
import {
  cancel,
  confirm,
  createIntent,
  eventsOf,
  listAllEvents,
  listAllIntents,
  logLines,
  phone,
  retrieve,
  update,
  verifiedDeliveries,
  waitForDeliveredTypes,
  waitForStatus,
  type Intent,
} from '../../helpers/payment-intent-lifecycle.js';
import { useService } from '../../helpers/use-service.js';

/** The payer approves 2 s after a confirm; settling takes longer than the intents live. */
const APPROVAL_MS = 2000;
const PROCESSING_MS = 61_500;
const LIFETIME_S = 61;
/** The intents queue is paused this long before expires_at: the approving confirm lands with nothing of the queue running. */
const PAUSE_BEFORE_EXPIRY_MS = 6000;
/** Past expires_at by this: the point of the test (confirms and codes after the expiry). */
const PAST_EXPIRY_MS = 1500;

const e2e = useService(test, {
  workers: 1,
  env: { WRITE_TIMEOUT_MS: '30000', SIMULATOR_APPROVAL_DELAY_MS: String(APPROVAL_MS), SIMULATOR_PROCESSING_DELAY_MS: String(PROCESSING_MS) },
  receiver: true,
});

const E = (...types: string[]) => types.map((type) => `payment_intent.${type}`);

test('SLOW (about 65 s): intents expire at expires_at from new and requires_action; processing resolves first; races with confirms have one winner', async (t) => {
  t.timeout(180_000);
  const project = uniqueName('expiry');
  const key = await e2e.service.issueKey(project);
  const hook = `/${project}`;
  const endpoint = await createEndpoint(e2e.service, key, e2e.receiver.url(hook));
  const expiresAt = Math.floor(Date.now() / 1000) + LIFETIME_S;
  const make = (body: Record<string, unknown> = {}) => createIntent(e2e.service, key, { expires_at: expiresAt, ...body });

  const [idle, silent, redirect, moved, paid, declined, canceled, ...racers] = await Promise.all([
    make({ description: 'idle' }),
    make({ description: 'silent' }),
    make({ description: 'redirect', allowed_operators: ['wave'] }),
    make({ description: 'moved' }),
    make({ description: 'paid' }),
    make({ description: 'declined' }),
    make({ description: 'canceled' }),
    ...Array.from({ length: 8 }, (_, i) => make({ description: `racer ${i}` })),
  ]) as Intent[];
  t.true(idle!.expires_at === expiresAt);

  const ok = (res: ApiResponse, status: string) => {
    t.is(res.status, 200, res.text);
    t.is(res.body.status, status, res.text);
  };
  ok(await confirm(e2e.service, key, silent!.id, { operator: 'mtn_momo', phone_number: phone('225', '010') }), 'requires_action');
  const waveAnswer = await confirm(e2e.service, key, redirect!.id, { operator: 'wave', phone_number: phone('221', '000') });
  ok(waveAnswer, 'requires_action');
  ok(await update(e2e.service, key, moved!.id, { expires_at: expiresAt + 3600 }), 'new');
  ok(await confirm(e2e.service, key, paid!.id, { operator: 'mtn_momo', phone_number: phone('225', '000', 1) }), 'requires_action');
  ok(await confirm(e2e.service, key, declined!.id, { operator: 'orange_money', phone_number: phone('225', '003'), otp: '123456' }), 'processing');
  ok(await cancel(e2e.service, key, canceled!.id, { cancellation_reason: 'duplicate' }), 'canceled');

  // Confirms sent from 1.5 s before expires_at to 1.5 s after. A payer that declines (001)
  // answers 2 s after an accepted confirm: before or after the expiry, it never keeps the intent alive.
  const races = await Promise.all(
    racers.map(async (pi, i) => {
      const at = expiresAt * 1000 - 1500 + Math.round((i * 3000) / (racers.length - 1));
      await sleep(Math.max(0, at - Date.now()));
      return { pi, res: await confirm(e2e.service, key, pi.id, { operator: 'mtn_momo', phone_number: phone('225', '001', 10 + i) }) };
    }),
  );

  const expected = new Map<string, string[]>([
    [idle!.id, E('created', 'expired')],
    [silent!.id, E('created', 'requires_action', 'expired')],
    [redirect!.id, E('created', 'requires_action', 'expired')],
    [paid!.id, E('created', 'requires_action', 'processing', 'succeeded')],
    [declined!.id, E('created', 'processing', 'payment_failed', 'expired')],
  ]);
  for (const { pi, res } of races) {
    if (res.status === 200) {
      t.is(res.body.status, 'requires_action', res.text);
      // Accepted, then expired (the payer's decline, if it came before expires_at, in between: checked below).
      expected.set(pi.id, E('created', 'requires_action', 'expired'));
    } else {
      t.is(res.status, 400, res.text);
      t.like(res.body.error, { code: 'payment_intent_unexpected_state' });
      t.regex(res.body.error.message, /status of expired/);
      expected.set(pi.id, E('created', 'expired'));
    }
  }
  t.log(`confirms racing the expiry: ${races.filter((r) => r.res.status === 200).length} accepted, ${races.filter((r) => r.res.status !== 200).length} refused`);

  await waitForDeliveredTypes(e2e.receiver, hook, expected, 60_000);
  // Every racer's payer answer (a job due 2 s after its confirm) has run by now.
  await untilIdle(e2e.service, [QUEUES.writes, QUEUES.intents, QUEUES.events]);
  const [listing, intents] = await Promise.all([listAllEvents(e2e.service, key), listAllIntents(e2e.service, key)]);
  const typesOf = (pi: Intent) => eventsOf(listing, pi.id).map((e) => e.type);

  for (const pi of [idle!, silent!, redirect!]) {
    t.deepEqual(typesOf(pi), expected.get(pi.id), `${pi.description}: events`);
    t.like(intents.get(pi.id), { status: 'expired', next_action: null }, pi.description ?? '');
    const expired = eventsOf(listing, pi.id).at(-1)!;
    t.like(expired.data.object, { id: pi.id, status: 'expired', next_action: null });
  }
  t.like(intents.get(silent!.id), { payment_details: { operator: 'mtn_momo', phone_number: '+225*******010' } });

  t.deepEqual(typesOf(paid!), expected.get(paid!.id), 'processing at expires_at: the success comes first, and no expiry after it');
  t.is(intents.get(paid!.id)!.status, 'succeeded');
  t.deepEqual(typesOf(declined!), expected.get(declined!.id), 'processing at expires_at: the decline, then the expiry');
  t.like(intents.get(declined!.id), { status: 'expired', last_payment_error: { operator_decline_code: 'insufficient_funds' } });

  t.deepEqual(typesOf(moved!), E('created'), 'expires_at moved: still new');
  t.like(intents.get(moved!.id), { status: 'new', expires_at: expiresAt + 3600 });
  t.deepEqual(typesOf(canceled!), E('created', 'canceled'));
  t.like(intents.get(canceled!.id), { status: 'canceled', cancellation_reason: 'duplicate' });

  for (const { pi, res } of races) {
    const types = typesOf(pi);
    if (res.status === 200 && types.includes('payment_intent.payment_failed')) {
      t.deepEqual(types, E('created', 'requires_action', 'payment_failed', 'expired'), `${pi.description}: events`);
    } else {
      t.deepEqual(types, expected.get(pi.id), `${pi.description}: events`);
    }
    t.is(intents.get(pi.id)!.status, 'expired', pi.description ?? '');
  }
  // A racer accepted just before its expiry whose payer answered after it: that answer was dropped as late.
  const lateRacers = races.filter(({ pi, res }) => res.status === 200 && !typesOf(pi).includes('payment_intent.payment_failed'));
  for (const { pi } of lateRacers) {
    const line = await until(`the late answer for ${pi.description}`, () =>
      logLines(e2e.service, 'payment intent job changed nothing').find((l) => l.payment_intent === pi.id && /^arrived too late/.test(String(l.reason))),
    );
    t.is(line.level, 30);
  }
  // The moved intent's expiry job was replaced, not left to run as a no-op: one job, at the new time.
  const intentsQueue = new Queue(QUEUES.intents, { connection: { url: e2e.service.env.REDIS_URL }, prefix: e2e.service.prefix });
  t.teardown(() => intentsQueue.close());
  const expiries = (await intentsQueue.getJobs(['delayed', 'waiting', 'completed'])).filter((j) => j?.data?.paymentIntent === moved!.id && j.name === 'payment_intent.expire.v1');
  t.deepEqual(
    expiries.map((j) => j.data.expiresAt),
    [expiresAt + 3600],
    'the moved expiry was replaced',
  );
  t.false(
    logLines(e2e.service, 'payment intent job changed nothing').some((l) => l.payment_intent === moved!.id),
    'no superseded expiry ran',
  );

  // Expired is final.
  const late = await confirm(e2e.service, key, idle!.id, { operator: 'mtn_momo', phone_number: phone('225', '000') });
  t.is(late.status, 400);
  t.regex(late.body.error.message, /status of expired/);
  t.is((await cancel(e2e.service, key, silent!.id)).status, 400);
  const page = await fetch(`${waveAnswer.body.next_action.redirect_to_url.url}/pay`, { method: 'POST', redirect: 'manual' });
  t.not(page.status, 500);
  t.is(intents.get(redirect!.id)!.status, 'expired');
  // The checkout link, opened again, says the payment expired (not "Checkout not found"), and offers nothing.
  const expiredPage = await fetch(waveAnswer.body.next_action.redirect_to_url.url);
  const expiredHtml = await expiredPage.text();
  t.is(expiredPage.status, 200);
  t.regex(expiredHtml, /id="status" data-status="expired"/);
  t.false(expiredHtml.includes('<form'));
  t.false(expiredHtml.includes(redirect!.client_secret));

  // Every event delivered once, signed.
  const deliveries = verifiedDeliveries(e2e.receiver, hook, endpoint.secret);
  const listedIds = listing.map((e) => e.id).sort();
  t.deepEqual(deliveries.map((d) => d.webhookId).sort(), listedIds, 'each listed event delivered exactly once');
});

test('SLOW (the same wait, concurrently): past expires_at, before the expiry job has run, a confirm is refused and the payer’s answer dropped', async (t) => {
  t.timeout(180_000);
  const { service: own, key } = await withService(t, {
    project: 'expiry-paused',
    env: { WRITE_TIMEOUT_MS: '30000', SIMULATOR_APPROVAL_DELAY_MS: '1000', SIMULATOR_PROCESSING_DELAY_MS: '100' },
  });
  const intents = new Queue(QUEUES.intents, { connection: { url: own.env.REDIS_URL }, prefix: own.prefix });
  t.teardown(() => intents.close());
  const expiresAt = Math.floor(Date.now() / 1000) + LIFETIME_S;
  const [fresh, otp, approving] = await Promise.all(['fresh', 'otp', 'approving'].map((description) => createIntent(own, key, { expires_at: expiresAt, description })));
  const asked = await confirm(own, key, otp!.id, { operator: 'orange_money', phone_number: phone('225', '000') });
  t.is(asked.body.status, 'requires_action', asked.text);

  // Nothing of the intents queue runs from here: neither the payer's answer nor the expiry.
  await sleep(Math.max(0, expiresAt * 1000 - PAUSE_BEFORE_EXPIRY_MS - Date.now()));
  await intents.pause();
  const approved = await confirm(own, key, approving!.id, { operator: 'mtn_momo', phone_number: phone('225', '000', 2) });
  t.is(approved.status, 200, approved.text);
  t.is(approved.body.status, 'requires_action');
  await sleep(Math.max(0, expiresAt * 1000 + PAST_EXPIRY_MS - Date.now()));

  const late = await confirm(own, key, fresh!.id, { operator: 'mtn_momo', phone_number: phone('225', '000', 3) });
  t.is(late.status, 400, late.text);
  t.like(late.body.error, { code: 'payment_intent_unexpected_state' });
  t.regex(late.body.error.message, /status of expired/);
  const lateCode = await confirm(own, key, otp!.id, { phone_number: phone('225', '000'), otp: '123456' });
  t.is(lateCode.status, 400, lateCode.text);
  t.regex(lateCode.body.error.message, /status of expired/);
  t.is((await retrieve(own, key, fresh!.id)).status, 'new', 'the expiry job has not run yet');

  await intents.resume();
  for (const pi of [fresh!, otp!, approving!]) await waitForStatus(own, key, pi.id, 'expired');
  // Each event's own document follows its transition's update by a moment.
  const listing = await until('the three expired events listed', async () => {
    const all = await listAllEvents(own, key);
    return all.filter((e) => e.type === 'payment_intent.expired').length >= 3 ? all : undefined;
  });
  t.deepEqual(eventsOf(listing, fresh!.id).map((e) => e.type), E('created', 'expired'));
  t.deepEqual(eventsOf(listing, otp!.id).map((e) => e.type), E('created', 'requires_action', 'expired'));
  t.deepEqual(eventsOf(listing, approving!.id).map((e) => e.type), E('created', 'requires_action', 'expired'), 'the approval came after expires_at: dropped');
  const dropped = await until('the approval to be dropped', () =>
    logLines(own, 'payment intent job changed nothing').find((l) => l.payment_intent === approving!.id),
  );
  t.regex(String(dropped.reason), /^arrived too late/);
});
