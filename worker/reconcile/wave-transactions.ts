/**
 * Wave's own record of the wallet's money: the Balance API's transaction list (`GET
 * /v1/transactions?date=YYYY-MM-DD`, `{page_info, date, items}`, one day per call,
 * pages by `after=<end_cursor>`), as the connector's refund check already reads it
 * (worker/operators/wave/connector.ts). Its checkout payments (`transaction_type:
 * "api_checkout"`, not reversals) carry our `client_reference`, the attempt's id.
 */
import type { WaveConfig } from '../../common/config.js';
import { OperatorRequestError } from '../operators/connector.js';
import { callOperator, field, text } from '../operators/operator-http.js';
import { parseAttemptId, type OperatorPayment } from './compare.js';

/** More pages than this in one day stops the read (the next run reads again). */
const MAX_PAGES = 50;

/** The checkout payments Wave lists from `sinceMs` to `nowMs`, one call per UTC day (and page). */
export async function wavePayments(config: WaveConfig, account: string, sinceMs: number, nowMs: number, timeoutMs: number): Promise<OperatorPayment[]> {
  const payments: OperatorPayment[] = [];
  const days = new Set<string>();
  for (let at = sinceMs; at < nowMs + 86_400_000; at += 86_400_000) days.add(new Date(Math.min(at, nowMs)).toISOString().slice(0, 10));
  for (const date of days) {
    let after: string | null = null;
    for (let page = 0; page < MAX_PAGES; page++) {
      const query: string = `date=${date}${after ? `&after=${encodeURIComponent(after)}` : ''}`;
      const answer = await callOperator({ operator: 'wave', method: 'GET', url: `${config.baseUrl}/v1/transactions?${query}`, headers: { authorization: `Bearer ${config.apiKey}` }, timeoutMs });
      if (answer.status !== 200) throw new OperatorRequestError('wave', answer.status, text(answer.body, 'code'));
      const items = field(answer.body, 'items');
      for (const item of Array.isArray(items) ? items : []) {
        const payment = checkoutPayment(item, account, sinceMs);
        if (payment) payments.push(payment);
      }
      const info = field(answer.body, 'page_info');
      after = field(info, 'has_next_page') === true ? (text(info, 'end_cursor') ?? null) : null;
      if (!after) break;
    }
  }
  return payments;
}

/** One listed item as a payment of ours, or null (a refund, a reversal, another's, older than `sinceMs`). */
export function checkoutPayment(item: unknown, account: string, sinceMs: number): OperatorPayment | null {
  if (text(item, 'transaction_type') !== 'api_checkout' || field(item, 'is_reversal') === true) return null;
  const timestamp = Date.parse(text(item, 'timestamp') ?? '');
  if (!Number.isFinite(timestamp) || timestamp < sinceMs) return null;
  const attempt = parseAttemptId(text(item, 'client_reference') ?? '');
  if (!attempt) return null;
  return { ...attempt, operator: 'wave', account, reference: text(item, 'checkout_api_session_id') ?? null, foundBy: 'transaction_list' };
}
