/**
 * Reconciliation over the simulator, black-box (DESIGN section 16): a number ending
 * `030` stops answering, its attempt ends `approval_timeout` when its window closes,
 * and the simulated operator takes the money after all. The reconciliation job finds
 * it: one `operator_discrepancy` (listed, retrievable, its event delivered), then the
 * intent succeeds if it can still take the payment, or a `late_payment` refund gives
 * it back if it cannot. Runs of the job, at once or one after another, record nothing
 * twice. The job is triggered here (its schedule's interval is an hour). A run looks at
 * every project, so the two late-payment tests run one after the other: run alongside,
 * one test's run could find the other's payment while its intent is still `new`
 * (before that test cancels it), and record the status it was found in.
 */
import test from 'ava';
import { Queue } from 'bullmq';
import { JOBS, QUEUES } from '../../../common/jobs.js';
import { createEndpoint } from '../../helpers/webhook-fixtures.js';
import { cancel, confirm, createIntent, listAllEvents, phone, retrieve, waitForDeliveredTypes, waitForStatus } from '../../helpers/payment-intent-lifecycle.js';
import { refund, retrieveRefund, waitForRefund } from '../../helpers/refunds.js';
import { until } from '../../helpers/service.js';
import { useService } from '../../helpers/use-service.js';

const e2e = useService(test, {
  workers: 1,
  env: {
    WRITE_TIMEOUT_MS: '30000',
    SIMULATOR_APPROVAL_DELAY_MS: '100',
    SIMULATOR_PROCESSING_DELAY_MS: '100',
    SIMULATOR_APPROVAL_WINDOW_MS: '1000',
    RECONCILE_INTERVAL_MS: '3600000',
  },
  receiver: true,
});

const OD = '/v1/operator_discrepancies';

interface Discrepancy {
  id: string;
  object: string;
  operator: string;
  payment_intent: string;
  attempt: number;
  amount: number;
  currency: string;
  operator_reference: string | null;
  found_by: string;
  intent_status: string;
  resolution: string;
  refund: string | null;
  created: number;
  livemode: boolean;
}

let runs = 0;

/** Runs the simulator's reconciliation `count` times at once, and waits until every run has finished. */
async function reconcileNow(count = 1): Promise<void> {
  const queue = new Queue(QUEUES.maintenance, { connection: { url: e2e.service.env.REDIS_URL }, prefix: e2e.service.prefix });
  try {
    const ids = Array.from({ length: count }, () => `reconcile-test-${++runs}`);
    await Promise.all(ids.map((jobId) => queue.add(JOBS.reconcileOperator, { account: null }, { jobId })));
    await until('the reconciliation runs to finish', async () => {
      const states = await Promise.all(ids.map(async (id) => (await queue.getJob(id))?.getState()));
      if (states.includes('failed')) throw new Error('a reconciliation run failed');
      return states.every((s) => s === 'completed') ? true : undefined;
    });
  } finally {
    await queue.close();
  }
}

async function listDiscrepancies(key: string): Promise<Discrepancy[]> {
  const res = await e2e.service.request('GET', `${OD}?limit=100`, { key });
  if (res.status !== 200) throw new Error(`listing discrepancies: ${res.text}`);
  return res.body.data as Discrepancy[];
}

/** An intent whose 030 attempt has ended `approval_timeout`: back in `new`. */
async function timedOut(key: string, n: number) {
  const pi = await createIntent(e2e.service, key, { amount: 4000 });
  const res = await confirm(e2e.service, key, pi.id, { operator: 'mtn_momo', phone_number: phone('225', '030', n) });
  if (res.status !== 200) throw new Error(`confirming: ${res.text}`);
  return waitForStatus(e2e.service, key, pi.id, 'new', 30_000, (p) => p.last_payment_error?.operator_decline_code === 'approval_timeout');
}

test.serial('a late payment on an intent that can still take it: one discrepancy, its event delivered, the intent succeeds', async (t) => {
  const k = await e2e.key('apply');
  await createEndpoint(e2e.service, k, e2e.receiver.url('/apply'), ['*']);
  const pi = await timedOut(k, 1);
  t.is(pi.status, 'new');
  t.is(pi.last_payment_error?.operator_decline_code, 'approval_timeout');

  await reconcileNow(2);
  const [found, ...others] = await until('the discrepancy to be resolved', async () => {
    const list = await listDiscrepancies(k);
    return list.length > 0 && list.every((d) => d.resolution !== 'pending') ? list : undefined;
  });
  t.is(others.length, 0);
  t.regex(found!.id, /^od_[0-9A-Za-z]{26}$/);
  t.like(found, { object: 'operator_discrepancy', operator: 'mtn_momo', payment_intent: pi.id, attempt: 1, amount: 4000, currency: 'xof', found_by: 'transaction_list', intent_status: 'new', resolution: 'payment_applied', refund: null, livemode: false });

  const paid = await waitForStatus(e2e.service, k, pi.id, 'succeeded');
  t.like(paid, { status: 'succeeded', amount_received: 4000, last_payment_error: null });
  const one = await e2e.service.request('GET', `${OD}/${found!.id}`, { key: k });
  t.is(one.status, 200);
  t.deepEqual(one.body, found);

  await waitForDeliveredTypes(e2e.receiver, '/apply', new Map([[found!.id, ['operator_discrepancy.created']], [pi.id, ['payment_intent.succeeded']]]));
  // Again: nothing new is recorded, nothing happens twice.
  await reconcileNow(1);
  t.deepEqual((await listDiscrepancies(k)).map((d) => d.id), [found!.id]);
  const events = await listAllEvents(e2e.service, k);
  t.is(events.filter((e) => e.type === 'operator_discrepancy.created').length, 1);
  t.is(events.filter((e) => e.type === 'payment_intent.succeeded').length, 1);
  t.like(events.find((e) => e.type === 'operator_discrepancy.created')!.data.object, { id: found!.id, payment_intent: pi.id, resolution: 'pending' });
});

