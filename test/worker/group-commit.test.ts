/**
 * The insert batcher against a real FerretDB: per-document outcomes inside one
 * insertMany, and a fault that fails the whole batch.
 */
import test from 'ava';
import { MongoClient } from 'mongodb';
import { isDuplicateKey } from '../../common/mongo.js';
import { InsertBatcher } from '../../worker/group-commit.js';
import { through, WriteGate } from '../../worker/write-gate.js';
import { stackUrls, uniqueName, until } from '../helpers/service.js';

/** A write gate that counts the work that came to it (waiting or run). */
class WatchedGate extends WriteGate {
  arrived = 0;
  override run<T>(work: () => Promise<T>, lane?: 'first' | 'then'): Promise<T> {
    this.arrived++;
    return super.run(work, lane);
  }
}

interface Doc {
  _id: string;
  n: number;
}

let client: MongoClient;
const dbName = uniqueName('gc');

test.before(async () => {
  client = new MongoClient(stackUrls().mongoUrl);
  await client.connect();
});

test.after.always(async () => {
  await client.db(dbName).dropDatabase().catch(() => undefined);
  await client.close();
});

test('documents of one window go in one insertMany; a duplicate fails only its own caller', async (t) => {
  const collection = client.db(dbName).collection<Doc>(uniqueName('c'));
  await collection.insertOne({ _id: 'taken', n: 0 });
  const batcher = new InsertBatcher({ maxDocs: 10, waitMs: 50 });
  const ids = ['a', 'b', 'taken', 'c'];
  const outcomes = await Promise.allSettled(ids.map((id, n) => batcher.insert(collection, { _id: id, n })));
  t.is(batcher.stats.flushes, 1, 'one round trip for the window');
  t.is(batcher.stats.documents, 4);
  t.deepEqual(outcomes.map((o) => o.status), ['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
  const refused = outcomes[2] as PromiseRejectedResult;
  t.true(isDuplicateKey(refused.reason), 'the duplicate is recognised as one, so the job takes the slow path');
  t.deepEqual((await collection.find({}).sort({ _id: 1 }).toArray()).map((d) => d._id), ['a', 'b', 'c', 'taken']);
});

test('a full batch is flushed at once, without waiting for the timer', async (t) => {
  const collection = client.db(dbName).collection<Doc>(uniqueName('c'));
  const batcher = new InsertBatcher({ maxDocs: 3, waitMs: 60_000 });
  await Promise.all([1, 2, 3].map((n) => batcher.insert(collection, { _id: `d${n}`, n })));
  t.is(await collection.countDocuments({}), 3);
});

test('insertNow sends its documents, with any waiting, in one insertMany at once', async (t) => {
  const collection = client.db(dbName).collection<Doc>(uniqueName('c'));
  const batcher = new InsertBatcher({ maxDocs: 10, waitMs: 60_000 });
  const waiting = batcher.insert(collection, { _id: 'w', n: 0 });
  await Promise.all([waiting, ...batcher.insertNow(collection, [1, 2, 3].map((n) => ({ _id: `d${n}`, n })))]);
  t.is(batcher.stats.flushes, 1);
  t.is(await collection.countDocuments({}), 4);
});

test('an infrastructure fault fails every caller of the batch', async (t) => {
  const closed = new MongoClient(stackUrls().mongoUrl, { serverSelectionTimeoutMS: 500 });
  await closed.connect();
  const collection = closed.db(dbName).collection<Doc>(uniqueName('c'));
  await closed.close();
  const batcher = new InsertBatcher({ maxDocs: 10, waitMs: 10 });
  const outcomes = await Promise.allSettled([1, 2, 3].map((n) => batcher.insert(collection, { _id: `x${n}`, n })));
  t.deepEqual(outcomes.map((o) => o.status), ['rejected', 'rejected', 'rejected']);
  for (const o of outcomes) t.false(isDuplicateKey((o as PromiseRejectedResult).reason));
});

test('batching off (waitMs 0): each insert goes alone', async (t) => {
  const collection = client.db(dbName).collection<Doc>(uniqueName('c'));
  const batcher = new InsertBatcher({ maxDocs: 64, waitMs: 0 });
  await Promise.all([1, 2].map((n) => batcher.insert(collection, { _id: `s${n}`, n })));
  t.is(batcher.stats.flushes, 0);
  t.is(await collection.countDocuments({}), 2);
});

test('behind a busy write gate, a flushed batch keeps taking documents until its turn, up to maxDocs', async (t) => {
  const collection = client.db(dbName).collection<Doc>(uniqueName('c'));
  const gate = new WatchedGate(1);
  let open: () => void = () => undefined;
  // Another write holds the gate's one slot.
  const holder = gate.run(() => new Promise<void>((resolve) => (open = resolve)));
  const batcher = new InsertBatcher({ maxDocs: 3, waitMs: 5, gate });
  const first = batcher.insert(collection, { _id: 'g1', n: 1 });
  // Its timer fired: flushed, waiting at the gate.
  await until('the first batch to wait at the gate', () => (gate.arrived === 2 ? true : undefined), 5000);
  const later = [2, 3, 4].map((n) => batcher.insert(collection, { _id: `g${n}`, n }));
  t.is(batcher.stats.flushes, 0, 'nothing sent while the gate is held');
  open();
  await holder;
  await Promise.all([first, ...later]);
  t.is(batcher.stats.flushes, 2, 'the waiting batch took two more, up to maxDocs; the fourth went in a batch of its own');
  t.is(batcher.stats.documents, 4);
  t.is(await collection.countDocuments({}), 4);
});

test('the write gate lets inserts (first lane) pass before updates waiting longer', async (t) => {
  const gate = new WriteGate(1);
  const order: string[] = [];
  let open: () => void = () => undefined;
  const holder = gate.run(() => new Promise<void>((resolve) => (open = resolve)));
  const update = gate.run(async () => void order.push('update'), 'then');
  const insert = gate.run(async () => void order.push('insert'), 'first');
  open();
  await Promise.all([holder, update, insert]);
  t.deepEqual(order, ['insert', 'update']);
  // Through a narrower gate, at most its limit of the work holds the wide gate's slots.
  const wide = new WriteGate(2);
  const narrow = new WriteGate(1);
  let inWide = 0;
  let most = 0;
  const work = async () => {
    inWide++;
    most = Math.max(most, inWide);
    await new Promise((resolve) => setTimeout(resolve, 10));
    inWide--;
  };
  await Promise.all([1, 2, 3].map(() => through(narrow, wide).run(work)));
  t.is(most, 1);
});
