/**
 * Decisions of refunds (DESIGN.md section 11), pure: given the stored intent and
 * what was asked, whether a refund may hold its amount, and how an operator's final
 * answer changes the intent's amounts. worker/refunds/ledger.ts applies them.
 */
import type { ErrorDetail } from '../../common/errors.js';
import type { PaymentIntentDoc, RefundLedgerEntry } from '../../common/documents.js';
import type { DeclineCode } from '../../common/lifecycle.js';
import { currencyExponent, formatAmount } from '../../common/money.js';
import { howToConfigure } from '../../common/operator-terms.js';
import { refundSupport } from '../../common/refund-support.js';

export type HoldDecision = { kind: 'refuse'; detail: ErrorDetail } | { kind: 'hold'; amount: number; operator: string };

/**
 * An amount of the intent's currency as a refund error shows it: for a person, and
 * in the minor units a request is written in when they differ (`1 234.56 KES
 * (123456)`, `5 000 XOF`).
 */
function shown(amount: number, currency: string): string {
  return currencyExponent(currency) > 0 ? `${formatAmount(amount, currency)} (${amount})` : formatAmount(amount, currency);
}

/** What the intent's refunds do not hold yet. */
export function refundable(doc: Pick<PaymentIntentDoc, 'amount' | 'amount_held'>): number {
  return doc.amount - (doc.amount_held ?? 0);
}

/**
 * A new refund of `amount` (null: what remains) of this intent. `liveOperators`:
 * live mode's operators with a connector.
 */
export function decideHold(doc: PaymentIntentDoc, amount: number | null, liveOperators: ReadonlySet<string>, limit = Number.POSITIVE_INFINITY): HoldDecision {
  if ((doc.refunds?.length ?? 0) >= limit) {
    return {
      kind: 'refuse',
      detail: {
        code: 'refund_limit',
        message: `PaymentIntent ${doc._id} already has ${limit} refunds, failed ones included: no more can be made on it.`,
        param: 'payment_intent',
      },
    };
  }
  if (doc.status !== 'succeeded') {
    return {
      kind: 'refuse',
      detail: {
        code: 'payment_intent_unexpected_state',
        message: `You cannot refund this PaymentIntent because it has a status of ${doc.status}; only a succeeded payment can be refunded.`,
        param: 'payment_intent',
      },
    };
  }
  const operator = doc.payment?.operator ?? 'unknown';
  const support = refundSupport(operator);
  if (support === 'none') {
    return {
      kind: 'refuse',
      detail: { code: 'refund_not_supported', message: `${operator} does not support refunds: this payment cannot be refunded through the service.`, param: 'payment_intent' },
    };
  }
  if (doc.livemode && !liveOperators.has(operator)) {
    return {
      kind: 'refuse',
      detail: {
        code: 'operator_not_configured',
        message: `No live connector is configured for ${operator}, so live refunds through it cannot be made: ${howToConfigure(operator)}.`,
        param: 'payment_intent',
      },
    };
  }
  const remaining = refundable(doc);
  if (remaining <= 0) {
    return {
      kind: 'refuse',
      detail: { code: 'charge_already_refunded', message: `PaymentIntent ${doc._id} has already been refunded in full (its succeeded and pending refunds hold all of ${shown(doc.amount, doc.currency)}).`, param: 'payment_intent' },
    };
  }
  const wanted = amount ?? remaining;
  if (wanted > remaining) {
    return {
      kind: 'refuse',
      detail: {
        code: 'amount_too_large',
        message: `Refund amount ${shown(wanted, doc.currency)} is greater than what remains refundable of PaymentIntent ${doc._id}: ${shown(remaining, doc.currency)} of ${shown(doc.amount, doc.currency)}.`,
        param: 'amount',
      },
    };
  }
  if (support === 'full' && wanted !== doc.amount) {
    return {
      kind: 'refuse',
      detail: { code: 'refund_not_supported', message: `${operator} refunds only a whole payment: refund all of ${shown(doc.amount, doc.currency)}, or nothing.`, param: 'amount' },
    };
  }
  return { kind: 'hold', amount: wanted, operator };
}

export type RefundOutcome = { kind: 'succeeded' } | { kind: 'failed'; code: DeclineCode };

/**
 * The intent's fields once `entry` (pending) ends: a success adds its amount to
 * `amount_refunded`, a failure releases its hold. Null when the entry is not pending.
 */
export function decideSettle(doc: PaymentIntentDoc, refundId: string, outcome: RefundOutcome, events: { settled: string; refunded: string }): Partial<PaymentIntentDoc> | null {
  const ledger = doc.refunds ?? [];
  const entry = ledger.find((e) => e.id === refundId);
  if (!entry || entry.status !== 'pending') return null;
  const pending = Math.max(0, (doc.refunds_pending ?? 1) - 1);
  // A late payment's refund gives back another attempt's money: the intent's own amounts stay.
  if (entry.late) {
    const ended: RefundLedgerEntry = outcome.kind === 'succeeded'
      ? { ...entry, status: 'succeeded', ev: { ...entry.ev, settled: events.settled } }
      : { ...entry, status: 'failed', fr: outcome.code, ev: { ...entry.ev, settled: events.settled } };
    return { refunds_pending: pending, refunds: ledger.map((e) => (e.id === refundId ? ended : e)) };
  }
  if (outcome.kind === 'succeeded') {
    const refunded = (doc.amount_refunded ?? 0) + entry.amount;
    const ended: RefundLedgerEntry = { ...entry, status: 'succeeded', ar: refunded, ev: { ...entry.ev, settled: events.settled, refunded: events.refunded } };
    return { amount_refunded: refunded, refunds_pending: pending, refunds: ledger.map((e) => (e.id === refundId ? ended : e)) };
  }
  const ended: RefundLedgerEntry = { ...entry, status: 'failed', fr: outcome.code, ev: { ...entry.ev, settled: events.settled } };
  return { amount_held: (doc.amount_held ?? 0) - entry.amount, refunds_pending: pending, refunds: ledger.map((e) => (e.id === refundId ? ended : e)) };
}
