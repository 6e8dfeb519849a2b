/**
 * The ledger over a small storm (DESIGN section 16, "the ledger always balances"):
 * 40 payments confirmed at once and half of them refunded at once (some refunds
 * fail at the operator, some are partial), every request keyed and retried as a
 * client would, while a worker is SIGKILLed and replaced in each wave. Then, per
 * currency: the sum of the transactions equals the balance, and equals the succeeded
 * payments minus the succeeded refunds; each movement is posted once.
 */
import test from 'ava';
import { Queue } from 'bullmq';
import { QUEUES } from '../../common/jobs.js';
import { confirm, createIntent, mapLimit, phone, retrieve, type Intent } from '../helpers/payment-intent-lifecycle.js';
import { refund, retrieveRefund, type Refund } from '../helpers/refunds.js';
import { Service, sleep, until, type ApiResponse } from '../helpers/service.js';

const COUNT = 40;

let service: Service;
test.before(async () => {
  service = await Service.start({ workers: 2, env: { WRITE_TIMEOUT_MS: '30000', SIMULATOR_APPROVAL_DELAY_MS: '200', SIMULATOR_PROCESSING_DELAY_MS: '200' } });
});
test.after.always(async () => {
  await service?.stop();
});

/** A polite client: the same keyed request again after a network error, a 409 or a 503. */
async function answered(send: () => Promise<ApiResponse>): Promise<ApiResponse> {
  for (let tries = 1; ; tries++) {
    const res = await send().catch(() => null);
    if (res && res.status !== 409 && res.status !== 503) return res;
    await sleep(Math.min(4000, 200 * 2 ** tries) * (0.5 + Math.random() / 2));
  }
}

/** SIGKILLs a worker once the intents queue has work in hand, and starts another. */
async function killOneWorker(intentsQueue: Queue): Promise<void> {
  await until('work in hand', async () => ((await intentsQueue.getActiveCount()) > 0 ? true : undefined), 60_000);
  const victim = service.workers.find((w) => w.running)!;
  victim.kill('SIGKILL');
  await victim.exited;
  await service.startWorker();
}

interface Txn {
  id: string;
  net: number;
  type: string;
  source: string;
  currency: string;
}

test('after payments and refunds with a worker killed in each wave, every currency balances: transactions = balance = payments − refunds', async (t) => {
  const key = await service.issueKey('storm');
  const intentsQueue = new Queue(QUEUES.intents, { connection: { url: service.env.REDIS_URL as string }, prefix: service.env.QUEUE_PREFIX as string });
  try {
    const intents = await mapLimit(Array.from({ length: COUNT }, (_, i) => i), 10, (i) => createIntent(service, key, { amount: 1000 + i, currency: 'xof' }));
    // Every fifth payer's refunds fail at the operator (`020`).
    const payers = intents.map((_, i) => phone('225', i % 5 === 0 ? '020' : '000', i));
    const confirms = Promise.all(intents.map((pi, i) => answered(() => confirm(service, key, pi.id, { operator: 'mtn_momo', phone_number: payers[i] }, { 'Idempotency-Key': `c-${i}` }))));
    await killOneWorker(intentsQueue);
    for (const res of await confirms) t.is(res.status, 200, res.text);
    const paid = await until(
      'every payment final',
      async () => {
        const all = await Promise.all(intents.map((pi) => retrieve(service, key, pi.id)));
        return all.every((pi) => pi.status === 'succeeded') ? all : undefined;
      },
      120_000,
    );

    // Half refunded: whole or in part.
    const refunded = paid.filter((_, i) => i % 2 === 0);
    const refunds = Promise.all(
      refunded.map((pi: Intent, i) => answered(() => refund(service, key, { payment_intent: pi.id, ...(i % 3 === 0 ? { amount: 400 } : {}) }, { 'Idempotency-Key': `r-${i}` }))),
    );
    await killOneWorker(intentsQueue);
    const created = (await refunds).map((res) => {
      t.is(res.status, 200, res.text);
      return res.body as Refund;
    });
    const ended = await until(
      'every refund final',
      async () => {
        const all = await Promise.all(created.map((re) => retrieveRefund(service, key, re.id)));
        return all.every((re) => re.status !== 'pending') ? all : undefined;
      },
      120_000,
    );
    t.true(ended.some((re) => re.status === 'failed') && ended.some((re) => re.status === 'succeeded'), 'refunds of both ends');

    const expected = paid.reduce((s, pi) => s + pi.amount, 0) - ended.filter((re) => re.status === 'succeeded').reduce((s, re) => s + re.amount, 0);
    const db = await service.db();
    // Posted before the events that tell of them: equal once the last event is in.
    const txns = await until(
      'the ledger caught up',
      async () => {
        const all = (await db.collection('balance_transactions').find({}).toArray()) as unknown as Txn[];
        return all.reduce((s, x) => s + x.net, 0) === expected ? all : undefined;
      },
      60_000,
    ).catch(async () => (await db.collection('balance_transactions').find({}).toArray()) as unknown as Txn[]);
    const sum = txns.reduce((s, x) => s + x.net, 0);
    t.is(sum, expected, 'the sum of the transactions is payments minus succeeded refunds');
    const balance = await service.request('GET', '/v1/balance', { key });
    t.deepEqual(balance.body.available, [{ amount: sum, currency: 'xof', source_types: { mobile_money: sum } }], 'the balance is the sum');
    // Each movement once.
    const movements = txns.map((x) => `${x.type}:${x.source}`);
    t.is(new Set(movements).size, movements.length, 'no movement posted twice');
    t.is(txns.filter((x) => x.type === 'payment').length, COUNT);
    t.is(txns.filter((x) => x.type === 'refund').length, created.length);
    t.is(txns.filter((x) => x.type === 'refund_failure').length, ended.filter((re) => re.status === 'failed').length);
  } finally {
    await intentsQueue.close();
  }
});
