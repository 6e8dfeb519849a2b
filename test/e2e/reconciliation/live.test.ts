/**
 * Reconciliation in live mode, black-box (DESIGN section 16), against the operators'
 * fakes: a payment the operator took after the service had given up on its attempt,
 * and whose callback was lost. Wave's is found in its Balance API's transaction list
 * (the intent can still take it: it succeeds); MTN's by the status lookup of the
 * attempt (the intent was canceled meanwhile: the money goes back through MTN, a
 * `late_payment` refund). The job is triggered per account; runs at once record one
 * discrepancy each.
 */
import test from 'ava';
import { Queue } from 'bullmq';
import { JOBS, QUEUES } from '../../../common/jobs.js';
import { MtnMomoFake } from '../../fakes/mtn-momo-fake.js';
import { WaveFake } from '../../fakes/wave-fake.js';
import { mtnReferenceId } from '../../../worker/operators/mtn-momo/wire.js';
import { Service, uniqueName, until } from '../../helpers/service.js';
import { cancel, confirm, createIntent, listAllEvents, retrieve, waitForStatus } from '../../helpers/payment-intent-lifecycle.js';
import { waitForRefund } from '../../helpers/refunds.js';

const MTN = {
  collection: { subscriptionKey: 'col-sub-9', userId: '0b4c6d3e-1111-4a2b-8c3d-000000000009', apiKey: 'col-api-key-secret-9' },
  disbursement: { subscriptionKey: 'dis-sub-9', userId: '0b4c6d3e-2222-4a2b-8c3d-000000000009', apiKey: 'dis-api-key-secret-9' },
};
const WAVE = { apiKey: 'wave_sn_prod_secretkey0009', webhookSecret: 'wave_sn_WHS_secret0009' };

let mtn: MtnMomoFake;
let wave: WaveFake;
let service: Service;
let key: string;
let runs = 0;

test.before(async () => {
  [mtn, wave] = await Promise.all([new MtnMomoFake('mtnivorycoast', MTN, { autoSettleRefunds: true }).start(), new WaveFake(WAVE.apiKey, WAVE.webhookSecret).start()]);
  service = await Service.start({
    workers: 1,
    env: {
      WRITE_TIMEOUT_MS: '30000',
      PUBLIC_BASE_URL: 'self',
      OPERATOR_APPROVAL_WINDOW_MS: '4000',
      OPERATOR_POLL_SCHEDULE_MS: '1000',
      OPERATOR_TIMEOUT_MS: '2000',
      RECONCILE_INTERVAL_MS: '3600000',
      MTN_MOMO_BASE_URL: mtn.url,
      MTN_MOMO_TARGET_ENVIRONMENT: 'mtnivorycoast',
      MTN_MOMO_COLLECTION_SUBSCRIPTION_KEY: MTN.collection.subscriptionKey,
      MTN_MOMO_COLLECTION_USER_ID: MTN.collection.userId,
      MTN_MOMO_COLLECTION_API_KEY: MTN.collection.apiKey,
      MTN_MOMO_DISBURSEMENT_SUBSCRIPTION_KEY: MTN.disbursement.subscriptionKey,
      MTN_MOMO_DISBURSEMENT_USER_ID: MTN.disbursement.userId,
      MTN_MOMO_DISBURSEMENT_API_KEY: MTN.disbursement.apiKey,
      WAVE_BASE_URL: wave.url,
      WAVE_API_KEY: WAVE.apiKey,
      WAVE_WEBHOOK_SECRET: WAVE.webhookSecret,
      WAVE_COUNTRY: 'SN',
    },
  });
  wave.webhookUrl = `${service.baseUrl}/operators/wave/webhook`;
  key = await service.issueKey(uniqueName('recon'), true);
});

test.after.always(async () => {
  await service?.stop();
  await Promise.all([mtn, wave].map((fake) => fake?.stop()));
});

/** The account's id, as `GET /v1/operators` names it. */
async function accountOf(operator: string): Promise<string> {
  const listing = await service.request('GET', '/v1/operators', { key });
  const found = (listing.body.data as Array<{ id: string; accounts: Array<{ id: string }> }>).find((o) => o.id === operator);
  if (!found?.accounts[0]) throw new Error(`no ${operator} account: ${listing.text}`);
  return found.accounts[0].id;
}

async function reconcileNow(account: string, count: number): Promise<void> {
  const queue = new Queue(QUEUES.maintenance, { connection: { url: service.env.REDIS_URL }, prefix: service.prefix });
  try {
    const ids = Array.from({ length: count }, () => `reconcile-live-${++runs}`);
    await Promise.all(ids.map((jobId) => queue.add(JOBS.reconcileOperator, { account }, { jobId })));
    await until('the reconciliation runs to finish', async () => {
      const states = await Promise.all(ids.map(async (id) => (await queue.getJob(id))?.getState()));
      if (states.includes('failed')) throw new Error('a reconciliation run failed');
      return states.every((s) => s === 'completed') ? true : undefined;
    });
  } finally {
    await queue.close();
  }
}

