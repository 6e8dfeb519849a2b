/**
 * The ledger (worker/balance/ledger.ts) and the payouts' API on it
 * (worker/balance/payouts.ts) against a real Redis and FerretDB, on both store
 * profiles' paths: a movement posts once, however often and by however many
 * workers it is posted; holds never overdraw; a round's tail left by a crash is
 * completed, never posted twice; the sum of the transactions is the balance.
 */
import test from 'ava';
import { MongoClient } from 'mongodb';
import { Redis } from 'ioredis';
import type { BalanceDoc } from '../../../common/documents.js';
import { IdGenerator } from '../../../common/ids.js';
import { balanceId, ledgerKeyId, movementKeys, tailEntry } from '../../../common/ledger.js';
import { collections as collectionsOf, ensureIndexes } from '../../../common/mongo.js';
import { BalanceLedger, CLAIM_LEASE_MS, type Posting } from '../../../worker/balance/ledger.js';
import { holdPayout, releasePayout, settlePayout } from '../../../worker/balance/payouts.js';
import { InsertBatcher } from '../../../worker/group-commit.js';
import { stackUrls, uniqueName } from '../../helpers/service.js';

let client: MongoClient;
let redis: Redis;
const dbName = uniqueName('ledger');

test.before(async () => {
  client = new MongoClient(stackUrls().mongoUrl);
  await client.connect();
  redis = new Redis(stackUrls().redisUrl);
  await ensureIndexes({ db: client.db(dbName), collections: collectionsOf(client.db(dbName)) }, { queriesUseIndexes: true });
});

test.after.always(async () => {
  await client.db(dbName).dropDatabase().catch(() => undefined);
  await client.close();
  redis.disconnect();
});

const c = () => collectionsOf(client.db(dbName));

/** A worker's ledger: its own id generator, batcher and memory of what it inserted. */
function ledger(atomicConditionalUpdates: boolean): BalanceLedger {
  return new BalanceLedger({
    collections: c(),
    inserts: new InsertBatcher({ maxDocs: 32, waitMs: 5 }),
    redis,
    prefix: dbName,
    ids: new IdGenerator(Date.now),
    now: Date.now,
    atomicConditionalUpdates,
  });
}

function payment(project: string, id: string, amount: number, fee = 0): Posting {
  return { project, livemode: false, key: movementKeys.payment(id), currency: 'xof', type: 'payment', amount, fee, source: id, operator: 'mtn_momo' };
}

async function sumOf(project: string): Promise<{ sum: number; count: number; balance: BalanceDoc | null }> {
  const txns = await c().balanceTransactions.find({ project }).toArray();
  const balance = await c().balances.findOne({ _id: balanceId({ project, livemode: false }, 'xof') });
  return { sum: txns.reduce((s, t) => s + t.net, 0), count: txns.length, balance };
}

