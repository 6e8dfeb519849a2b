/**
 * A payout's create job that dies after its hold, or a batch's after its items, and
 * that Redis then forgets with the key's answer (DESIGN sections 15 and 17): the
 * client's retry of the same Idempotency-Key reaches a new job, with new ids. It
 * must make the payout the first job began, under the first job's id, so the money
 * held is held once and no payout is made twice.
 *
 * The state such a death leaves is made from a real create: everything written after
 * the hold (the payout, or the batch, its events, the key's answer in MongoDB and in
 * Redis) is deleted, and a fresh api process, with nothing in memory, takes the retry.
 */
import test from 'ava';
import { Queue } from 'bullmq';
import type { Db } from 'mongodb';
import { redisKey, scopeHash } from '../../../common/idempotency.js';
import { QUEUES } from '../../../common/jobs.js';
import { createPayout, fund, listAllPayouts, payee, POB, waitForPayout, type Payout, type PayoutBatch } from '../../helpers/payouts.js';
import { Service, uniqueName, until } from '../../helpers/service.js';

const IDEM = 'po-lost-1';

async function startService(env: Record<string, string> = {}): Promise<Service> {
  // 008 stays enqueued: nothing of the first payout moves on while the test looks.
  return Service.start({ workers: 1, env: { SIMULATOR_APPROVAL_DELAY_MS: '100', SIMULATOR_PROCESSING_DELAY_MS: '200', SIMULATOR_PAYOUT_ENQUEUED_MS: '600000', ...env } });
}

/** Deletes the key's answer, in MongoDB and in Redis (how many Redis entries: 1), and the events of `objects` with their keys. */
async function forgetAfterHolds(service: Service, db: Db, project: string, objects: string[]): Promise<number> {
  const ids = new Set(objects);
  await db.collection('idempotency_records').deleteMany({ project });
  const redis = service.redis();
  let forgotten: number;
  try {
    forgotten = await redis.del(redisKey(service.prefix, scopeHash({ project, livemode: false }, IDEM)));
  } finally {
    redis.disconnect();
  }
  const keys = (await db.collection<{ _id: string }>('event_keys').find({}, { projection: { _id: 1 } }).toArray()).map((doc) => doc._id);
  const ofObjects = keys.filter((id) => ids.has(id.split(':')[0]!));
  await db.collection<{ _id: string }>('event_keys').deleteMany({ _id: { $in: ofObjects } });
  await db.collection('events').deleteMany({ object_id: { $in: objects } });
  return forgotten;
}

async function holds(service: Service, key: string, type = 'payout'): Promise<Array<{ source: string; amount: number }>> {
  const res = await service.request<{ data: Array<{ source: string; amount: number }> }>('GET', `/v1/balance_transactions?type=${type}&limit=100`, { key });
  if (res.status !== 200) throw new Error(res.text);
  return res.body.data;
}

async function available(service: Service, key: string): Promise<number> {
  const res = await service.request<{ available: Array<{ amount: number; currency: string }> }>('GET', '/v1/balance', { key });
  if (res.status !== 200) throw new Error(res.text);
  return res.body.available.find((b) => b.currency === 'xof')?.amount ?? 0;
}

test("a payout whose create died after its hold, retried after Redis forgot it, is made once under the first job's id, held once", async (t) => {
  const service = await startService();
  t.teardown(() => service.stop());
  const project = uniqueName('lost-payout');
  const key = await service.issueKey(project);
  await fund(service, key, 10_000);
  const body = { amount: 3000, phone_number: payee('008') };
  const first = await createPayout(service, key, body, { 'Idempotency-Key': IDEM });
  t.is(first.status, 200, first.text);
  const id = (first.body as Payout).id;
  await waitForPayout(service, key, id, 'enqueued');

  // What the first job leaves when it dies right after its hold: the key's claim and the hold.
  const db = await service.db();
  t.is((await db.collection('payouts').deleteOne({ _id: id as never })).deletedCount, 1);
  t.is(await forgetAfterHolds(service, db, project, [id]), 1, "the key's answer was in Redis");
  t.deepEqual((await holds(service, key)).map((h) => h.source), [id], 'the first job held');

  const { baseUrl } = await service.startExtraApi();
  const retry = await service.request('POST', '/v1/payouts', { key, baseUrl, body: { currency: 'xof', operator: 'mtn_momo', ...body }, headers: { 'Idempotency-Key': IDEM } });
  t.is(retry.status, 200, retry.text);
  t.is((retry.body as Payout).id, id, "the payout is the first job's");
  t.deepEqual((await listAllPayouts(service, key)).map((p) => p.id), [id]);
  t.deepEqual(
    (await holds(service, key)).map((h) => [h.source, h.amount]),
    [[id, -3000]],
    'held once',
  );
  t.is(await available(service, key), 7000);
  // And it goes on: sent again under its own reference, enqueued by the operator.
  await waitForPayout(service, key, id, 'enqueued');
});

