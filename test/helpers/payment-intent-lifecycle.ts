/**
 * The payment intent lifecycle through the real API, for the black-box tests of
 * test/e2e/lifecycle/: intents created, confirmed and canceled over HTTP, their
 * events read back from `/v1/events`, and a receiver's deliveries verified with the
 * `standardwebhooks` package (a consumer's library, not the service's own code).
 */
import assert from 'node:assert/strict';
import { Webhook } from 'standardwebhooks';
import type { Receiver } from './receiver.js';
import { until, type ApiResponse, type Service } from './service.js';

export const PI = '/v1/payment_intents';

/** The intent as the API shows it (the fields the tests read). */
export interface Intent {
  id: string;
  object: 'payment_intent';
  amount: number;
  amount_received: number;
  amount_refunded: number;
  currency: string;
  description: string | null;
  status: string;
  client_secret: string;
  allowed_operators: string[];
  selected_operator: string | null;
  automatic_operator: boolean;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- asserted field by field
  next_action: any;
  last_payment_error: { code: string; operator: string; operator_decline_code: string; message: string } | null;
  payment_details: { operator: string; phone_number: string } | null;
  canceled_at: number | null;
  cancellation_reason: string | null;
  metadata: Record<string, string>;
  livemode: boolean;
  created: number;
  expires_at: number;
}

export interface IntentEvent {
  id: string;
  object: 'event';
  type: string;
  created: number;
  livemode: boolean;
  data: { object: Intent };
}

/**
 * A phone number of the country `callingCode` (3 digits) ending in `suffix` (the
 * simulator's magic digits). `n` keeps numbers of one test apart. Its national part
 * starts with `09`, a prefix no operator of the catalog holds in any of its
 * countries, so `automatic_operator` chooses by the calling code alone; tests of
 * prediction by prefix write their numbers out.
 */
export function phone(callingCode: string, suffix: string, n = 0): string {
  return `+${callingCode}09${String(n).padStart(5, '0')}${suffix}`;
}

/** How the API masks a phone number: country code's first digits and the last three shown. */
export function masked(phoneNumber: string): string {
  return `${phoneNumber.slice(0, 4)}${'*'.repeat(phoneNumber.length - 7)}${phoneNumber.slice(-3)}`;
}

export async function createIntent(service: Service, key: string, body: Record<string, unknown> = {}): Promise<Intent> {
  const res = await service.request<Intent>('POST', PI, { key, body: { amount: 2500, currency: 'xof', ...body } });
  assert.equal(res.status, 200, `creating a payment intent: ${res.text}`);
  return res.body;
}

export function confirm(
  service: Service,
  key: string,
  id: string,
  body: Record<string, unknown>,
  headers: Record<string, string> = {},
): Promise<ApiResponse> {
  return service.request('POST', `${PI}/${id}/confirm`, { key, body, headers });
}

export function cancel(service: Service, key: string, id: string, body: Record<string, unknown> = {}, headers: Record<string, string> = {}): Promise<ApiResponse> {
  return service.request('POST', `${PI}/${id}/cancel`, { key, body, headers });
}

export function update(service: Service, key: string, id: string, body: Record<string, unknown>, headers: Record<string, string> = {}): Promise<ApiResponse> {
  return service.request('POST', `${PI}/${id}`, { key, body, headers });
}

export async function retrieve(service: Service, key: string, id: string): Promise<Intent> {
  const res = await service.request<Intent>('GET', `${PI}/${id}`, { key });
  assert.equal(res.status, 200, `retrieving ${id}: ${res.text}`);
  return res.body;
}

/** Waits until the intent's status is `status` and `also` (if given) holds, and returns it. */
export function waitForStatus(
  service: Service,
  key: string,
  id: string,
  status: string,
  timeoutMs = 30_000,
  also: (pi: Intent) => boolean = () => true,
): Promise<Intent> {
  return until(
    `${id} to be ${status}, its event listed`,
    async () => {
      const pi = await retrieve(service, key, id);
      if (pi.status !== status || !also(pi)) return undefined;
      // The event's own document follows the transition's update by a moment: wait
      // for it too, so that a test reading /v1/events next finds it.
      if (status === 'new') return pi;
      const listed = await service.request('GET', `/v1/events?type=payment_intent.${status}&limit=100`, { key });
      const found = (listed.body.data as Array<{ data: { object: { id: string } } }>).some((e) => e.data.object.id === id);
      return found ? pi : undefined;
    },
    timeoutMs,
  );
}

/**
 * Every intent of the key's scope, through every page of `/v1/payment_intents`.
 * On FerretDB every read scans its collection: one listing is much cheaper than a
 * retrieve per intent.
 */
export async function listAllIntents(service: Service, key: string): Promise<Map<string, Intent>> {
  const all = new Map<string, Intent>();
  let after: string | null = null;
  for (;;) {
    const query = new URLSearchParams({ limit: '100' });
    if (after) query.set('starting_after', after);
    const res: ApiResponse = await service.request('GET', `${PI}?${query}`, { key });
    assert.equal(res.status, 200, `listing payment intents: ${res.text}`);
    const page = res.body.data as Intent[];
    for (const pi of page) all.set(pi.id, pi);
    if (!res.body.has_more || page.length === 0) return all;
    after = page[page.length - 1]!.id;
  }
}

