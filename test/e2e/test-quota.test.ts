/**
 * Test mode's daily quota of new objects (DESIGN section 20): with
 * `TEST_OBJECTS_PER_DAY=3`, a project's fourth test-mode create of the UTC day, of any
 * kind, is refused with 429 `quota_exceeded` and `Retry-After` to the next UTC day,
 * before anything is claimed or enqueued: no object, no idempotency record, no job,
 * and a retry with the same key is refused again. Live mode, and other projects, are
 * not affected. A payout batch counts itself and each of its items.
 */
import test from 'ava';
import { Queue } from 'bullmq';
import { redisKey, scopeHash } from '../../common/idempotency.js';
import { QUEUES } from '../../common/jobs.js';
import { createIntent } from '../helpers/payment-intent-lifecycle.js';
import { payee, POB } from '../helpers/payouts.js';
import { paidIntent, refund } from '../helpers/refunds.js';
import { useService } from '../helpers/use-service.js';
import { createEndpoint } from '../helpers/webhook-fixtures.js';

const PI = '/v1/payment_intents';
const DAY_MS = 24 * 3600_000;

const e2e = useService(test, {
  workers: 1,
  env: { TEST_OBJECTS_PER_DAY: '3', SIMULATOR_APPROVAL_DELAY_MS: '100', SIMULATOR_PROCESSING_DELAY_MS: '100' },
});

/** The seconds from now to the next UTC day, as `Retry-After` should say. */
function toNextDay(): number {
  return Math.ceil(((Math.floor(Date.now() / DAY_MS) + 1) * DAY_MS - Date.now()) / 1000);
}

test('the fourth test-mode object of the day is refused with 429 quota_exceeded, leaves nothing behind, and a keyed retry is refused again', async (t) => {
  const project = `quota_${Date.now()}`;
  const key = await e2e.service.issueKey(project);
  // Three objects of three kinds share the count: an intent (paid, so it can be refunded), a refund, an endpoint.
  const paid = await paidIntent(e2e.service, key, { amount: 4000 });
  const refunded = await refund(e2e.service, key, { payment_intent: paid.id, amount: 1000 });
  t.is(refunded.status, 200, refunded.text);
  await createEndpoint(e2e.service, key, 'http://127.0.0.1:9/hooks');

  const headers = { 'Idempotency-Key': 'fourth' };
  const fourth = await e2e.service.request('POST', PI, { key, body: { amount: 700, currency: 'xof' }, headers });
  t.is(fourth.status, 429, fourth.text);
  t.deepEqual(Object.keys(fourth.body.error), ['type', 'code', 'message', 'request_id', 'doc_url']);
  t.like(fourth.body.error, { type: 'invalid_request_error', code: 'quota_exceeded' });
  t.regex(fourth.body.error.message, /3 new objects a day/);
  const retryAfter = Number(fourth.headers.get('retry-after'));
  t.true(Math.abs(retryAfter - toNextDay()) <= 5, `Retry-After ${retryAfter} is the time to the next UTC day (${toNextDay()})`);
  t.is(fourth.headers.get('idempotent-replayed'), null);

  // The same key again, with nothing raised: refused again, not replayed, not created.
  const again = await e2e.service.request('POST', PI, { key, body: { amount: 700, currency: 'xof' }, headers });
  t.is(again.status, 429, again.text);
  t.is(again.body.error.code, 'quota_exceeded');
  t.is(again.headers.get('idempotent-replayed'), null);

  // Every kind of create is refused past the quota; reads and changes are not.
  const endpoint = await e2e.service.request('POST', '/v1/webhook_endpoints', { key, body: { url: 'http://127.0.0.1:9/more' } });
  t.is(endpoint.status, 429, endpoint.text);
  const secondRefund = await refund(e2e.service, key, { payment_intent: paid.id, amount: 500 });
  t.is(secondRefund.status, 429, secondRefund.text);
  const changed = await e2e.service.request('POST', `/v1/refunds/${refunded.body.id as string}`, { key, body: { metadata: { still: 'allowed' } } });
  t.is(changed.status, 200, changed.text);

  // Nothing left behind: no intent listed but the paid one, no refund but the first,
  // no object carrying the key, no key in Redis, no job.
  const list = await e2e.service.request('GET', `${PI}?limit=100`, { key });
  t.deepEqual(
    list.body.data.map((pi: { id: string }) => pi.id),
    [paid.id],
  );
  const refunds = await e2e.service.request('GET', '/v1/refunds?limit=100', { key });
  t.is(refunds.body.data.length, 1);
  const db = await e2e.service.db();
  t.is(await db.collection('payment_intents').countDocuments({ project }), 1);
  t.is(await db.collection('webhook_endpoints').countDocuments({ project }), 1);
  const hash = scopeHash({ project, livemode: false }, 'fourth');
  t.is(await db.collection('idempotency_keys').findOne({ _id: hash as never }), null, 'no key pointer');
  t.is(await db.collection('payment_intents').findOne({ idem: hash }), null, 'no object holds the key');
  const redis = e2e.service.redis();
  t.teardown(() => redis.disconnect());
  t.is(await redis.exists(redisKey(e2e.service.prefix, hash)), 0, 'no key claimed');
  const queue = new Queue(QUEUES.writes, { connection: { url: e2e.service.env.REDIS_URL }, prefix: e2e.service.prefix });
  t.teardown(() => queue.close());
  const jobs = await queue.getJobs(['waiting', 'active', 'delayed', 'completed', 'failed', 'prioritized']);
  const refusedJobs = jobs.filter((job) => {
    const input = (job.data as { input?: { amount?: number; url?: string } }).input;
    return input?.amount === 700 || input?.amount === 500 || input?.url === 'http://127.0.0.1:9/more';
  });
  t.deepEqual(refusedJobs, [], 'no job for a refused create');
});

