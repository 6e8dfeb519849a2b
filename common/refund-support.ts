/**
 * What refunds an operator supports: the catalog's `refunds` column
 * (common/operator-catalog.ts, DESIGN.md section 10), asked through this one function.
 *
 * - `partial`: any amount up to what remains;
 * - `full`: only the whole payment, once;
 * - `none`: no refund API.
 *
 * An operator the catalog does not know refunds nothing.
 */
import { catalogEntry, type RefundSupport } from './operator-catalog.js';

export type { RefundSupport };

export function refundSupport(operator: string): RefundSupport {
  return catalogEntry(operator)?.refunds ?? 'none';
}
