/**
 * Grouped fenced updates against a real FerretDB: updates that meet at a busy gate
 * go in one command, each with its own outcome; a fence that fails keeps its own
 * update out; a count that cannot say which update matched answers `unknown`.
 */
import test from 'ava';
import { Redis } from 'ioredis';
import { MongoClient, type Collection } from 'mongodb';
import { SQLITE_BUSY_TIMEOUT_MS } from '#scripts/lib/servers.mjs';
import { STORE_PROFILES } from '../../common/store-profile.js';
import { FencedUpdates } from '../../worker/fenced-updates.js';
import { WriteGate } from '../../worker/write-gate.js';
import { INTENT_LOCK, RecordLock } from '../../worker/record-lock.js';
import { stackUrls, uniqueName } from '../helpers/service.js';

interface Doc {
  _id: string;
  n: number;
}

let client: MongoClient;
const dbName = uniqueName('fu');
const BOUND = STORE_PROFILES.ferretdb.updateStatementBoundMs;

test.before(async () => {
  client = new MongoClient(stackUrls().mongoUrl, { monitorCommands: true });
  await client.connect();
});

test.after.always(async () => {
  await client.db(dbName).dropDatabase().catch(() => undefined);
  await client.close();
});

test('the local store profile\'s bound on one update is the busy timeout the stack gives FerretDB', (t) => {
  t.is(STORE_PROFILES.ferretdb.updateStatementBoundMs, SQLITE_BUSY_TIMEOUT_MS);
});

/** A gate whose one slot another write holds until `open()`. */
function heldGate() {
  const gate = new WriteGate(1);
  let open: () => void = () => undefined;
  const holder = gate.run(() => new Promise<void>((resolve) => (open = resolve)));
  return { gate, open: async () => (open(), holder) };
}

async function seeded(ids: string[]): Promise<Collection<Doc>> {
  const collection = client.db(dbName).collection<Doc>(uniqueName('c'));
  await collection.insertMany(ids.map((_id) => ({ _id, n: 0 })));
  return collection;
}

const held = () => Promise.resolve(true);

/** The collection's `update` commands, as the client sent them. */
function updateCommands(collection: Collection<Doc>): { count: () => number; stop: () => void } {
  let count = 0;
  const listener = (event: { commandName: string; command: { update?: string } }) => {
    if (event.commandName === 'update' && event.command.update === collection.collectionName) count++;
  };
  client.on('commandStarted', listener);
  return { count: () => count, stop: () => client.off('commandStarted', listener) };
}

test('updates that meet at a busy gate go as one command, each answered on its own', async (t) => {
  const collection = await seeded(['a', 'b', 'c']);
  const { gate, open } = heldGate();
  const updates = new FencedUpdates({ maxDocs: 16, gate, statementBoundMs: BOUND });
  const commands = updateCommands(collection);
  try {
    const outcomes = ['a', 'b', 'c'].map((id, i) => updates.update({ collection, filter: { _id: id }, update: { $set: { n: i + 1 } }, fence: held }));
    await open();
    t.deepEqual(await Promise.all(outcomes), ['updated', 'updated', 'updated']);
    t.is(commands.count(), 1, 'one update command for the three');
  } finally {
    commands.stop();
  }
  t.deepEqual(updates.stats, { batches: 1, updates: 3 });
  t.deepEqual((await collection.find({}).sort({ _id: 1 }).toArray()).map((d) => d.n), [1, 2, 3]);
});

test('an update whose lock is lost is not sent; the rest of its batch goes', async (t) => {
  const collection = await seeded(['a', 'b']);
  const { gate, open } = heldGate();
  const updates = new FencedUpdates({ maxDocs: 16, gate, statementBoundMs: BOUND });
  const fenced: string[] = [];
  const fence = (id: string, holds: boolean) => () => {
    fenced.push(id);
    return Promise.resolve(holds);
  };
  const kept = updates.update({ collection, filter: { _id: 'a' }, update: { $set: { n: 1 } }, fence: fence('a', true) });
  const lost = updates.update({ collection, filter: { _id: 'b' }, update: { $set: { n: 1 } }, fence: fence('b', false) });
  t.deepEqual(fenced, [], 'no fence before the batch\'s turn: it is renewed right before the send');
  await open();
  t.is(await kept, 'updated');
  t.is(await lost, 'lost');
  t.deepEqual(fenced.sort(), ['a', 'b']);
  t.is((await collection.findOne({ _id: 'b' }))?.n, 0, 'the lost one left the document as it was');
  t.is((await collection.findOne({ _id: 'a' }))?.n, 1);
});

