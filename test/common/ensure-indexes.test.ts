/**
 * The indexes by store profile (common/mongo.ts `ensureIndexes`): a store whose
 * queries use indexes gets every one; a store whose queries use none (the local
 * stack's) gets the unique ones alone, which still refuse a duplicate, and loses the
 * others an earlier start made; every collection is made either way. Against the test stack's real server.
 */
import test from 'ava';
import { MongoClient } from 'mongodb';
import { collections, ensureIndexes, isDuplicateKey } from '../../common/mongo.js';
import { STORE_PROFILES } from '../../common/store-profile.js';
import { stackUrls, uniqueName } from '../helpers/service.js';

test('a store that reads no index keeps only the unique ones, and they still refuse a duplicate', async (t) => {
  const client = new MongoClient(stackUrls().mongoUrl);
  await client.connect();
  const db = client.db(uniqueName('indexes'));
  t.teardown(async () => {
    await db.dropDatabase().catch(() => undefined);
    await client.close();
  });
  const c = collections(db);
  const names = async (collection: { listIndexes: () => { toArray: () => Promise<Array<{ name?: string }>> } }) =>
    (await collection.listIndexes().toArray()).map((i) => String(i.name)).sort();

  // A store with no query index: every collection is made, with its unique indexes alone.
  await ensureIndexes({ db, collections: c }, STORE_PROFILES.ferretdb);
  const made = (await db.listCollections({}, { nameOnly: true }).toArray()).map((info) => info.name);
  t.true(['events', 'balance_transactions', 'ledger_keys', 'payment_intents'].every((name) => made.includes(name)), made.join(', '));
  t.deepEqual(await names(c.events), ['_id_']);

  await ensureIndexes({ db, collections: c }, STORE_PROFILES.mongodb);
  const all = await names(c.paymentIntents);
  t.true(all.includes('scope_id') && all.includes('sweep_expires_at') && all.includes('idem'), all.join(', '));
  t.true((await names(c.balanceTransactions)).includes('statement'));

  // An api and a worker starting at once: both drop the same indexes.
  await Promise.all([ensureIndexes({ db, collections: c }, STORE_PROFILES.ferretdb), ensureIndexes({ db, collections: c }, STORE_PROFILES.ferretdb)]);
  t.deepEqual(await names(c.paymentIntents), ['_id_', 'idem']);
  t.deepEqual(await names(c.balanceTransactions), ['_id_']);
  t.deepEqual(await names(c.apiKeys), ['_id_', 'hash']);
  await c.paymentIntents.insertOne({ _id: 'pi_a', idem: 'k1' } as never);
  const twice = await c.paymentIntents.insertOne({ _id: 'pi_b', idem: 'k1' } as never).catch((err: unknown) => err);
  t.true(isDuplicateKey(twice), String(twice));

  // The other way back: every index again.
  await ensureIndexes({ db, collections: c }, STORE_PROFILES.mongodb);
  t.deepEqual(await names(c.paymentIntents), all);
});
