/**
 * Retention, black-box (DESIGN section 20, "Storage is bounded"): real api and worker
 * processes, documents made 40 and 10 days old by their ids (written straight into
 * MongoDB, as nothing else can make an old object), and one pass of the retention
 * sweeper, enqueued on the maintenance queue as its schedule would. Old test-mode
 * intents, refunds, events and webhook attempts go, and old live events and attempts;
 * live intents and refunds stay, and so does everything recent. What is gone is a
 * plain 404, even to an api that kept it, and lists page over what is left.
 */
import test from 'ava';
import type { EventDoc, PaymentIntentDoc, RefundDoc, WebhookAttemptDoc } from '../../common/documents.js';
import { createdEventId } from '../../common/events.js';
import { IdGenerator, idTime } from '../../common/ids.js';
import { JOBS, openQueue, QUEUES } from '../../common/jobs.js';
import { buildEventJson, presentPaymentIntent } from '../../common/presenters.js';
import { createIntent, update } from '../helpers/payment-intent-lifecycle.js';
import { until, uniqueName } from '../helpers/service.js';
import { useService } from '../helpers/use-service.js';
import { createEndpoint } from '../helpers/webhook-fixtures.js';

const DAY = 24 * 3600_000;
const PI = '/v1/payment_intents';

const e2e = useService(test, { workers: 1 });

const idsAt = (daysAgo: number) => new IdGenerator(() => Date.now() - daysAgo * DAY);

function intent(id: string, project: string, livemode: boolean, fields: Partial<PaymentIntentDoc> = {}): PaymentIntentDoc {
  const created = Math.floor(Date.now() / 1000);
  return {
    _id: id, project, livemode, amount: 1000, currency: 'xof', description: null, status: 'new', client_secret: `${id}_secret_x`,
    automatic_operator: true, allowed_operators: ['mtn_momo'], selected_operator: null, metadata: [],
    // Not yet expired: the lifecycle's sweep leaves it alone.
    created, expires_at: created + 86_400, attempt: 0, rev: 0, ...fields,
  };
}

function refund(id: string, project: string, livemode: boolean, paymentIntent: string): RefundDoc {
  return {
    _id: id, project, livemode, amount: 100, currency: 'xof', payment_intent: paymentIntent, status: 'succeeded', reason: null, failure_reason: null,
    description: null, metadata: [], operator: 'mtn_momo', created: 1, answer: '{}', requested: true, operator_reference: null, polls: 0,
  } as RefundDoc;
}

const succeededWith = (refundId: string): Partial<PaymentIntentDoc> => ({
  status: 'succeeded', attempt: 1, rev: 3, amount_refunded: 100, amount_held: 100,
  refunds: [{ id: refundId, m: refundId, amount: 100, status: 'succeeded', c: 1, reason: null, ev: { created: 'evt_x' } }],
});

const event = (id: string, pi: PaymentIntentDoc): EventDoc => ({
  _id: id, project: pi.project, livemode: pi.livemode, type: 'payment_intent.succeeded', object_id: pi._id, created_ms: idTime(id),
  json: buildEventJson({ id, type: 'payment_intent.succeeded', created: Math.floor(idTime(id) / 1000), livemode: pi.livemode, object: presentPaymentIntent(pi) }),
});

const attempt = (id: string, project: string, livemode: boolean, endpointId: string): WebhookAttemptDoc => ({
  _id: id, project, livemode, endpoint_id: endpointId, event_id: 'evt_x', attempt: 1, created: 1, duration_ms: 1, http_status: 200, error: null, succeeded: true, response_body: null,
});

/** Every id a list gives, page by page of `limit`, newest first. */
async function pageAll(key: string, path: string, limit: number): Promise<string[]> {
  const seen: string[] = [];
  let after: string | null = null;
  for (;;) {
    const res = await e2e.service.request('GET', `${path}?limit=${limit}${after ? `&starting_after=${after}` : ''}`, { key });
    if (res.status !== 200) throw new Error(`${path}: ${res.status} ${res.text}`);
    const page = res.body.data as Array<{ id: string }>;
    seen.push(...page.map((item) => item.id));
    if (!res.body.has_more) return seen;
    after = page[page.length - 1]!.id;
  }
}

