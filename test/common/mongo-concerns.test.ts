/**
 * MongoDB past one machine (DESIGN section 19): on a replica set the service writes
 * with `w: "majority"` and reads with `readConcern: "majority"`, chosen from the
 * connection string (common/mongo.ts `majorityConcerns`); and the same concerns,
 * forced on the test stack's FerretDB, change nothing there: it takes them.
 */
import test from 'ava';
import { ensureIndexes, majorityConcerns, openMongo } from '../../common/mongo.js';
import { stackUrls, uniqueName } from '../helpers/service.js';

test('a replica set or an SRV string gets majority writes and reads; a single server, or a string with its own, is left alone', (t) => {
  const majority = { writeConcern: { w: 'majority' }, readConcern: { level: 'majority' } };
  t.deepEqual(majorityConcerns('mongodb://a:27017,b:27017,c:27017/?replicaSet=rs0'), majority);
  t.deepEqual(majorityConcerns('mongodb+srv://cluster0.example.net/payments'), majority);
  t.deepEqual(majorityConcerns('mongodb://127.0.0.1:27017/'), {});
  t.deepEqual(majorityConcerns('mongodb://a,b/?replicaSet=rs0&w=1'), { readConcern: { level: 'majority' } });
  t.deepEqual(majorityConcerns('mongodb://a,b/?replicaSet=rs0&readConcernLevel=local'), { writeConcern: { w: 'majority' } });
});

test('FerretDB takes majority concerns: indexes, inserts, updates, reads and counts all work with them', async (t) => {
  const mongo = openMongo(stackUrls().mongoUrl, uniqueName('concerns'), 'test', 5, { concerns: majorityConcerns('mongodb://a/?replicaSet=rs0') });
  t.teardown(async () => {
    await mongo.db.dropDatabase().catch(() => undefined);
    await mongo.client.close();
  });
  t.deepEqual(mongo.collections.paymentIntents.writeConcern?.w, 'majority', 'the concerns reach the collections');
  await ensureIndexes(mongo, { queriesUseIndexes: true });
  const refunds = mongo.db.collection<{ _id: string; n: number }>('concern_probe');
  await refunds.insertOne({ _id: 'a', n: 1 });
  await refunds.insertMany([{ _id: 'b', n: 2 }, { _id: 'c', n: 3 }]);
  t.is((await refunds.updateOne({ _id: 'a' }, { $inc: { n: 10 } })).modifiedCount, 1);
  t.is((await refunds.findOneAndUpdate({ _id: 'b' }, { $set: { n: 20 } }, { returnDocument: 'after' }))?.n, 20);
  t.is((await refunds.bulkWrite([{ updateOne: { filter: { _id: 'c' }, update: { $set: { n: 30 } } } }])).modifiedCount, 1);
  t.deepEqual((await refunds.find({}).sort({ _id: 1 }).toArray()).map((d) => d.n), [11, 20, 30]);
  t.is(await refunds.countDocuments({}), 3);
  t.is((await refunds.deleteOne({ _id: 'c' })).deletedCount, 1);
  await t.throwsAsync(refunds.insertOne({ _id: 'a', n: 0 }), { message: /duplicate key|E11000/ }, 'a duplicate is still refused');
});