for (const atomic of [true, false]) {
  const profile = atomic ? 'conditional updates' : 'the lock alone';
  test(`a movement posted again, by the same or another worker, posts once (${profile})`, async (t) => {
    const project = uniqueName('p');
    const [a, b] = [ledger(atomic), ledger(atomic)];
    const outcomes = await Promise.all([a.post(payment(project, 'pi_1', 1000, 30)), b.post(payment(project, 'pi_1', 1000, 30)), a.post(payment(project, 'pi_1', 1000, 30))]);
    const ids = new Set(outcomes.map((o) => (o.kind === 'posted' ? o.txn._id : 'refused')));
    t.is(ids.size, 1, 'every poster got the one transaction');
    t.is(outcomes.filter((o) => o.kind === 'posted' && !o.again).length, 1);
    const { sum, count, balance } = await sumOf(project);
    t.is(count, 1);
    t.is(sum, 970);
    t.like(balance, { available: 970, seq: 1, by_operator: { mtn_momo: 970 } });
    const txn = await c().balanceTransactions.findOne({ project });
    t.like(txn, { amount: 1000, fee: 30, net: 970, balance_after: 970, type: 'payment', source: 'pi_1' });
    t.is(txn?.entries.reduce((s, e) => s + e.amount, 0), 0, 'the double entry sums to zero');
  });

  test(`concurrent holds of two workers never overdraw the balance (${profile})`, async (t) => {
    const project = uniqueName('p');
    const workers = [ledger(atomic), ledger(atomic)];
    await workers[0]!.post(payment(project, 'pi_funds', 1000));
    const outcomes = await Promise.all(
      Array.from({ length: 24 }, (_, i) => holdPayout(workers[i % 2]!, { project, livemode: false, id: `po_${i}`, amount: 100, currency: 'xof', operator: 'mtn_momo' })),
    );
    t.is(outcomes.filter((o) => o.ok).length, 10, 'ten holds of 100 fit in 1000');
    t.true(outcomes.filter((o) => !o.ok).every((o) => !o.ok && o.code === 'balance_insufficient'));
    const { sum, balance } = await sumOf(project);
    t.is(balance?.available, 0);
    t.is(sum, 0);
    const afters = (await c().balanceTransactions.find({ project }).sort({ seq: 1 }).toArray()).map((x) => x.balance_after);
    t.true(afters.every((v) => v >= 0), 'no balance_after below zero');
    t.deepEqual(afters, afters.map((_, i) => 1000 - i * 100), 'each posting leaves the balance the one before left, moved by its net');
  });
}

test("a round's tail that a crash left unwritten is written by the next round, and its movement is not posted again", async (t) => {
  const project = uniqueName('p');
  const first = ledger(true);
  const posted = await first.post(payment(project, 'pi_a', 500));
  if (posted.kind !== 'posted') return t.fail();
  // The balance keeps the round's transaction as a string until its insert is confirmed (common/ledger.ts tailEntry).
  const written = await c().balances.findOne({ _id: balanceId(posted.txn, 'xof') });
  t.deepEqual(written?.tail, [tailEntry(posted.txn)]);
  // As after a crash between the balance's update and the inserts: the transaction is in the tail only.
  await c().balanceTransactions.deleteOne({ _id: posted.txn._id });
  await c().ledgerKeys.deleteOne({ _id: ledgerKeyId(balanceId(posted.txn, 'xof'), posted.txn.key) });
  const other = ledger(true);
  const again = await other.post(payment(project, 'pi_a', 500));
  t.like(again, { kind: 'posted', again: true });
  t.is(again.kind === 'posted' ? again.txn._id : '', posted.txn._id);
  await other.post(payment(project, 'pi_b', 250));
  const { sum, count, balance } = await sumOf(project);
  t.is(count, 2);
  t.is(sum, 750);
  t.is(balance?.available, 750);
});

test("a tail of whole documents (written before the tail kept strings) is written by the next round as well", async (t) => {
  const project = uniqueName('p');
  const posted = await ledger(true).post(payment(project, 'pi_old', 300));
  if (posted.kind !== 'posted') return t.fail();
  await c().balances.updateOne({ _id: balanceId(posted.txn, 'xof') }, { $set: { tail: [posted.txn] } });
  await c().balanceTransactions.deleteOne({ _id: posted.txn._id });
  await ledger(true).post(payment(project, 'pi_new', 200));
  t.like(await c().balanceTransactions.findOne({ _id: posted.txn._id }), { _id: posted.txn._id, amount: 300, balance_after: 300, seq: 1 });
  t.is((await sumOf(project)).sum, 500);
});

