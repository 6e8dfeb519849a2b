/**
 * Refunds through the real API, for the black-box tests of test/e2e/refunds/: paid
 * intents made through the simulator, refunds created and waited for over HTTP.
 */
import assert from 'node:assert/strict';
import { confirm, createIntent, phone, waitForStatus, type Intent } from './payment-intent-lifecycle.js';
import { until, type ApiResponse, type Service } from './service.js';

export const RE = '/v1/refunds';

export interface Refund {
  id: string;
  object: 'refund';
  amount: number;
  currency: string;
  payment_intent: string;
  status: 'pending' | 'succeeded' | 'failed';
  reason: string | null;
  failure_reason: string | null;
  description: string | null;
  metadata: Record<string, string>;
  operator: string;
  created: number;
  livemode: boolean;
}

export interface PaidOptions {
  amount?: number;
  /** mtn_momo (refunds partial) by default, with a +225 number and xof. */
  operator?: 'mtn_momo' | 'mpesa' | 'orange_money' | 'wave';
  /** The last three digits of the payer's number: `020` refunds fail, `021` refunds are slow. */
  suffix?: string;
  n?: number;
}

/** An intent paid through the simulator: created, confirmed, and waited for until `succeeded`. */
export async function paidIntent(service: Service, key: string, options: PaidOptions = {}): Promise<Intent> {
  const operator = options.operator ?? 'mtn_momo';
  const kenyan = operator === 'mpesa';
  const pi = await createIntent(service, key, { amount: options.amount ?? 5000, currency: kenyan ? 'kes' : 'xof' });
  const number = phone(kenyan ? '254' : '225', options.suffix ?? '000', options.n ?? 0);
  const body: Record<string, unknown> = { operator, phone_number: number };
  if (operator === 'orange_money') body.otp = '123456';
  const res = await confirm(service, key, pi.id, body);
  assert.equal(res.status, 200, `confirming ${pi.id}: ${res.text}`);
  return waitForStatus(service, key, pi.id, 'succeeded');
}

export function refund(service: Service, key: string, body: Record<string, unknown>, headers: Record<string, string> = {}): Promise<ApiResponse> {
  return service.request('POST', RE, { key, body, headers });
}

export async function retrieveRefund(service: Service, key: string, id: string): Promise<Refund> {
  const res = await service.request<Refund>('GET', `${RE}/${id}`, { key });
  assert.equal(res.status, 200, `retrieving ${id}: ${res.text}`);
  return res.body;
}

/** Waits until the refund has ended (or has `status`), and returns it. */
export function waitForRefund(service: Service, key: string, id: string, status: Refund['status'], timeoutMs = 30_000): Promise<Refund> {
  return until(
    `${id} to be ${status}`,
    async () => {
      const re = await retrieveRefund(service, key, id);
      return re.status === status ? re : undefined;
    },
    timeoutMs,
  );
}

/** Every refund of the key's scope (optionally of one intent), newest first, through every page. */
export async function listAllRefunds(service: Service, key: string, paymentIntent?: string, limit = 100): Promise<Refund[]> {
  const all: Refund[] = [];
  let after: string | null = null;
  for (;;) {
    const query = new URLSearchParams({ limit: String(limit) });
    if (paymentIntent) query.set('payment_intent', paymentIntent);
    if (after) query.set('starting_after', after);
    const res: ApiResponse = await service.request('GET', `${RE}?${query}`, { key });
    assert.equal(res.status, 200, `listing refunds: ${res.text}`);
    const page = res.body.data as Refund[];
    all.push(...page);
    if (!res.body.has_more || page.length === 0) return all;
    after = page[page.length - 1]!.id;
  }
}