/** Runs `fn` over `items` with at most `limit` calls in flight; results in the order of `items`. */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const run = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, run));
  return results;
}

/** Every event of the key's scope, newest first, through every page of `/v1/events` (optionally `?type=`). */
export async function listAllEvents(service: Service, key: string, type?: string): Promise<IntentEvent[]> {
  const all: IntentEvent[] = [];
  let after: string | null = null;
  for (;;) {
    const query = new URLSearchParams({ limit: '100' });
    if (type) query.set('type', type);
    if (after) query.set('starting_after', after);
    const res: ApiResponse = await service.request('GET', `/v1/events?${query}`, { key });
    assert.equal(res.status, 200, `listing events: ${res.text}`);
    const page = res.body.data as IntentEvent[];
    all.push(...page);
    if (!res.body.has_more || page.length === 0) return all;
    after = page[page.length - 1]!.id;
  }
}

/** The events of one intent, oldest first, from a newest-first listing. */
export function eventsOf(listing: IntentEvent[], id: string): IntentEvent[] {
  return listing.filter((e) => e.data.object.id === id).reverse();
}

/** Waits until the intent has exactly the listed event types (oldest first) in `/v1/events`, and returns those events. */
export async function waitForEvents(service: Service, key: string, id: string, types: string[], timeoutMs = 30_000): Promise<IntentEvent[]> {
  let last: string[] = [];
  try {
    return await until(
      `events ${types.join(', ')} of ${id}`,
      async () => {
        const events = eventsOf(await listAllEvents(service, key), id);
        last = events.map((e) => e.type);
        return last.length >= types.length ? events : undefined;
      },
      timeoutMs,
    );
  } catch (err) {
    throw new Error(`${(err as Error).message}; listed so far: ${last.join(', ')}`);
  }
}

/** A delivery as a consumer sees it once `standardwebhooks` verified it. */
export interface VerifiedDelivery {
  webhookId: string;
  event: IntentEvent;
  body: string;
}

/**
 * Every request `path` received, each verified with the `standardwebhooks` package
 * against `secret` (a delivery that fails verification throws).
 */
export function verifiedDeliveries(receiver: Receiver, path: string, secret: string): VerifiedDelivery[] {
  const webhook = new Webhook(secret);
  return receiver.received(path).map((r) => {
    const headers = Object.fromEntries(Object.entries(r.headers).map(([k, v]) => [k, String(v)]));
    const event = webhook.verify(r.body, headers) as IntentEvent;
    assert.equal(headers['webhook-id'], event.id, 'webhook-id is the event id');
    return { webhookId: headers['webhook-id'] as string, event, body: r.body.toString('utf8') };
  });
}

/**
 * Waits until `path` has received a delivery of each of `eventIds`, then verifies
 * every delivery it received (a forged or broken one fails at once, not by timeout).
 */
export async function waitForDeliveries(receiver: Receiver, path: string, secret: string, eventIds: string[], timeoutMs = 30_000): Promise<VerifiedDelivery[]> {
  await until(
    `deliveries of ${eventIds.length} events to ${path}`,
    () => {
      const ids = new Set(receiver.received(path).map((r) => String(r.headers['webhook-id'])));
      return eventIds.every((id) => ids.has(id)) ? true : undefined;
    },
    timeoutMs,
  );
  return verifiedDeliveries(receiver, path, secret);
}

/** What a receiver got, unverified: the event's id, type and intent, per delivery. */
export function deliveredEvents(receiver: Receiver, path: string): Array<{ id: string; type: string; object: string }> {
  return receiver.received(path).map((r) => {
    const event = JSON.parse(r.body.toString('utf8')) as IntentEvent;
    return { id: event.id, type: event.type, object: event.data.object.id };
  });
}

/**
 * Waits until `path` has received, for each intent of `expected`, at least the
 * event types listed for it. Waiting on the receiver costs the service nothing
 * (polling the API would: on FerretDB every read scans).
 */
export async function waitForDeliveredTypes(receiver: Receiver, path: string, expected: Map<string, string[]>, timeoutMs = 60_000): Promise<void> {
  let missing: string[] = [];
  try {
    await until(
      `${expected.size} intents' events at ${path}`,
      () => {
        const got = new Map<string, string[]>();
        for (const d of deliveredEvents(receiver, path)) got.set(d.object, [...(got.get(d.object) ?? []), d.type]);
        missing = [...expected].filter(([id, types]) => !types.every((type) => got.get(id)?.includes(type))).map(([id, types]) => `${id}: ${types.join(',')} (got ${got.get(id)?.join(',') ?? 'none'})`);
        return missing.length === 0 ? true : undefined;
      },
      timeoutMs,
    );
  } catch (err) {
    throw new Error(`${(err as Error).message}; missing:\n${missing.slice(0, 10).join('\n')}`);
  }
}

/** The worker log lines (parsed) whose `msg` is `msg`. */
export function logLines(service: Service, msg: string): Array<Record<string, unknown>> {
  return service
    .logs()
    .filter((line) => line.startsWith('{') && line.includes(msg))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((entry) => entry.msg === msg);
}
