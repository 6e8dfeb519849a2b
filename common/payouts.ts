/**
 * Payouts (DESIGN.md section 17): money out to a mobile-money wallet. The statuses,
 * the normalised failure codes, the stored documents and their public shapes, read by
 * the api and the worker alike.
 *
 * A payout is `pending` once accepted, `enqueued` while its operator account cannot
 * take it (its breaker is open; test mode's `…008`), `in_transit` once the operator
 * was asked, and ends `paid`, `failed` or `canceled` (from `pending` or `enqueued`
 * only). Its amount is held from the available balance while it is not final, and
 * released when it fails or is canceled.
 */
import { fromPairs, type MetadataPairs } from './metadata.js';

/** The service key (common/service-keys.ts) that seals payouts' destination numbers in their jobs. */
export const DESTINATIONS_KEY_ID = 'payout_destinations';

export const PAYOUT_STATUSES = ['pending', 'enqueued', 'in_transit', 'paid', 'failed', 'canceled'] as const;
export type PayoutStatus = (typeof PAYOUT_STATUSES)[number];
export const FINAL_PAYOUT_STATUSES: readonly PayoutStatus[] = ['paid', 'failed', 'canceled'];
/** A payout can still be canceled: the operator has not been asked. */
export const CANCELABLE_PAYOUT_STATUSES: readonly PayoutStatus[] = ['pending', 'enqueued'];

export function isFinalPayout(status: PayoutStatus): boolean {
  return FINAL_PAYOUT_STATUSES.includes(status);
}

/** The normalised failure codes, each with the message a merchant reads. */
export const PAYOUT_FAILURES = {
  recipient_not_found: 'The recipient has no wallet with this operator.',
  recipient_account_blocked: "The recipient's wallet is blocked or suspended.",
  recipient_limit_exceeded: "The payout would take the recipient's wallet past its balance or transaction limit.",
  operator_unavailable: 'The operator did not give a final answer in time; nothing was paid.',
  operator_request_rejected: 'The operator refused the request itself (its configuration, or this destination); nothing was paid.',
  balance_insufficient: 'The available balance of this currency was too low when the payout was to be sent.',
  generic_failure: 'The operator did not pay this payout and gave no more specific reason.',
} as const;
export type PayoutFailureCode = keyof typeof PAYOUT_FAILURES;

export interface PayoutDoc {
  _id: string;
  project: string;
  livemode: boolean;
  amount: number;
  currency: string;
  operator: string;
  /** Live mode: the operator account that sends it (common/operator-accounts.ts). */
  account: string | null;
  /** E.164, in full, while the operator may still need it; null once the payout is final. */
  phone_number: string | null;
  phone_masked: string;
  name: string | null;
  status: PayoutStatus;
  failure_code: PayoutFailureCode | null;
  description: string | null;
  metadata: MetadataPairs;
  batch: string | null;
  /** The batch item's own reference (a batch's items only). */
  reference: string | null;
  created: number;
  /** Unix seconds when it was paid. */
  arrival_date: number | null;
  /** Whether the amount is held from the balance (a batch's items hold when they are sent). */
  held: boolean;
  /** Whether the operator was asked (the request may have been lost on the way back). */
  requested: boolean;
  /** The operator's reference of the transfer, once it gave one. */
  operator_reference: string | null;
  /** Steps taken so far: numbers the next step's job. */
  steps: number;
  /** Test mode's `…008`: enqueued until then (epoch ms). */
  enqueued_until?: number;
  /** The event ids of its transitions, chosen with them. */
  ev: { created: string; ended?: string };
}

export interface PayoutBatchDoc {
  _id: string;
  project: string;
  livemode: boolean;
  status: 'processing' | 'completed';
  total: number;
  created: number;
  /** Set when the batch completed: every payout final. */
  completed_at: number | null;
  counts?: PayoutCounts;
  /** The `payout_batch.completed` event's id, chosen with the batch. */
  ev: { completed: string };
}

export type PayoutCounts = Record<PayoutStatus, number> & { total: number };

export function emptyCounts(): PayoutCounts {
  return { total: 0, pending: 0, enqueued: 0, in_transit: 0, paid: 0, failed: 0, canceled: 0 };
}

export function countPayouts(statuses: Iterable<PayoutStatus>): PayoutCounts {
  const counts = emptyCounts();
  for (const status of statuses) {
    counts.total++;
    counts[status]++;
  }
  return counts;
}

/** A payout as every reader sees it: the number masked, the bookkeeping stored only. */
export function presentPayout(doc: PayoutDoc) {
  return {
    id: doc._id,
    object: 'payout' as const,
    amount: doc.amount,
    currency: doc.currency,
    operator: doc.operator,
    destination: { phone_number: doc.phone_masked, ...(doc.name !== null ? { name: doc.name } : {}) },
    status: doc.status,
    failure_code: doc.failure_code,
    failure_message: doc.failure_code === null ? null : PAYOUT_FAILURES[doc.failure_code],
    description: doc.description,
    metadata: fromPairs(doc.metadata),
    batch: doc.batch,
    reference: doc.reference,
    created: doc.created,
    arrival_date: doc.arrival_date,
    livemode: doc.livemode,
  };
}

export function presentPayoutBatch(doc: PayoutBatchDoc, counts: PayoutCounts) {
  return {
    id: doc._id,
    object: 'payout_batch' as const,
    status: doc.status,
    counts,
    created: doc.created,
    completed_at: doc.completed_at,
    livemode: doc.livemode,
  };
}

/** The job id of a payout's step `step` on the intents queue (worker/payouts/process.ts): one job per step. */
export function payoutStepJobId(payout: string, step: number): string {
  return `payout-${payout}-${step}`;
}

/**
 * Set by an operator's callback for a payout on its way (api/routes/operator-callbacks.ts),
 * for as long as `PAYOUT_LOOK_HINT_MS`: its next look is wanted now. The step that
 * schedules the next look takes it (worker/payouts/process.ts).
 */
export function payoutLookKey(prefix: string, payout: string): string {
  return `${prefix}:payout-look:${payout}`;
}

export const PAYOUT_LOOK_HINT_MS = 60_000;
