/**
 * The one place a delivery reads the event it sends. A delivery never signs bytes
 * taken from its job: it loads the event by id from MongoDB, and the event carries
 * its own scope, which the delivery compares with the endpoint's.
 *
 * An event whose deliveries are under way has its outbox entry (outbox.ts), which
 * holds the event's JSON: that small collection is read first. Otherwise (a resend,
 * a recovery, an entry the sweeper already released) the event is where it is
 * stored: `payment_intent.created` in the payment intent's own document (`evt_X` is
 * the created event of `pi_X`), every other event in the `events` collection.
 *
 * On the local stack's store a read may scan its collection, at a cost in
 * proportion to what the collection holds (docs/storage.md): the outbox holds only
 * the pending events, where the intents and events grow with every payment. On
 * MongoDB each read is an `_id` lookup.
 */
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
  // Events of transitions have their own documents; a created event lives in its object's.
  const other = await collections.events.findOne({ _id: eventId });
  if (other) return { id: eventId, type: other.type, project: other.project, livemode: other.livemode, json: other.json };
  const objectId = objectIdOfCreatedEvent(eventId);
  // The mapping is only a prefix swap: make sure it leads back to this very id.
  if (createdEventId(objectId) !== eventId) return null;
  const doc = await collections.paymentIntents.findOne(
    { _id: objectId },
    { projection: { project: 1, livemode: 1, created_event: 1 } },
  );
  if (!doc) return null;
  return { id: eventId, type: PAYMENT_INTENT_CREATED, project: doc.project, livemode: doc.livemode, json: doc.created_event };
}
