/**
 * Where a payment intent's `payment_intent.created` event is stored: once (DESIGN
 * section 20, security review M4). Its JSON is the intent as it was created, so it
 * need not be written beside the intent while the intent is unchanged:
 *
 * - While the intent is as it was created (`rev` 0), the event is the intent itself:
 *   its JSON is derived from the document (`createdEventJson`), the same bytes every
 *   time. So the event exists exactly when the intent does, as it did when it was
 *   written in the same insert.
 * - The first change of the intent records the event, under the intent's lock and
 *   before its update, as a document of `events` (`evt_X` for `pi_X`,
 *   worker/lifecycle/transition.ts): an insert idempotent on that id, so a retried
 *   change records nothing twice. Whoever finds the intent changed finds the event
 *   there; whoever found it unchanged derived the same bytes.
 * - An intent stored by an earlier version carries the JSON in `created_event`, which
 *   is read when present; its first change drops it.
 *
 * The retention sweeper deletes events older than `EVENT_RETENTION_DAYS`
 * (worker/processors/sweep-retention.ts); a created event derived from an intent
 * older than that is not shown either (`withinRetention`).
 */
import type { EventDoc, PaymentIntentDoc } from './documents.js';
import { createdEventId, createdEventJson, PAYMENT_INTENT_CREATED } from './events.js';
import { idTime } from './ids.js';
import type { Collections } from './mongo.js';

/** An intent as the readers of its created event read it: everything but its history and its refunds. */
export type IntentForEvent = Omit<PaymentIntentDoc, 'history' | 'refunds'>;

/** The projection that reads an intent so. */
export const INTENT_FOR_EVENT = { history: 0, refunds: 0 } as const;

/** Whether the intent is as it was created: no transition has changed it. */
export function unchangedSinceCreated(doc: Pick<PaymentIntentDoc, 'rev'>): boolean {
  return (doc.rev ?? 0) === 0;
}

/** The created event's JSON from the intent alone; null once the intent has changed (the event is in `events` then). */
export function createdEventFromIntent(doc: IntentForEvent): string | null {
  if (doc.created_event !== undefined) return doc.created_event;
  return unchangedSinceCreated(doc) ? createdEventJson(doc) : null;
}

/**
 * The created event's JSON, wherever it is: null when there is none (its intent
 * changed after the event was deleted for its age). `doc` must have been read before
 * `events` is: an intent changed since it was read had its event recorded first.
 */
export async function createdEventOf(collections: Collections, doc: IntentForEvent): Promise<string | null> {
  const own = createdEventFromIntent(doc);
  if (own !== null) return own;
  const recorded = await collections.events.findOne({ _id: createdEventId(doc._id) }, { projection: { json: 1 } });
  return recorded?.json ?? null;
}

/** The created event as its own document of `events`, as the intent's first change records it. */
export function createdEventDoc(doc: IntentForEvent): EventDoc {
  const id = createdEventId(doc._id);
  return {
    _id: id,
    project: doc.project,
    livemode: doc.livemode,
    type: PAYMENT_INTENT_CREATED,
    object_id: doc._id,
    json: doc.created_event ?? createdEventJson(doc),
    created_ms: idTime(id),
  };
}

/** Whether the event (or object) `id`, time-ordered, is younger than `retentionMs` at `nowMs`: not deleted for its age. */
export function withinRetention(id: string, nowMs: number, retentionMs: number): boolean {
  return idTime(id) >= nowMs - retentionMs;
}