test('a pass deletes old test objects and old events, keeps live intents and refunds and what is recent, and lists page over what is left', async (t) => {
  const project = uniqueName('retention');
  const key = await e2e.service.issueKey(project);
  const liveKey = await e2e.service.issueKey(project, true);
  const db = await e2e.service.db();

  // Recent, through the API: an intent changed (its created event is in `events`), one not.
  const changed = await createIntent(e2e.service, key, { amount: 501 });
  t.is((await update(e2e.service, key, changed.id, { metadata: { a: 'b' } })).status, 200);
  const unchanged = await createIntent(e2e.service, key, { amount: 502 });
  const testEndpoint = await createEndpoint(e2e.service, key, 'http://127.0.0.1:9/none', ['refund.failed']);
  const liveEndpoint = await createEndpoint(e2e.service, liveKey, 'https://hooks.example.invalid/none', ['refund.failed']);

  // 40 days old, test mode: an intent paid and refunded, and its refund; an event; an attempt.
  const old = idsAt(40);
  const oldTestPi = old.next('payment_intent');
  const oldTestRe = old.next('refund');
  const oldLivePi = old.next('payment_intent');
  const oldLiveRe = old.next('refund');
  const [oldTestEvt, oldLiveEvt] = [old.next('event'), old.next('event')];
  const [oldTestWha, oldLiveWha] = [old.next('attempt'), old.next('attempt')];
  // 10 days old: kept in both modes.
  const mid = idsAt(10);
  const midTestPi = mid.next('payment_intent');
  const midLiveEvt = mid.next('event');
  const [oldTest, oldLive] = [intent(oldTestPi, project, false, succeededWith(oldTestRe)), intent(oldLivePi, project, true, succeededWith(oldLiveRe))];
  await db.collection<PaymentIntentDoc>('payment_intents').insertMany([oldTest, oldLive, intent(midTestPi, project, false)]);
  await db.collection<RefundDoc>('refunds').insertMany([refund(oldTestRe, project, false, oldTestPi), refund(oldLiveRe, project, true, oldLivePi)]);
  await db.collection<EventDoc>('events').insertMany([
    event(oldTestEvt, oldTest),
    event(oldLiveEvt, oldLive),
    event(midLiveEvt, oldLive),
  ]);
  await db.collection<WebhookAttemptDoc>('webhook_attempts').insertMany([
    attempt(oldTestWha, project, false, testEndpoint.id),
    attempt(oldLiveWha, project, true, liveEndpoint.id),
  ]);

  // Before the pass: the old test intent is read (and kept by the api), its refund too.
  t.is((await e2e.service.request('GET', `${PI}/${oldTestPi}`, { key })).status, 200);
  t.is((await e2e.service.request('GET', `/v1/refunds/${oldTestRe}`, { key })).status, 200);
  // Events past EVENT_RETENTION_DAYS are not shown, swept yet or not.
  t.is((await e2e.service.request('GET', `/v1/events/${oldLiveEvt}`, { key: liveKey })).status, 404);
  t.is((await e2e.service.request('GET', `/v1/events/${midLiveEvt}`, { key: liveKey })).status, 200);

  const maintenance = openQueue(QUEUES.maintenance, { connection: { url: e2e.service.env.REDIS_URL }, prefix: e2e.service.prefix });
  t.teardown(() => maintenance.close());
  // The schedule is the worker's; this pass is enqueued as it would enqueue it.
  const scheduler = await maintenance.getJobScheduler('retention-sweep');
  t.is(Number(scheduler?.every), 3_600_000, 'RETENTION_SWEEP_INTERVAL_MS: hourly by default');
  await maintenance.add(JOBS.sweepRetention, {}, { removeOnComplete: true, removeOnFail: true });
  await until('the old test intent to be deleted', async () =>
    (await db.collection('payment_intents').countDocuments({ _id: oldTestPi as never })) === 0 ? true : undefined,
  );
  await until('the old attempts to be deleted', async () =>
    (await db.collection('webhook_attempts').countDocuments({ project })) === 0 ? true : undefined,
  );

  // Gone: a plain 404, from an api that had kept the intent too.
  for (const [path, id] of [[PI, oldTestPi], ['/v1/refunds', oldTestRe], ['/v1/events', oldTestEvt]] as const) {
    const res = await e2e.service.request('GET', `${path}/${id}`, { key });
    t.is(res.status, 404, `${id}: ${res.text}`);
    t.is(res.body.error.code, 'resource_missing');
  }
  t.is(await db.collection('refunds').countDocuments({ _id: oldTestRe as never }), 0);
  t.deepEqual((await db.collection('events').find({ project }, { projection: { _id: 1 } }).toArray()).map((e) => e._id).sort(), [createdEventId(changed.id), midLiveEvt].sort(),
    'the old events of both modes went; the recent ones stay');

  // Live intents and refunds are never deleted.
  const livePi = await e2e.service.request('GET', `${PI}/${oldLivePi}`, { key: liveKey });
  t.is(livePi.status, 200, livePi.text);
  t.like(livePi.body, { status: 'succeeded', amount_refunded: 100 });
  t.is((await e2e.service.request('GET', `/v1/refunds/${oldLiveRe}`, { key: liveKey })).status, 200);
  t.deepEqual(await pageAll(liveKey, '/v1/refunds', 1), [oldLiveRe]);

  // Lists page over what is left, at every page size, and a cursor naming a deleted object names nothing.
  for (const limit of [1, 2, 10]) {
    t.deepEqual(await pageAll(key, PI, limit), [unchanged.id, changed.id, midTestPi], `intents, limit ${limit}`);
    t.deepEqual(await pageAll(key, '/v1/events', limit), [unchanged.id, changed.id, midTestPi].map(createdEventId), `events, limit ${limit}`);
  }
  t.deepEqual(await pageAll(key, '/v1/refunds', 1), []);
  t.deepEqual(await pageAll(key, `/v1/webhook_endpoints/${testEndpoint.id}/attempts`, 1), []);
  const cursor = await e2e.service.request('GET', `${PI}?starting_after=${oldTestPi}`, { key });
  t.is(cursor.status, 400, cursor.text);
  t.is(cursor.body.error.code, 'resource_missing');
});
