/**
 * Events: the catalog, the `*` subscription, and the ids derived from an event
 * (its dispatch job, its delivery jobs). Worker and api both read them from here.
 *
 * The `payment_intent.created` event's id is the object's id re-prefixed, so each
 * names the other; where the event is stored is common/created-events.ts.
 */
import type { PaymentIntentDoc } from './documents.js';
import { buildEventJson, presentPaymentIntent } from './presenters.js';

export const PAYMENT_INTENT_CREATED = 'payment_intent.created';

/** Every event type an endpoint can subscribe to, and `/v1/events` lists. */
export const EVENT_TYPES = [
  PAYMENT_INTENT_CREATED,
  'payment_intent.requires_action',
  'payment_intent.processing',
  'payment_intent.succeeded',
  'payment_intent.payment_failed',
  'payment_intent.canceled',
  'payment_intent.expired',
  'payment_intent.refunded',
  'refund.created',
  'refund.succeeded',
  'refund.failed',
  'payout.created',
  'payout.paid',
  'payout.failed',
  'payout.canceled',
  'payout_batch.completed',
  'operator_discrepancy.created',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/**
 * Sent by `POST /v1/webhook_endpoints/{id}/test` to that endpoint only: in the
 * catalog, but never stored, never listed, never subscribed to (`*` does not match it).
 */
export const WEBHOOK_ENDPOINT_TEST = 'webhook_endpoint.test';

/** In `enabled_events`: every type of the catalog. */
export const ALL_EVENTS = '*';

export function isEventType(value: string): value is EventType {
  return (EVENT_TYPES as readonly string[]).includes(value);
}

export function createdEventId(paymentIntentId: string): string {
  return `evt_${paymentIntentId.slice(paymentIntentId.indexOf('_') + 1)}`;
}

export function objectIdOfCreatedEvent(eventId: string): string {
  return `pi_${eventId.slice(eventId.indexOf('_') + 1)}`;
}

/**
 * The event JSON for a payment intent document, byte for byte as listed and
 * delivered. The intent is presented as a secret key reads it, `client_secret`
 * included (as Stripe's events and webhooks carry it): a webhook goes to an endpoint
 * that the key's holder registered, and the listed event and the delivered one stay
 * one and the same string.
 */
export function createdEventJson(doc: Omit<PaymentIntentDoc, 'created_event' | 'history' | 'refunds'>): string {
  return buildEventJson({
    id: createdEventId(doc._id),
    type: PAYMENT_INTENT_CREATED,
    created: doc.created,
    livemode: doc.livemode,
    object: presentPaymentIntent(doc),
  });
}

/** One dispatch per event: enqueueing it again (a retry, the sweeper) adds nothing. */
export function dispatchJobId(eventId: string): string {
  return `dispatch-${eventId}`;
}

/** One delivery chain per (event, endpoint). */
export function deliveryJobId(eventId: string, endpointId: string): string {
  return `deliver-${eventId}-${endpointId}`;
}
