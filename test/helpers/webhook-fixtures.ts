/** Real objects through the real API, for the webhook black-box tests. */
import assert from 'node:assert/strict';
import { createdEventId, objectIdOfCreatedEvent } from '../../common/events.js';
import type { OutboxDoc, PaymentIntentDoc } from '../../common/documents.js';
import { until, type Service } from './service.js';

export interface Endpoint {
  id: string;
  secret: string;
  url: string;
  status: string;
  livemode: boolean;
}

export async function createEndpoint(service: Service, key: string, url: string, enabledEvents?: string[]): Promise<Endpoint> {
  const res = await service.request('POST', '/v1/webhook_endpoints', {
    key,
    body: { url, ...(enabledEvents ? { enabled_events: enabledEvents } : {}) },
  });
  assert.equal(res.status, 200, `creating an endpoint: ${res.text}`);
  return res.body as Endpoint;
}

/** Creates a payment intent and returns it with the id of its `payment_intent.created` event. */
export async function createPaymentIntent(service: Service, key: string, amount = 1000): Promise<{ id: string; eventId: string }> {
  const res = await service.request('POST', '/v1/payment_intents', { key, body: { amount, description: 'Ünïcode ✓ order' } });
  assert.equal(res.status, 200, `creating a payment intent: ${res.text}`);
  return { id: res.body.id as string, eventId: createdEventId(res.body.id as string) };
}

export interface Attempt {
  id: string;
  event: string;
  webhook_endpoint: string;
  attempt: number;
  succeeded: boolean;
  http_status: number | null;
  error: string | null;
  response_body: string | null;
  duration_ms: number;
  created: number;
}

export async function listAttempts(service: Service, key: string, endpointId: string, query = 'limit=100'): Promise<Attempt[]> {
  const res = await service.request('GET', `/v1/webhook_endpoints/${endpointId}/attempts?${query}`, { key });
  assert.equal(res.status, 200, `listing attempts: ${res.text}`);
  return res.body.data as Attempt[];
}

/** Waits until the endpoint has at least `count` recorded attempts (newest first). */
export async function waitForAttempts(service: Service, key: string, endpointId: string, count: number, timeoutMs = 30_000): Promise<Attempt[]> {
  return until(
    `${count} attempts on ${endpointId}`,
    async () => {
      const attempts = await listAttempts(service, key, endpointId);
      return attempts.length >= count ? attempts : undefined;
    },
    timeoutMs,
  );
}

/** Waits until the event's deliveries are all finished (its outbox entry is gone). */
export async function waitDispatched(service: Service, eventId: string): Promise<void> {
  const db = await service.db();
  await until(`${eventId} to be dispatched`, async () => {
    const written = await db.collection<PaymentIntentDoc>('payment_intents').countDocuments({ _id: objectIdOfCreatedEvent(eventId) });
    const pending = await db.collection<OutboxDoc>('event_outbox').countDocuments({ _id: eventId });
    return written === 1 && pending === 0 ? true : undefined;
  });
}
