/**
 * Test mode's operator record of late payments (DESIGN section 16): a number ending
 * `030` stops answering, its attempt ends `approval_timeout` when its window closes,
 * and the simulated operator takes the money then. It writes that payment down here,
 * as a real operator's transaction list would show it, so reconciliation (./run.ts)
 * has something to find. Written once per attempt (`_id` is the attempt's id).
 */
import type { PaymentIntentDoc } from '../../common/documents.js';
import { LATE_PAYMENT_SUFFIX } from '../../common/lifecycle.js';
import type { Collections } from '../../common/mongo.js';
import { isDuplicateKey } from '../../common/mongo.js';

/** True when `doc` is a test-mode intent whose attempt just ended as a late payer's does. */
export function endedAsLatePayer(doc: PaymentIntentDoc, attempt: number): boolean {
  return (
    !doc.livemode &&
    (doc.attempt ?? 0) === attempt &&
    doc.status === 'new' &&
    doc.last_payment_error?.operator_decline_code === 'approval_timeout' &&
    (doc.payment?.phone_masked ?? '').endsWith(LATE_PAYMENT_SUFFIX)
  );
}

export async function recordSimulatorPayment(collections: Pick<Collections, 'simulatorPayments'>, doc: PaymentIntentDoc, nowMs: number): Promise<void> {
  const attempt = doc.attempt ?? 0;
  try {
    await collections.simulatorPayments.insertOne({
      _id: `${doc._id}:${attempt}`,
      project: doc.project,
      livemode: false,
      payment_intent: doc._id,
      attempt,
      operator: doc.payment?.operator ?? 'unknown',
      amount: doc.amount,
      currency: doc.currency,
      phone_masked: doc.payment?.phone_masked ?? '',
      paid_ms: nowMs,
    });
  } catch (err) {
    if (!isDuplicateKey(err)) throw err;
  }
}
