/**
 * Payouts through the real API, for the black-box tests of test/e2e/payouts/: a
 * balance funded by paid intents, payouts and batches created and waited for over HTTP.
 */
import assert from 'node:assert/strict';
import { mapLimit } from './payment-intent-lifecycle.js';
import { paidIntent } from './refunds.js';
import { until, type ApiResponse, type Service } from './service.js';

export const PO = '/v1/payouts';
export const POB = '/v1/payout_batches';

export interface Payout {
  id: string;
  object: 'payout';
  amount: number;
  currency: string;
  operator: string;
  destination: { phone_number: string; name?: string };
  status: 'pending' | 'enqueued' | 'in_transit' | 'paid' | 'failed' | 'canceled';
  failure_code: string | null;
  failure_message: string | null;
  description: string | null;
  metadata: Record<string, string>;
  batch: string | null;
  reference: string | null;
  created: number;
  arrival_date: number | null;
  livemode: boolean;
}

export interface PayoutBatch {
  id: string;
  object: 'payout_batch';
  status: 'processing' | 'completed';
  counts: Record<'total' | Payout['status'], number>;
  created: number;
  completed_at: number | null;
  livemode: boolean;
}

/** A CI number for MTN (`+22505…`) ending in `suffix`: the simulator's outcome digits. */
export function payee(suffix: string, n = 0): string {
  return `+22505${String(n).padStart(5, '0')}${suffix}`;
}

/**
 * Funds the key's xof balance with `count` payments of `amount` each, paid through the
 * simulator; resolves once each payment's `payment_intent.succeeded` is listed (the
 * ledger posts a payment before its event is recorded).
 */
export async function fund(service: Service, key: string, amount: number, count = 1): Promise<void> {
  const paid = await mapLimit(
    Array.from({ length: count }, (_, i) => i),
    4,
    (i) => paidIntent(service, key, { amount, n: 900 + i }),
  );
  const ids = new Set(paid.map((pi) => pi.id));
  await until(
    'the payments to be recorded',
    async () => {
      const res = await service.request('GET', '/v1/events?type=payment_intent.succeeded&limit=100', { key });
      const seen = new Set((res.body.data as Array<{ data: { object: { id: string } } }>).map((e) => e.data.object.id));
      return [...ids].every((id) => seen.has(id)) ? true : undefined;
    },
    60_000,
  );
}

export function createPayout(service: Service, key: string, body: Record<string, unknown>, headers: Record<string, string> = {}): Promise<ApiResponse> {
  return service.request('POST', PO, { key, body: { currency: 'xof', operator: 'mtn_momo', ...body }, headers });
}

export async function retrievePayout(service: Service, key: string, id: string): Promise<Payout> {
  const res = await service.request<Payout>('GET', `${PO}/${id}`, { key });
  assert.equal(res.status, 200, `retrieving ${id}: ${res.text}`);
  return res.body;
}

/** Waits until the payout has `status`, and returns it. */
export function waitForPayout(service: Service, key: string, id: string, status: Payout['status'], timeoutMs = 60_000): Promise<Payout> {
  return until(
    `${id} to be ${status}`,
    async () => {
      const po = await retrievePayout(service, key, id);
      return po.status === status ? po : undefined;
    },
    timeoutMs,
  );
}

export async function retrieveBatch(service: Service, key: string, id: string): Promise<PayoutBatch> {
  const res = await service.request<PayoutBatch>('GET', `${POB}/${id}`, { key });
  assert.equal(res.status, 200, `retrieving ${id}: ${res.text}`);
  return res.body;
}

/** Every payout of the key's scope (optionally filtered: `batch=…`, `status=…`), newest first, through every page. */
export async function listAllPayouts(service: Service, key: string, filter: Record<string, string> = {}): Promise<Payout[]> {
  const all: Payout[] = [];
  let after: string | null = null;
  for (;;) {
    const query = new URLSearchParams({ limit: '100', ...filter });
    if (after) query.set('starting_after', after);
    const res: ApiResponse = await service.request('GET', `${PO}?${query}`, { key });
    assert.equal(res.status, 200, `listing payouts: ${res.text}`);
    const page = res.body.data as Payout[];
    all.push(...page);
    if (!res.body.has_more || page.length === 0) return all;
    after = page[page.length - 1]!.id;
  }
}

/** The types of the events recorded about `objectId`, oldest first. */
export async function eventTypesOf(service: Service, key: string, objectId: string): Promise<string[]> {
  const res = await service.request('GET', '/v1/events?limit=100', { key });
  assert.equal(res.status, 200, res.text);
  const events = res.body.data as Array<{ type: string; data: { object: { id: string } } }>;
  return events.filter((e) => e.data.object.id === objectId).map((e) => e.type).reverse();
}