test('live mode and other projects are not limited by a project that used its test quota', async (t) => {
  const project = `quota_live_${Date.now()}`;
  const testKey = await e2e.service.issueKey(project);
  for (let i = 0; i < 3; i++) await createIntent(e2e.service, testKey, { amount: 100 + i });
  const refused = await e2e.service.request('POST', PI, { key: testKey, body: { amount: 200, currency: 'xof' } });
  t.is(refused.status, 429, refused.text);

  // The same project's live key: never counted.
  const liveKey = await e2e.service.issueKey(project, true);
  for (let i = 0; i < 5; i++) {
    const res = await e2e.service.request('POST', PI, { key: liveKey, body: { amount: 300 + i, currency: 'xof' } });
    t.is(res.status, 200, res.text);
    t.true(res.body.livemode);
  }
  // Another project's test key: its own count.
  const other = await e2e.key('quota_other');
  const res = await e2e.service.request('POST', PI, { key: other, body: { amount: 400, currency: 'xof' } });
  t.is(res.status, 200, res.text);
});

test('a payout batch counts itself and each of its items: one that would pass the quota is refused whole, and one that fits uses it up', async (t) => {
  const items = (n: number) => Array.from({ length: n }, (_, i) => ({ currency: 'xof', amount: 100, phone_number: payee('008', i), reference: `q-${i}` }));
  // Three items and the batch are four objects: past a quota of three, refused, nothing made.
  const key = await e2e.service.issueKey(`quota_batch_${Date.now()}`);
  const over = await e2e.service.request('POST', POB, { key, body: { payouts: items(3) } });
  t.is(over.status, 429, over.text);
  t.is(over.body.error.code, 'quota_exceeded');
  const batches = await e2e.service.request('GET', `${POB}?limit=100`, { key });
  t.deepEqual(batches.body.data, [], 'no batch');
  const payouts = await e2e.service.request('GET', '/v1/payouts?limit=100', { key });
  t.deepEqual(payouts.body.data, [], 'no payout');

  // Two items and the batch are three: accepted, and the day is used up.
  const other = await e2e.service.issueKey(`quota_batch_fits_${Date.now()}`);
  const fits = await e2e.service.request('POST', POB, { key: other, body: { payouts: items(2) } });
  t.is(fits.status, 200, fits.text);
  t.is(fits.body.counts.total, 2);
  const next = await e2e.service.request('POST', PI, { key: other, body: { amount: 700, currency: 'xof' } });
  t.is(next.status, 429, next.text);
  t.is(next.body.error.code, 'quota_exceeded');
});