test("a hold whose payout was never made, its request never retried, is released once PAYOUT_HOLD_STRANDED_MS old; a retry then makes the payout under a new id, held anew", async (t) => {
  const service = await startService({ PAYOUT_HOLD_STRANDED_MS: '3000', INTENTS_SWEEP_INTERVAL_MS: '500' });
  t.teardown(() => service.stop());
  const project = uniqueName('stranded');
  const key = await service.issueKey(project);
  await fund(service, key, 10_000);
  const body = { amount: 3000, phone_number: payee('008') };
  const first = await createPayout(service, key, body, { 'Idempotency-Key': IDEM });
  t.is(first.status, 200, first.text);
  const id = (first.body as Payout).id;
  await waitForPayout(service, key, id, 'enqueued');
  const db = await service.db();
  t.is((await db.collection('payouts').deleteOne({ _id: id as never })).deletedCount, 1);
  t.is(await forgetAfterHolds(service, db, project, [id]), 1, "the key's answer was in Redis");

  await until('the stranded hold to be released', async () => ((await available(service, key)) === 10_000 ? true : undefined), 30_000);
  t.deepEqual((await holds(service, key, 'payout_failure')).map((h) => [h.source, h.amount]), [[id, 3000]], 'released once, as a payout_failure');

  const { baseUrl } = await service.startExtraApi();
  const retry = await service.request('POST', '/v1/payouts', { key, baseUrl, body: { currency: 'xof', operator: 'mtn_momo', ...body }, headers: { 'Idempotency-Key': IDEM } });
  t.is(retry.status, 200, retry.text);
  const made = retry.body as Payout;
  t.not(made.id, id, 'the released id is spent');
  t.deepEqual((await listAllPayouts(service, key)).map((p) => p.id), [made.id]);
  t.deepEqual((await holds(service, key)).map((h) => h.source).sort(), [id, made.id].sort());
  t.is(await available(service, key), 7000);
  await waitForPayout(service, key, made.id, 'enqueued');

  // The key's answer lost once more: the next retry finds the new payout, not the spent id.
  t.is(await forgetAfterHolds(service, db, project, []), 1);
  const { baseUrl: third } = await service.startExtraApi();
  const again = await service.request('POST', '/v1/payouts', { key, baseUrl: third, body: { currency: 'xof', operator: 'mtn_momo', ...body }, headers: { 'Idempotency-Key': IDEM } });
  t.is(again.status, 200, again.text);
  t.is((again.body as Payout).id, made.id);
  t.is(again.headers.get('idempotent-replayed'), 'true');
  t.deepEqual((await listAllPayouts(service, key)).map((p) => p.id), [made.id]);
  t.is(await available(service, key), 7000);
});