async function discrepanciesOf(pi: string): Promise<Array<Record<string, unknown>>> {
  const res = await service.request('GET', '/v1/operator_discrepancies?limit=100', { key });
  return (res.body.data as Array<Record<string, unknown>>).filter((d) => d.payment_intent === pi);
}

test.serial("Wave: a session paid after it expired, its webhook lost, is found in Wave's transaction list and succeeds the intent", async (t) => {
  const pi = await createIntent(service, key, { amount: 5000, currency: 'xof' });
  const res = await confirm(service, key, pi.id, { operator: 'wave', phone_number: '+221770000123', return_url: 'https://shop.example/back' });
  t.is(res.status, 200, res.text);
  const [session] = wave.sessionsFor(`${pi.id}:1`);
  await wave.expire(session!.id);
  await waitForStatus(service, key, pi.id, 'new', 30_000, (p) => p.last_payment_error !== null);
  // The payer pays anyway, and Wave's webhook is lost: the service has given up on the attempt.
  wave.dropWebhooks = true;
  try {
    await wave.pay(session!.id);
  } finally {
    wave.dropWebhooks = false;
  }
  t.is((await retrieve(service, key, pi.id)).status, 'new');

  await reconcileNow(await accountOf('wave'), 2);
  const found = await until('the discrepancy', async () => {
    const list = await discrepanciesOf(pi.id);
    return list.length > 0 && list.every((d) => d.resolution !== 'pending') ? list : undefined;
  });
  t.is(found.length, 1);
  t.like(found[0], { operator: 'wave', attempt: 1, found_by: 'transaction_list', intent_status: 'new', resolution: 'payment_applied', operator_reference: session!.id, livemode: true });
  const paid = await waitForStatus(service, key, pi.id, 'succeeded');
  t.like(paid, { amount_received: 5000 });
  const events = (await listAllEvents(service, key)).filter((e) => e.data.object.id === found[0]!.id || e.data.object.id === pi.id);
  t.is(events.filter((e) => e.type === 'operator_discrepancy.created').length, 1);
  t.is(events.filter((e) => e.type === 'payment_intent.succeeded').length, 1);
});

test.serial('MTN: a payment MTN took after the attempt failed, its callback lost, is found by status lookup and refunded on the canceled intent', async (t) => {
  const payer = '2250500000777';
  mtn.outcomes.set(payer, { status: 'FAILED', reason: 'EXPIRED' });
  const pi = await createIntent(service, key, { amount: 3000, currency: 'xof' });
  const res = await confirm(service, key, pi.id, { operator: 'mtn_momo', phone_number: `+${payer}` });
  t.is(res.status, 200, res.text);
  const ref = mtnReferenceId(`${pi.id}:1`);
  await until('MTN to hold the request', () => (mtn.transfers.has(ref) ? true : undefined));
  await mtn.settle(ref);
  await waitForStatus(service, key, pi.id, 'new', 30_000, (p) => p.last_payment_error?.operator_decline_code === 'approval_timeout');
  t.is((await cancel(service, key, pi.id)).status, 200);
  // MTN's record changes after all (the payer's approval went through), and its one callback is lost.
  Object.assign(mtn.transfers.get(ref)!, { status: 'SUCCESSFUL', reason: undefined, financialTransactionId: '7700001' });

  await reconcileNow(await accountOf('mtn_momo'), 2);
  const found = await until('the discrepancy', async () => {
    const list = await discrepanciesOf(pi.id);
    return list.length > 0 && list.every((d) => d.resolution !== 'pending') ? list : undefined;
  });
  t.is(found.length, 1);
  t.like(found[0], { operator: 'mtn_momo', attempt: 1, found_by: 'status_lookup', intent_status: 'canceled', resolution: 'refunded' });
  const refunded = await waitForRefund(service, key, found[0]!.refund as string, 'succeeded');
  t.like(refunded, { reason: 'late_payment', amount: 3000, operator: 'mtn_momo', livemode: true });
  t.like(await retrieve(service, key, pi.id), { status: 'canceled', amount_refunded: 0 });
  // MTN was asked for one refund (Disbursement), and a second run asks nothing more.
  const refundPosts = () => mtn.server.countMatching((r) => r.method === 'POST' && r.path.startsWith('/disbursement/') && r.path.includes('refund'));
  t.is(refundPosts(), 1);
  await reconcileNow(await accountOf('mtn_momo'), 1);
  t.is((await discrepanciesOf(pi.id)).length, 1);
  t.is(refundPosts(), 1);
});