test.serial('a late payment on a canceled intent is refunded through the operator with reason late_payment, once', async (t) => {
  const k = await e2e.key('refund');
  await createEndpoint(e2e.service, k, e2e.receiver.url('/refund'), ['*']);
  const pi = await timedOut(k, 2);
  const canceled = await cancel(e2e.service, k, pi.id, { cancellation_reason: 'abandoned' });
  t.is(canceled.status, 200, canceled.text);

  await reconcileNow(2);
  const [found, ...others] = await until('the discrepancy to be resolved', async () => {
    const list = await listDiscrepancies(k);
    return list.length > 0 && list.every((d) => d.resolution !== 'pending') ? list : undefined;
  });
  t.is(others.length, 0);
  t.like(found, { payment_intent: pi.id, attempt: 1, amount: 4000, intent_status: 'canceled', resolution: 'refunded' });
  t.regex(found!.refund ?? '', /^re_/);
  const done = await waitForRefund(e2e.service, k, found!.refund!, 'succeeded');
  t.like(done, { amount: 4000, currency: 'xof', payment_intent: pi.id, reason: 'late_payment', operator: 'mtn_momo', livemode: false });
  // The intent stays canceled, its own amounts untouched.
  t.like(await retrieve(e2e.service, k, pi.id), { status: 'canceled', amount_received: 0, amount_refunded: 0 });
  await waitForDeliveredTypes(e2e.receiver, '/refund', new Map([[found!.id, ['operator_discrepancy.created']], [found!.refund!, ['refund.created', 'refund.succeeded']]]));

  await reconcileNow(2);
  t.deepEqual((await listDiscrepancies(k)).map((d) => d.id), [found!.id]);
  const refunds = await e2e.service.request('GET', `/v1/refunds?payment_intent=${pi.id}`, { key: k });
  t.deepEqual(refunds.body.data.map((r: { id: string }) => r.id), [found!.refund]);
  t.like(await retrieveRefund(e2e.service, k, found!.refund!), { status: 'succeeded' });
  const events = await listAllEvents(e2e.service, k);
  t.is(events.filter((e) => e.type === 'operator_discrepancy.created').length, 1);
  t.is(events.filter((e) => e.type === 'refund.created').length, 1);
  // The ledger shows the money in and back out: a payment of 4000, a refund of 4000, the balance 0.
  const txns = await e2e.service.request('GET', '/v1/balance_transactions?limit=100', { key: k });
  t.is(txns.status, 200, txns.text);
  const mine = txns.body.data.filter((x: { source: string }) => x.source === pi.id || x.source === found!.refund);
  t.deepEqual(mine.map((x: { type: string; amount: number }) => [x.type, x.amount]).sort(), [['payment', 4000], ['refund', -4000]]);
  const balance = await e2e.service.request('GET', '/v1/balance', { key: k });
  t.is(balance.status, 200, balance.text);
  const xof = [...balance.body.available, ...balance.body.pending].filter((b: { currency: string }) => b.currency === 'xof');
  t.is(xof.reduce((sum: number, b: { amount: number }) => sum + b.amount, 0), 0, JSON.stringify(balance.body));
});

test('late_payment is the service\'s reason: a client cannot set it', async (t) => {
  const k = await e2e.key('reason');
  const pi = await createIntent(e2e.service, k, { amount: 1000 });
  const res = await refund(e2e.service, k, { payment_intent: pi.id, reason: 'late_payment' });
  t.is(res.status, 400);
  t.like(res.body.error, { code: 'parameter_invalid', param: 'reason' });
});

test('discrepancies are per scope: another project\'s id is 404, a malformed cursor 400', async (t) => {
  const k = await e2e.key('scope');
  t.deepEqual(await listDiscrepancies(k), []);
  const missing = await e2e.service.request('GET', `${OD}/od_0000000000000000000000000`, { key: k });
  t.is(missing.status, 404);
  t.like(missing.body.error, { code: 'resource_missing', param: 'id' });
  const cursor = await e2e.service.request('GET', `${OD}?starting_after=pi_x`, { key: k });
  t.is(cursor.status, 400);
  t.like(cursor.body.error, { code: 'resource_missing', param: 'starting_after' });
});
