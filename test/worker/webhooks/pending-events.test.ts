/**
 * When an event's outbox entry goes (worker/webhooks/pending-events.ts), on a real
 * Redis and FerretDB: only once every expected delivery has finished, and by `_id`
 * alone, the one filter FerretDB hands to SQLite.
 */
import test from 'ava';
import { MongoClient, type CommandStartedEvent } from 'mongodb';
import type { OutboxDoc } from '../../../common/documents.js';
import { createLogger } from '../../../common/logger.js';
import { collections } from '../../../common/mongo.js';
import { PendingEvents } from '../../../worker/webhooks/pending-events.js';
import { openStack, type Stack } from '../../helpers/in-process.js';
import { uniqueName } from '../../helpers/service.js';

let stack: Stack;
let client: MongoClient;
const started: CommandStartedEvent[] = [];
test.before(async () => {
  stack = await openStack();
  // A client of its own that reports every command it sends.
  client = await MongoClient.connect(stack.config.mongodbUrl, { monitorCommands: true });
  client.on('commandStarted', (event) => started.push(event));
});
test.after.always(async () => {
  await client?.close();
  await stack?.close();
});

function pendingEvents(): PendingEvents {
  const c = collections(client.db(stack.config.mongodbDb));
  return new PendingEvents({ redis: stack.redis, prefix: stack.config.queuePrefix, collections: c, logger: createLogger('silent', 'test') });
}

function entry(): OutboxDoc {
  return { _id: uniqueName('evt'), project: 'p', livemode: false, type: 'payment_intent.created', json: '{}', created_ms: Date.now() };
}

const stored = async (id: string) => (await stack.mongo.collections.outbox.findOne({ _id: id })) !== null;

test('an entry goes once every expected delivery has finished, and a finish seen twice counts once', async (t) => {
  const pending = pendingEvents();
  t.teardown(() => pending.close());
  const [event, other] = [entry(), entry()];
  await stack.mongo.collections.outbox.insertMany([event, other]);
  await pending.expect(event._id, ['we_a', 'we_b']);
  await pending.expect(other._id, ['we_a']);

  await pending.finished(event._id, 'we_a');
  await pending.finished(event._id, 'we_a');
  await pending.flush();
  t.true(await stored(event._id), 'one delivery of two is still to finish');

  await pending.finished(event._id, 'we_b');
  await pending.flush();
  t.false(await stored(event._id));
  t.true(await stored(other._id), 'an entry nobody released stays');
});

test('released entries go in one command, each by its _id alone', async (t) => {
  const pending = pendingEvents();
  t.teardown(() => pending.close());
  const entries = [entry(), entry(), entry()];
  await stack.mongo.collections.outbox.insertMany(entries);
  for (const e of entries) pending.release(e._id);
  started.length = 0;
  await pending.flush();

  // Only this test's deletes: the file's other test runs at the same time on the same client.
  const mine = new Set(entries.map((e) => e._id));
  const deletes = started.filter(
    (e) => e.commandName === 'delete' && (e.command.deletes as Array<{ q: { _id?: unknown } }>).some((s) => mine.has(s.q._id as string)),
  );
  t.is(deletes.length, 1);
  const statements = (deletes[0].command.deletes as Array<{ q: Record<string, unknown> }>).map((s) => s.q);
  t.deepEqual(
    statements.map((q) => q._id).sort(),
    entries.map((e) => e._id).sort(),
  );
  for (const q of statements) t.deepEqual(Object.keys(q), ['_id'], 'a filter of the _id alone');
  for (const q of statements) t.is(typeof q._id, 'string', 'an _id value, not an operator');
  for (const e of entries) t.false(await stored(e._id));
});