test('a payout: held, then released once (payout_failure) or settled with nothing moving', async (t) => {
  const project = uniqueName('p');
  const l = ledger(false);
  const deps = { collections: c() };
  await l.post(payment(project, 'pi_funds', 700));
  const payout = { project, livemode: false, id: 'po_x', amount: 300, currency: 'xof', operator: 'mtn_momo' };
  t.like(await holdPayout(l, payout), { ok: true, txn: { type: 'payout', amount: -300, net: -300, balance_after: 400 } });
  t.like(await holdPayout(l, payout), { ok: true, txn: { balance_after: 400 } }, 'a retried hold answers the first');
  t.like(await holdPayout(l, { ...payout, id: 'po_big', amount: 401 }), { ok: false, code: 'balance_insufficient', available: 400 });
  t.like(await settlePayout(deps, payout), { type: 'payout', source: 'po_x' });
  const released = await releasePayout(l, deps, payout);
  t.like(released, { type: 'payout_failure', amount: 300, balance_after: 700 });
  t.is((await releasePayout(l, deps, payout))?._id, released?._id, 'released once');
  t.is(await releasePayout(l, deps, { ...payout, id: 'po_big' }), null, 'a payout never held gives nothing back');
  const { sum, balance } = await sumOf(project);
  t.is(sum, 700);
  t.is(balance?.available, 700);
});

test('a claim whose round died: while young it fails the posting (a retry finds it), once its lease is over it is adopted and posted once', async (t) => {
  const project = uniqueName('p');
  const l = ledger(true);
  const identity = ledgerKeyId(balanceId({ project, livemode: false }, 'xof'), movementKeys.payment('pi_dead'));
  // As a round leaves it that died between its claim and its balance's update.
  await c().ledgerKeys.insertOne({ _id: identity, txn: 'txn_dead', claimed_ms: Date.now() });
  await t.throwsAsync(l.post(payment(project, 'pi_dead', 400)), { message: /being posted by another round/ });
  t.like(await l.post(payment(project, 'pi_alive', 100)), { kind: 'posted', again: false }, 'the rest of the balance moves on');
  await c().ledgerKeys.updateOne({ _id: identity }, { $set: { claimed_ms: Date.now() - CLAIM_LEASE_MS } });
  const adopted = await l.post(payment(project, 'pi_dead', 400));
  t.like(adopted, { kind: 'posted', again: false, txn: { _id: 'txn_dead', balance_after: 500 } });
  t.like(await ledger(true).post(payment(project, 'pi_dead', 400)), { kind: 'posted', again: true, txn: { _id: 'txn_dead' } }, 'another worker finds it posted');
  const { sum, count, balance } = await sumOf(project);
  t.is(count, 2);
  t.is(sum, 500);
  t.is(balance?.available, 500);
});

test("a payment's identity held by its event claim: posted under its transaction with no claim of the ledger's; a retry finds it; one whose round died is adopted once its lease is over", async (t) => {
  const project = uniqueName('p');
  const [a, b] = [ledger(false), ledger(false)];
  const now = Date.now();
  const first = await a.post(payment(project, 'pi_held', 800), { txn: 'txn_held', claimedMs: now, fresh: true });
  t.like(first, { kind: 'posted', again: false, txn: { _id: 'txn_held', balance_after: 800 } });
  t.is(await c().ledgerKeys.findOne({ _id: ledgerKeyId(balanceId({ project, livemode: false }, 'xof'), movementKeys.payment('pi_held')) }), null, 'no ledger_keys claim');
  t.like(await b.post(payment(project, 'pi_held', 800), { txn: 'txn_held', claimedMs: now, fresh: false }), { kind: 'posted', again: true, txn: { _id: 'txn_held' } }, "another worker's retry finds it");

  // A claim whose round died before its balance's update: its transaction is nowhere.
  await t.throwsAsync(b.post(payment(project, 'pi_dead', 300), { txn: 'txn_dead2', claimedMs: Date.now(), fresh: false }), { message: /being posted by another round/ });
  const adopted = await b.post(payment(project, 'pi_dead', 300), { txn: 'txn_dead2', claimedMs: Date.now() - CLAIM_LEASE_MS, fresh: false });
  t.like(adopted, { kind: 'posted', again: false, txn: { _id: 'txn_dead2', balance_after: 1100 } });
  const { sum, count, balance } = await sumOf(project);
  t.is(count, 2);
  t.is(sum, 1100);
  t.like(balance, { available: 1100, seq: 2 });
});
