/**
 * A created event is stored once (DESIGN section 20, security review M4): while its
 * intent is unchanged the `payment_intent.created` event is the intent itself,
 * derived from it, and no copy of it is written anywhere; the intent's first change
 * records it in `events`, once, with the same bytes that were listed, retrieved and
 * delivered before. Intents stored by an earlier version, with the event on the
 * intent, are read as they are and lose the copy at their first change.
 */
import test from 'ava';
import { createdEventId, createdEventJson } from '../../common/events.js';
import type { EventDoc, PaymentIntentDoc } from '../../common/documents.js';
import { IdGenerator, randomBase62 } from '../../common/ids.js';
import { createIntent, listAllEvents, update } from '../helpers/payment-intent-lifecycle.js';
import { useService } from '../helpers/use-service.js';
import { createEndpoint } from '../helpers/webhook-fixtures.js';

const e2e = useService(test, { workers: 1, receiver: true });

async function stored(id: string): Promise<{ intent: PaymentIntentDoc | null; events: EventDoc[] }> {
  const db = await e2e.service.db();
  const intent = await db.collection<PaymentIntentDoc>('payment_intents').findOne({ _id: id });
  const events = await db.collection<EventDoc>('events').find({ object_id: id, type: 'payment_intent.created' }).toArray();
  return { intent, events };
}

async function retrieveEvent(key: string, id: string): Promise<string> {
  const res = await e2e.service.request('GET', `/v1/events/${id}`, { key });
  if (res.status !== 200) throw new Error(`retrieving ${id}: ${res.status} ${res.text}`);
  return res.text;
}

test('the created event is the intent itself until its first change, which records it in events once, with the same bytes', async (t) => {
  const key = await e2e.key('once');
  await createEndpoint(e2e.service, key, e2e.receiver.url('/once'), ['payment_intent.created']);
  const pi = await createIntent(e2e.service, key, { amount: 4200, description: 'first', metadata: { order: 'A-1' } });
  const eventId = createdEventId(pi.id);

  // Delivered, listed and retrieved: one and the same bytes, stored nowhere but as the intent.
  const [delivery] = await e2e.receiver.waitFor('/once');
  const delivered = delivery!.body.toString('utf8');
  t.is(await retrieveEvent(key, eventId), delivered);
  const listed = await listAllEvents(e2e.service, key, 'payment_intent.created');
  t.deepEqual(listed.map((e) => e.id), [eventId]);
  t.deepEqual(listed[0], JSON.parse(delivered));
  const before = await stored(pi.id);
  t.is(before.intent?.created_event, undefined, 'no copy of the event on the intent');
  t.deepEqual(before.events, [], 'nor in events');

  // The first change records it, as it was: the intent's old description and metadata.
  const changed = await update(e2e.service, key, pi.id, { description: 'second', metadata: { order: 'A-2' } });
  t.is(changed.status, 200, changed.text);
  const after = await stored(pi.id);
  t.is(after.intent?.created_event, undefined);
  t.is(after.events.length, 1);
  t.like(after.events[0], { _id: eventId, project: before.intent?.project, livemode: false, type: 'payment_intent.created', object_id: pi.id, json: delivered });
  t.is(await retrieveEvent(key, eventId), delivered);
  const again = await listAllEvents(e2e.service, key, 'payment_intent.created');
  t.deepEqual(again.map((e) => e.id), [eventId], 'listed once, from its new home');
  t.like(again[0]?.data.object, { description: 'first', metadata: { order: 'A-1' } });

  // Later changes record nothing more.
  const cancel = await e2e.service.request('POST', `/v1/payment_intents/${pi.id}/cancel`, { key });
  t.is(cancel.status, 200, cancel.text);
  t.is((await stored(pi.id)).events.length, 1);
  t.is(await retrieveEvent(key, eventId), delivered);
  t.is(e2e.receiver.received('/once').length, 1, 'delivered once');
});

test('events of changed and unchanged intents page in order, each once, with every page size', async (t) => {
  const key = await e2e.key('pages');
  const ids: string[] = [];
  for (let i = 0; i < 6; i++) {
    const pi = await createIntent(e2e.service, key, { amount: 100 + i });
    ids.push(pi.id);
    // Every other intent changed: its created event is in `events`, beside the update's.
    if (i % 2 === 1) t.is((await update(e2e.service, key, pi.id, { metadata: { n: String(i) } })).status, 200);
  }
  const all = await listAllEvents(e2e.service, key);
  t.deepEqual(
    all.map((e) => e.id),
    [...ids].reverse().map(createdEventId),
    'an update makes no event: the created events, newest first',
  );
  for (const limit of [1, 2, 4]) {
    const seen: string[] = [];
    let after: string | null = null;
    for (;;) {
      const query: string = `limit=${limit}${after ? `&starting_after=${after}` : ''}`;
      const res = await e2e.service.request('GET', `/v1/events?${query}`, { key });
      t.is(res.status, 200, res.text);
      const page = res.body.data as Array<{ id: string }>;
      seen.push(...page.map((e) => e.id));
      if (!res.body.has_more) break;
      after = page[page.length - 1]!.id;
    }
    t.deepEqual(seen, all.map((e) => e.id), `limit ${limit}`);
    // And backwards, from the oldest.
    const back = await e2e.service.request('GET', `/v1/events?limit=${limit}&ending_before=${all[all.length - 1]!.id}`, { key });
    t.deepEqual(
      back.body.data.map((e: { id: string }) => e.id),
      all.slice(-1 - limit, -1).map((e) => e.id),
      `limit ${limit}, ending_before`,
    );
  }
});

test('an intent stored with its created event on it (an earlier version) is read as it is, and loses the copy at its first change', async (t) => {
  const project = `legacy_${randomBase62(8).toLowerCase()}`;
  const key = await e2e.service.issueKey(project);
  const id = new IdGenerator(Date.now).next('payment_intent');
  const created = Math.floor(Date.now() / 1000);
  const fields: PaymentIntentDoc = {
    _id: id, project, livemode: false, amount: 900, currency: 'xof', description: null, status: 'new',
    client_secret: `${id}_secret_${randomBase62(24)}`, automatic_operator: true, allowed_operators: ['mtn_momo', 'wave'],
    selected_operator: null, metadata: [], created, expires_at: created + 3600, attempt: 0, rev: 0,
  };
  const legacy = createdEventJson(fields);
  const db = await e2e.service.db();
  await db.collection<PaymentIntentDoc>('payment_intents').insertOne({ ...fields, created_event: legacy });

  t.is(await retrieveEvent(key, createdEventId(id)), legacy);
  t.deepEqual((await listAllEvents(e2e.service, key)).map((e) => e.id), [createdEventId(id)]);
  t.is((await update(e2e.service, key, id, { description: 'changed' })).status, 200);
  const after = await stored(id);
  t.is(after.intent?.created_event, undefined, 'the copy on the intent is gone');
  t.is(after.events.length, 1);
  t.is(after.events[0]?.json, legacy);
  t.is(await retrieveEvent(key, createdEventId(id)), legacy);
  t.deepEqual((await listAllEvents(e2e.service, key)).map((e) => e.id), [createdEventId(id)]);
});
