/**
 * The one place a delivery reads the event it sends. A delivery never signs bytes
 * taken from its job: it loads the event by id from MongoDB, and the event carries
 * its own scope, which the delivery compares with the endpoint's.
 *
 * An event whose deliveries are under way has its outbox entry (outbox.ts), which
 * holds the event's JSON: that small collection is read first. Otherwise (a resend,
 * a recovery, an entry the sweeper already released) the event is where it is
 * stored: in the `events` collection, or, for the `payment_intent.created` event of
 * an intent that has not changed, the intent itself (`evt_X` is the created event of
 * `pi_X`; common/created-events.ts).
 *
 * On the local stack's store a read may scan its collection, at a cost in
 * proportion to what the collection holds (docs/storage.md): the outbox holds only
 * the pending events, where the intents and events grow with every payment. On
 * MongoDB each read is an `_id` lookup.
 */
import { createdEventOf, INTENT_FOR_EVENT } from '../../common/created-events.js';
import { createdEventId, objectIdOfCreatedEvent, PAYMENT_INTENT_CREATED } from '../../common/events.js';
import type { Collections } from '../../common/mongo.js';

export interface StoredEvent {
  id: string;
  type: string;
  project: string;
  livemode: boolean;
  /** The event JSON, byte for byte what is listed and delivered. */
  json: string;
}

/** The event with this id, or null when there is none. */
export async function loadEvent(collections: Collections, eventId: string): Promise<StoredEvent | null> {
  if (!eventId.startsWith('evt_')) return null;
  const pending = await collections.outbox.findOne({ _id: eventId });
  if (pending) return { id: eventId, type: pending.type, project: pending.project, livemode: pending.livemode, json: pending.json };
  const recorded = await collections.events.findOne({ _id: eventId });
  if (recorded) return { id: eventId, type: recorded.type, project: recorded.project, livemode: recorded.livemode, json: recorded.json };
  const objectId = objectIdOfCreatedEvent(eventId);
  // The mapping is only a prefix swap: make sure it leads back to this very id.
  if (createdEventId(objectId) !== eventId) return null;
  const doc = await collections.paymentIntents.findOne({ _id: objectId }, { projection: INTENT_FOR_EVENT });
  if (!doc) return null;
  // Changed since `events` was read: its created event was recorded there first.
  const json = await createdEventOf(collections, doc);
  return json === null ? null : { id: eventId, type: PAYMENT_INTENT_CREATED, project: doc.project, livemode: doc.livemode, json };
}