test('a fence that fails (Redis away) fails its own update only', async (t) => {
  const collection = await seeded(['a', 'b']);
  const { gate, open } = heldGate();
  const updates = new FencedUpdates({ maxDocs: 16, gate, statementBoundMs: BOUND });
  const failing = updates.update({ collection, filter: { _id: 'a' }, update: { $set: { n: 1 } }, fence: () => Promise.reject(new Error('Connection is closed.')) });
  const going = updates.update({ collection, filter: { _id: 'b' }, update: { $set: { n: 1 } }, fence: held });
  await open();
  await t.throwsAsync(failing, { message: 'Connection is closed.' });
  t.is(await going, 'updated');
  t.is((await collection.findOne({ _id: 'a' }))?.n, 0);
});

test('when not every update of a batch matched, none can be told updated: each is unknown', async (t) => {
  const collection = await seeded(['a', 'b']);
  const { gate, open } = heldGate();
  const updates = new FencedUpdates({ maxDocs: 16, gate, statementBoundMs: BOUND });
  const matching = updates.update({ collection, filter: { _id: 'a', n: 0 }, update: { $set: { n: 1 } }, fence: held });
  const stale = updates.update({ collection, filter: { _id: 'b', n: 5 }, update: { $set: { n: 1 } }, fence: held });
  await open();
  t.deepEqual(await Promise.all([matching, stale]), ['unknown', 'unknown']);
  t.is((await collection.findOne({ _id: 'a' }))?.n, 1, 'the matching one applied: its caller finds it when it reads again');
  t.is((await collection.findOne({ _id: 'b' }))?.n, 0);
  // Alone, the answer is exact.
  const free = new FencedUpdates({ maxDocs: 16, gate: new WriteGate(1), statementBoundMs: BOUND });
  t.is(await free.update({ collection, filter: { _id: 'b', n: 5 }, update: { $set: { n: 2 } }, fence: held }), 'unknown');
  t.is(await free.update({ collection, filter: { _id: 'b', n: 0 }, update: { $set: { n: 2 } }, fence: held }), 'updated');
});

test('a full batch goes as it is; later updates make the next one', async (t) => {
  const collection = await seeded(['a', 'b', 'c']);
  const { gate, open } = heldGate();
  const updates = new FencedUpdates({ maxDocs: 2, gate, statementBoundMs: BOUND });
  const outcomes = ['a', 'b', 'c'].map((id) => updates.update({ collection, filter: { _id: id }, update: { $set: { n: 7 } }, fence: held }));
  await open();
  t.deepEqual(await Promise.all(outcomes), ['updated', 'updated', 'updated']);
  t.deepEqual(updates.stats, { batches: 2, updates: 3 });
});

test('a fault of the command fails every update of its batch', async (t) => {
  const closed = new MongoClient(stackUrls().mongoUrl, { serverSelectionTimeoutMS: 500 });
  await closed.connect();
  const collection = closed.db(dbName).collection<Doc>(uniqueName('c'));
  await closed.close();
  const { gate, open } = heldGate();
  const updates = new FencedUpdates({ maxDocs: 16, gate, statementBoundMs: BOUND });
  const outcomes = ['a', 'b'].map((id) => updates.update({ collection, filter: { _id: id }, update: { $set: { n: 1 } }, fence: held }));
  await open();
  const settled = await Promise.allSettled(outcomes);
  t.deepEqual(settled.map((o) => o.status), ['rejected', 'rejected']);
});

test('each update\'s lock is renewed for the updates ahead of it in its command, and the heartbeat does not cut that short', async (t) => {
  const collection = await seeded(['a', 'b', 'c']);
  const redis = new Redis(stackUrls().redisUrl);
  t.teardown(() => redis.disconnect());
  const keys = ['a', 'b', 'c'].map((id) => `${uniqueName('fu-lock')}:${id}`);
  const locks = keys.map((key) => new RecordLock(redis, key, INTENT_LOCK));
  for (const lock of locks) await lock.acquire();
  const asked: number[] = [];
  const { gate, open } = heldGate();
  const updates = new FencedUpdates({ maxDocs: 16, gate, statementBoundMs: BOUND });
  const outcomes = ['a', 'b', 'c'].map((id, i) =>
    updates.update({
      collection,
      filter: { _id: id },
      update: { $set: { n: 1 } },
      fence: (extraMs) => {
        asked[i] = extraMs;
        return locks[i]!.renew(undefined, extraMs);
      },
    }),
  );
  await open();
  t.deepEqual(await Promise.all(outcomes), ['updated', 'updated', 'updated']);
  t.deepEqual(asked, [0, BOUND, 2 * BOUND]);
  const ttls = await Promise.all(keys.map((key) => redis.pttl(key)));
  t.true(ttls[2]! > INTENT_LOCK.ttlMs + BOUND, `the third lives past its ttl and two bounds less a little: ${ttls.join(', ')}`);
  // A plain renewal (the heartbeat's) never shortens a lock.
  t.true(await locks[2]!.renew());
  t.true((await redis.pttl(keys[2]!)) > INTENT_LOCK.ttlMs + BOUND);
  for (const lock of locks) await lock.release();
});
