/**
 * Security review M1: an intent's stored document stays small however often it is
 * confirmed or updated, failed confirms are capped per intent, and an intent has one
 * expiry job however often its `expires_at` moves.
 */
import test from 'ava';
import { Queue } from 'bullmq';
import { BSON } from 'mongodb';
import { QUEUES } from '../../../common/jobs.js';
import { confirm, createIntent, phone, update } from '../../helpers/payment-intent-lifecycle.js';
import { withService } from '../../helpers/service.js';

const metadata = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, 'x'.repeat(500)]));

test('300 declined confirms of one intent: the 21st and later are refused, and the stored intent stays small', async (t) => {
  t.timeout(300_000);
  const { service, key } = await withService(t);
  const db = await service.db();
  const intent = await createIntent(service, key, { currency: 'xof', allowed_operators: ['mtn_momo'], metadata, description: 'd'.repeat(1000) });
  const sizeOf = async () => BSON.calculateObjectSize((await db.collection('payment_intents').findOne({ _id: intent.id as never }))!);
  const before = await sizeOf();

  const statuses: Record<string, number> = {};
  let last = null;
  let afterTwo = 0;
  for (let i = 0; i < 300; i++) {
    const res = await confirm(service, key, intent.id, { operator: 'mtn_momo', phone_number: phone('225', '005', i) });
    const code = `${res.status} ${res.body.error?.code}`;
    statuses[code] = (statuses[code] ?? 0) + 1;
    if (i < 20) t.is(res.status, 402, `confirm ${i + 1} is declined: ${res.text}`);
    if (i === 1) afterTwo = await sizeOf();
    last = res;
  }
  const after = await sizeOf();
  t.log(`300 confirms: ${JSON.stringify(statuses)}; intent document ${before} -> ${after} bytes`);
  t.deepEqual(statuses, { '402 payment_declined': 20, '400 payment_attempt_limit': 280 });
  t.is(last!.body.error.type, 'invalid_request_error');
  t.regex(last!.body.error.message, /20 times/);
  // The newest entry holds one event (with this 27 KB intent); each older one a few
  // hundred bytes, however large the intent.
  t.true(after - afterTwo < 18 * 512, `the intent grew by ${after - afterTwo} bytes from the 2nd to the 20th decline`);
  t.true(after < 2 * before + 8 * 1024, `the intent went from ${before} to ${after} bytes`);

  // Each event's JSON is kept once: in the events, and in the newest history entry only.
  const events = await service.request('GET', '/v1/events?type=payment_intent.payment_failed&limit=100', { key });
  t.is(events.body.data.length, 20);
  const stored = await db.collection('payment_intents').findOne({ _id: intent.id as never });
  const history = stored!.history as Array<{ res?: string; evt: { json?: string } | null }>;
  t.is(history.length, 20, 'one entry per applied mutation (refusals leave none)');
  t.true(history.every((h) => h.res === undefined), "no entry keeps its answer's body");
  t.true(history.slice(0, -1).every((h) => h.evt?.json === undefined), 'older entries are compacted');
  t.truthy(history.at(-1)!.evt?.json, "the newest keeps its event's JSON until the next transition");
  const records = await db.collection('intent_mutations').find({}).toArray();
  t.is(records.length, 20, "one answer per applied request's mutation (refusals leave none)");
});

test('an intent has one expiry job however often its expires_at moves, at the last expires_at', async (t) => {
  const { service, key } = await withService(t);
  const queue = new Queue(QUEUES.intents, { connection: { url: service.env.REDIS_URL }, prefix: service.prefix });
  t.teardown(() => queue.close());
  const intent = await createIntent(service, key, { currency: 'xof' });
  const base = Math.floor(Date.now() / 1000) + 3600;
  for (let i = 0; i < 20; i++) {
    const res = await update(service, key, intent.id, { expires_at: base + i * 60 });
    t.is(res.status, 200, res.text);
  }
  const delayed = await queue.getJobs(['delayed', 'waiting']);
  const expiries = delayed.filter((j) => j?.name === 'payment_intent.expire.v1' && j.data.paymentIntent === intent.id);
  t.is(expiries.length, 1, 'one expiry job for the intent');
  t.is(expiries[0]!.data.expiresAt, base + 19 * 60, 'at the last expires_at');
});
