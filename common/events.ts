/**
 * The `payment_intent.created` event: one per payment intent, stored in the object's
 * own document. Its id is the object's id re-prefixed, so each names the other.
 */
import type { PaymentIntentDoc } from './mongo.js';
import { buildEventJson, presentPaymentIntent } from './presenters.js';

export const PAYMENT_INTENT_CREATED = 'payment_intent.created';

export function createdEventId(paymentIntentId: string): string {
  return `evt_${paymentIntentId.slice(paymentIntentId.indexOf('_') + 1)}`;
}

export function objectIdOfCreatedEvent(eventId: string): string {
  return `pi_${eventId.slice(eventId.indexOf('_') + 1)}`;
}

/** The event JSON for a payment intent document, as listed and delivered (no client secret). */
export function createdEventJson(doc: Omit<PaymentIntentDoc, 'created_event'>): string {
  return buildEventJson({
    id: createdEventId(doc._id),
    type: PAYMENT_INTENT_CREATED,
    created: doc.created,
    livemode: doc.livemode,
    object: presentPaymentIntent(doc, { withSecret: false }),
  });
}
