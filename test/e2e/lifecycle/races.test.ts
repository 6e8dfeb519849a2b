/**
 * Races between a cancel and an operator's answer (DESIGN.md section 7: every
 * transition happens exactly once, by a conditional update on the intent's status
 * and attempt). Exactly one side wins each race: either the operator's answer moved
 * the intent on and the cancel is refused (400 payment_intent_unexpected_state), or
 * the cancel won and the operator's answer is dropped as late (the worker logs
 * "payment intent job changed nothing", reason "arrived too late: …"). Never both,
 * never an event of the losing side. (Expiry racing a confirm is in expiry.test.ts,
 * which shares its one-minute wait.)
 */
import test, { type ExecutionContext } from 'ava';
import { QUEUES } from '../../../common/jobs.js';
import { sleep, uniqueName, until, untilIdle, type ApiResponse } from '../../helpers/service.js';
import { createEndpoint } from '../../helpers/webhook-fixtures.js';
import {
  cancel,
  confirm,
  createIntent,
  deliveredEvents,
  eventsOf,
  listAllEvents,
  listAllIntents,
  logLines,
  mapLimit,
  phone,
  verifiedDeliveries,
  waitForDeliveredTypes,
  type Intent,
} from '../../helpers/payment-intent-lifecycle.js';
import { useService } from '../../helpers/use-service.js';

const APPROVAL_MS = 400;
const RETURN_URL = 'https://shop.example/back';

const e2e = useService(test, { workers: 2, env: { WRITE_TIMEOUT_MS: '30000', SIMULATOR_APPROVAL_DELAY_MS: String(APPROVAL_MS), SIMULATOR_PROCESSING_DELAY_MS: '100' }, receiver: true });

interface Race {
  intent: Intent;
  cancel: ApiResponse;
  /** The operator’s answer was enqueued (on the checkout page, a Pay on an attempt already over enqueues nothing). */
  answered: boolean;
}

const E = (...types: string[]) => types.map((type) => `payment_intent.${type}`);

/** Each race has exactly one winner, and the intent's events, final state and deliveries agree with it. */
async function judge(t: ExecutionContext, key: string, hook: { path: string; secret: string }, races: Race[]): Promise<void> {
  const canceledWon = races.filter((r) => r.cancel.status === 200);
  const operatorWon = races.filter((r) => r.cancel.status !== 200);
  t.log(`cancel won ${canceledWon.length} (answer dropped as late: ${canceledWon.filter((r) => r.answered).length}), the operator won ${operatorWon.length}`);
  for (const r of operatorWon) {
    t.is(r.cancel.status, 400, r.cancel.text);
    t.is(r.cancel.body.error.code, 'payment_intent_unexpected_state');
    t.regex(r.cancel.body.error.message, /status of (processing|succeeded)/);
  }
  for (const r of canceledWon) t.like(r.cancel.body, { status: 'canceled', next_action: null });

  const expected = new Map(races.map((r) => [r.intent.id, r.cancel.status === 200 ? E('created', 'requires_action', 'canceled') : E('created', 'requires_action', 'processing', 'succeeded')]));
  await waitForDeliveredTypes(e2e.receiver, hook.path, expected);
  // Every dropped answer has run and been logged by now.
  await until(
    'the late answers to be dropped',
    () => {
      const late = new Set(logLines(e2e.service, 'payment intent job changed nothing').filter((l) => /^arrived too late/.test(String(l.reason))).map((l) => l.payment_intent));
      return canceledWon.every((r) => !r.answered || late.has(r.intent.id)) ? true : undefined;
    },
    30_000,
  );
  await untilIdle(e2e.service, [QUEUES.writes, QUEUES.intents, QUEUES.events]); // a stray transition has run by now
  const [listing, intents] = await Promise.all([listAllEvents(e2e.service, key), listAllIntents(e2e.service, key)]);
  for (const r of races) {
    const pi = intents.get(r.intent.id)!;
    const types = eventsOf(listing, r.intent.id).map((e) => e.type);
    t.deepEqual(types, expected.get(r.intent.id), `${r.intent.id}: the events of the winner only`);
    t.is(pi.status, r.cancel.status === 200 ? 'canceled' : 'succeeded');
  }
  const late = logLines(e2e.service, 'payment intent job changed nothing').filter((l) => races.some((r) => r.intent.id === l.payment_intent));
  for (const line of late) {
    t.is(line.level, 30, 'logged at info');
    t.true(canceledWon.some((r) => r.intent.id === line.payment_intent), 'only an answer that lost to a cancel is dropped');
  }
  const delivered = verifiedDeliveries(e2e.receiver, hook.path, hook.secret);
  const ours = delivered.filter((d) => expected.has(d.event.data.object.id));
  t.is(new Set(ours.map((d) => d.webhookId)).size, ours.length, 'no event delivered twice');
  t.is(deliveredEvents(e2e.receiver, hook.path).length, delivered.length);
}

async function scope(name: string): Promise<{ key: string; hook: { path: string; secret: string } }> {
  const project = uniqueName(name);
  const key = await e2e.service.issueKey(project);
  const endpoint = await createEndpoint(e2e.service, key, e2e.receiver.url(`/${project}`));
  return { key, hook: { path: `/${project}`, secret: endpoint.secret } };
}

test('a cancel racing the payer’s approval on the phone: one side wins each race', async (t) => {
  const { key, hook } = await scope('race-phone');
  const count = 24;
  const intents = await mapLimit(Array.from({ length: count }, (_, i) => i), 6, (i) => createIntent(e2e.service, key, { amount: 100 + i }));
  // Cancels sent from well before to well after the approval is due, so that both sides win some races.
  const races = await mapLimit(intents, count, async (intent, i): Promise<Race> => {
    const confirmed = await confirm(e2e.service, key, intent.id, { operator: 'mtn_momo', phone_number: phone('225', '000', i) });
    t.is(confirmed.status, 200, confirmed.text);
    await sleep(Math.round((i / count) * APPROVAL_MS * 2));
    return { intent, cancel: await cancel(e2e.service, key, intent.id, { cancellation_reason: 'requested_by_customer' }), answered: true };
  });
  await judge(t, key, hook, races);
});

test('a cancel racing Pay on the checkout page, sent at the same moment: one side wins each race', async (t) => {
  const { key, hook } = await scope('race-wave');
  const count = 16;
  const intents = await mapLimit(Array.from({ length: count }, (_, i) => i), 6, (i) => createIntent(e2e.service, key, { amount: 200 + i, allowed_operators: ['wave'] }));
  const confirmed = await mapLimit(intents, 4, async (intent, i) => {
    const res = await confirm(e2e.service, key, intent.id, { operator: 'wave', phone_number: phone('221', '000', i), return_url: RETURN_URL });
    t.is(res.status, 200, res.text);
    return { intent, url: res.body.next_action.redirect_to_url.url as string };
  });
  const races = await Promise.all(
    confirmed.map(async ({ intent, url }): Promise<Race> => {
      const [paid, canceled] = await Promise.all([fetch(`${url}/pay`, { method: 'POST', redirect: 'manual' }), cancel(e2e.service, key, intent.id)]);
      // The page may already know the cancel (then it sends the payer back to itself, to show it), else the
      // payer's answer is enqueued and the payer sent back to return_url.
      t.is(paid.status, 303);
      const answered = (paid.headers.get('location') ?? '').startsWith(`${RETURN_URL}?payment_intent=${intent.id}&`);
      if (!answered) t.is(paid.headers.get('location'), new URL(url).pathname);
      return { intent, cancel: canceled, answered };
    }),
  );
  await judge(t, key, hook, races);
});