test("a batch whose create died after inserting its items, retried after Redis forgot it, is made of those items, none twice", async (t) => {
  const service = await startService();
  t.teardown(() => service.stop());
  const project = uniqueName('lost-batch');
  const key = await service.issueKey(project);
  await fund(service, key, 10_000);
  const items = [1, 2, 3].map((n) => ({ currency: 'xof', amount: 1000, phone_number: payee('008', n), reference: `r-${n}` }));
  const first = await service.request('POST', POB, { key, body: { payouts: items }, headers: { 'Idempotency-Key': IDEM } });
  t.is(first.status, 200, first.text);
  const batchId = (first.body as PayoutBatch).id;
  const made = await until('the items to be enqueued', async () => {
    const payouts = await listAllPayouts(service, key, { batch: batchId });
    return payouts.length === 3 && payouts.every((p) => p.status === 'enqueued') ? payouts : undefined;
  });

  // What the first job leaves when it dies after inserting its items, before its batch.
  const db = await service.db();
  t.is((await db.collection('payout_batches').deleteOne({ _id: batchId as never })).deletedCount, 1);
  t.is(await forgetAfterHolds(service, db, project, [batchId]), 1, "the key's answer was in Redis");

  const { baseUrl } = await service.startExtraApi();
  const retry = await service.request('POST', POB, { key, baseUrl, body: { payouts: items }, headers: { 'Idempotency-Key': IDEM } });
  t.is(retry.status, 200, retry.text);
  t.is((retry.body as PayoutBatch).id, batchId, "the batch is the first job's");
  t.is((retry.body as PayoutBatch).counts.total, 3);
  const payouts = await listAllPayouts(service, key);
  t.deepEqual(payouts.map((p) => p.id).sort(), made.map((p) => p.id).sort(), 'no second set of payouts');
  t.true(payouts.every((p) => p.batch === batchId));
  t.is((await holds(service, key)).length, 3, 'each item held once');
  t.is(await available(service, key), 7000);
});

test("a batch whose create died while inserting its items, some inserted and some not, retried after Redis forgot it, is made of all of them under the first job's ids, each once", async (t) => {
  const service = await startService();
  t.teardown(() => service.stop());
  const project = uniqueName('partial-batch');
  const key = await service.issueKey(project);
  await fund(service, key, 10_000);
  // The items' steps wait (their queue paused), so none is sent: the items stand as the create inserted them.
  const intents = new Queue(QUEUES.intents, { connection: { url: service.env.REDIS_URL }, prefix: service.prefix });
  t.teardown(() => intents.close());
  await intents.pause();
  const items = [1, 2, 3].map((n) => ({ currency: 'xof', amount: 1000, phone_number: payee('008', n), reference: `r-${n}` }));
  const first = await service.request('POST', POB, { key, body: { payouts: items }, headers: { 'Idempotency-Key': IDEM } });
  t.is(first.status, 200, first.text);
  const batchId = (first.body as PayoutBatch).id;
  const db = await service.db();
  const payouts = db.collection<{ _id: string; reference: string; held: boolean }>('payouts');
  const inserted = await payouts.find({ batch: batchId }).toArray();
  t.is(inserted.length, 3);
  t.false(inserted.some((p) => p.held), 'no item sent, none held');

  // What the first job leaves when it dies inserting its items: one inserted, two not, no batch.
  const lost = inserted.filter((p) => p.reference !== 'r-2').map((p) => p._id);
  t.is((await payouts.deleteMany({ _id: { $in: lost } })).deletedCount, 2);
  for (const id of lost) await intents.remove(`payout-${id}-0`);
  t.is((await db.collection('payout_batches').deleteOne({ _id: batchId as never })).deletedCount, 1);
  t.is(await forgetAfterHolds(service, db, project, [batchId]), 1, "the key's answer was in Redis");

  const { baseUrl } = await service.startExtraApi();
  const retry = await service.request('POST', POB, { key, baseUrl, body: { payouts: items }, headers: { 'Idempotency-Key': IDEM } });
  t.is(retry.status, 200, retry.text);
  t.is((retry.body as PayoutBatch).id, batchId, "the batch is the first job's");
  t.is((retry.body as PayoutBatch).counts.total, 3);
  await intents.resume();
  const made = await until('every item to be enqueued', async () => {
    const listed = await listAllPayouts(service, key, { batch: batchId });
    return listed.length === 3 && listed.every((p) => p.status === 'enqueued') ? listed : undefined;
  });
  t.deepEqual(made.map((p) => p.id).sort(), inserted.map((p) => p._id).sort(), "the first job's ids, each once");
  t.deepEqual(made.map((p) => p.reference).sort(), ['r-1', 'r-2', 'r-3']);
  t.is((await listAllPayouts(service, key)).length, 3, 'no second set of payouts');
  t.is((await holds(service, key)).length, 3, 'each item held once');
  t.is(await available(service, key), 7000);
});
