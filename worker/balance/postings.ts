/**
 * The postings of payments and refunds (DESIGN section 16), made where their
 * changes are recorded, each before the event that tells of it, so a recorded
 * event means a posted movement and the sweepers that record a lost event post it
 * too:
 *
 * - a payment, when its `payment_intent.succeeded` event is recorded
 *   (../lifecycle/transition.ts): its amount, less the fee of the operator account
 *   it went through;
 * - a refund's hold, at its first step with the operator (../refunds/process.ts),
 *   and again, found posted, when it ends (../refunds/record.ts `finishSettled`);
 * - a failed refund's release (`refund_failure`), when it ends.
 */
import type { PaymentIntentDoc, RefundLedgerEntry } from '../../common/documents.js';
import { feeOf, movementKeys, NO_FEE, type FeeSchedule } from '../../common/ledger.js';
import type { OperatorAccount } from '../../common/operator-accounts.js';
import type { BalanceLedger, HeldIdentity, Posting } from './ledger.js';

export interface Postings {
  ledger: BalanceLedger;
  /** The fees of the operator account a payment went through. */
  feesOf: (intent: PaymentIntentDoc) => FeeSchedule;
}

/** Fees by the account recorded on a live attempt; test mode and unknown accounts pay none. */
export function accountFees(accounts: readonly OperatorAccount[]): (intent: PaymentIntentDoc) => FeeSchedule {
  const byId = new Map(accounts.map((a) => [a.id, a.fees ?? NO_FEE]));
  return (intent) => (intent.livemode && intent.payment?.account ? (byId.get(intent.payment.account) ?? NO_FEE) : NO_FEE);
}

/** The payment's posting; `identity`: its claim, made with its succeeded event's (../lifecycle/transition.ts). */
export async function postPayment(postings: Postings, intent: PaymentIntentDoc, identity?: HeldIdentity): Promise<void> {
  await postings.ledger.post({
    project: intent.project,
    livemode: intent.livemode,
    key: movementKeys.payment(intent._id),
    currency: intent.currency,
    type: 'payment',
    amount: intent.amount,
    fee: feeOf(intent.amount, postings.feesOf(intent)),
    source: intent._id,
    operator: intent.payment?.operator ?? null,
    description: intent.description,
  }, identity);
}

/**
 * Money the operator took after the service stopped looking, on an intent that does
 * not succeed with it (reconciliation refunds it, worker/reconcile/run.ts): posted
 * once per discrepancy, before the refund that gives it back, so the pair sums to
 * the fee.
 */
export async function postLatePayment(postings: Postings, intent: PaymentIntentDoc, late: { discrepancy: string; amount: number; operator: string }): Promise<void> {
  await postings.ledger.post({
    project: intent.project,
    livemode: intent.livemode,
    key: movementKeys.latePayment(late.discrepancy),
    currency: intent.currency,
    type: 'payment',
    amount: late.amount,
    fee: feeOf(late.amount, postings.feesOf(intent)),
    source: intent._id,
    operator: late.operator,
    description: `Late payment (${late.discrepancy})`,
  });
}

function refundPosting(intent: PaymentIntentDoc, entry: RefundLedgerEntry, released: boolean): Posting {
  return {
    project: intent.project,
    livemode: intent.livemode,
    key: released ? movementKeys.refundReleased(entry.id) : movementKeys.refundHeld(entry.id),
    currency: intent.currency,
    type: released ? 'refund_failure' : 'refund',
    amount: released ? entry.amount : -entry.amount,
    source: entry.id,
    operator: intent.payment?.operator ?? null,
    description: null,
  };
}

/** The refund's hold (once), and its release when it failed: together, in one round of the balance. */
export async function postRefund(postings: Postings, intent: PaymentIntentDoc, entry: RefundLedgerEntry): Promise<void> {
  const held = postings.ledger.post(refundPosting(intent, entry, false));
  if (entry.status !== 'failed') return void (await held);
  await Promise.all([held, postings.ledger.post(refundPosting(intent, entry, true))]);
}
