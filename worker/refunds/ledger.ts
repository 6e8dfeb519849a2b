/**
 * The refunds' ledger on the payment intent: where the guarantee "concurrent refunds
 * of one intent never hold more than its amount together, across worker processes
 * and crashes" is kept.
 *
 * The intent's own document carries `amount_held` (pending and succeeded refunds),
 * `amount_refunded` (succeeded ones) and one ledger entry per refund. A hold, and the
 * end of a refund, is one update of that document by `_id`, which writes the amounts
 * and the entry together: there is no second document to get out of step, and a
 * retried job finds its entry (by the mutation's id, or the refund's) and changes
 * nothing twice. Why this shape, rather than a hold record per refund and a sum:
 *
 * - With atomic conditional updates (`atomicConditionalUpdates`,
 *   common/store-profile.ts), the update's filter names the intent's `rev` as it was
 *   read, and sets `rev + 1`; a racing hold that read the same `rev` matches nothing,
 *   reads again and decides again against the new `amount_held`. The check and the
 *   write are one atomic step of the server.
 * - On every profile, the read, the decision and the update are also made under the
 *   intent's Redis lock (../record-lock.ts), the same one the lifecycle's transitions
 *   take, renewed right before the update. On a store without atomic conditional
 *   updates (docs/storage.md) the lock is the guard and the update names `_id` alone.
 *   A worker killed while holding the lock leaves it to expire (10 s); one that
 *   stalled past it finds the lock gone before writing and starts over.
 * - The hot path stays one read and one write by `_id`: no scan of the refunds to sum
 *   them.
 *
 * The ledger entry is written before the refund's document (./record.ts): a job lost
 * between the two leaves an entry that the sweeper (processors/sweep-refunds.ts)
 * completes, never an amount held by nothing.
 */
import type { Filter } from 'mongodb';
import type { LatePayment, PaymentIntentDoc, RefundLedgerEntry, RefundReason } from '../../common/documents.js';
import type { ErrorDetail } from '../../common/errors.js';
import type { Scope } from '../../common/jobs.js';
import { findByIdInScope } from '../../common/mongo.js';
import { retryInfrastructure } from '../../common/retry.js';
import { intentTokenKey, intentTokenReplacement } from '../../common/intent-tokens.js';
import { conditionalUpdateFilter } from '../../common/store-profile.js';
import { INTENT_LOCK, intentLockKey, RecordLock } from '../record-lock.js';
import type { TransitionDeps } from '../lifecycle/transition.js';
import { decideHold, decideSettle, type RefundOutcome } from './decide.js';

const UPDATE_RETRY = { tries: 6, baseMs: 100, capMs: 2000 };
const MAX_RACES = 8;
/** The intent as a transition reads it, history included: what the ledger leaves is kept for the next change (decision 0020). */
const READ = { projection: { created_event: 0 } } as const;

export type LedgerDeps = Pick<TransitionDeps, 'collections' | 'redis' | 'prefix' | 'updates' | 'atomicConditionalUpdates' | 'ids' | 'now' | 'kept'>;

/**
 * A change to make, or none. `set`: the intent's fields after it (the copy kept in
 * memory, and the answer); `update`: what goes to the store when it differs (a
 * refund's hold is a `$push` of its entry, its end a `$set` of that one entry: the
 * whole list is never written back, DESIGN section 20).
 */
type Plan<T> =
  | { write: false; value: T }
  | { write: true; set: Partial<PaymentIntentDoc>; update?: { $set: Record<string, unknown>; $push?: Record<string, unknown> }; value: (after: PaymentIntentDoc) => T };

/** Reads the intent, plans, and writes the plan conditionally on the `rev` read, under the intent's lock. */
async function change<T>(deps: LedgerDeps, target: string, scope: Scope, plan: (doc: PaymentIntentDoc) => Plan<T>): Promise<T | null> {
  const c = deps.collections.paymentIntents;
  const lock = new RecordLock(deps.redis, intentLockKey(deps.prefix, target), INTENT_LOCK);
  const token = await lock.acquire(deps.kept ? intentTokenKey(deps.prefix, target) : undefined);
  const kept = deps.kept?.take(scope, target, token) ?? null;
  // Set once the intent was found changed, as it is stored: its token is replaced
  // with the lock's release, and it is kept under the new one.
  let stored: PaymentIntentDoc | null = null;
  try {
    for (let race = 0; race < MAX_RACES; race++) {
      // A kept copy saves the first read only (common/kept-intents.ts).
      const doc = race === 0 && kept ? kept : ((await findByIdInScope(c, target, scope, READ)) as PaymentIntentDoc | null);
      if (!doc) return null;
      const planned = plan(doc);
      if (!planned.write) {
        // Found done: by an earlier run whose second replacement of the token may not have run.
        stored = doc;
        return planned.value;
      }
      const rev = doc.rev ?? 0;
      const where = conditionalUpdateFilter(deps, doc._id, { rev: doc.rev === undefined ? { $exists: false } : rev }) as Filter<PaymentIntentDoc>;
      // Kept copies of the intent (common/kept-intents.ts) are dropped before the update
      // (by the fence's round trip) and after it (by the release's).
      const sent = await retryInfrastructure(
        () =>
          deps.updates.update({
            collection: c,
            filter: where,
            update: planned.update ? { ...planned.update, $set: { ...planned.update.$set, rev: rev + 1 } } : { $set: { ...planned.set, rev: rev + 1 } },
            fence: (extraMs) => lock.renew(intentTokenReplacement(deps.prefix, target), extraMs),
          }),
        UPDATE_RETRY,
      );
      if (sent === 'lost') {
        await lock.acquire();
        continue;
      }
      // Lost a race, or grouped with others and not told which matched: plan again
      // (a change of this plan's is then found done).
      if (sent === 'unknown') continue;
      stored = { ...doc, ...planned.set, rev: rev + 1 };
      return planned.value(stored);
    }
    throw new Error(`payment intent ${target}: its refunds still changing after ${MAX_RACES} tries`);
  } finally {
    // With the token's replacement, a failed release fails the change (its job is retried).
    const replacement = stored ? intentTokenReplacement(deps.prefix, target) : undefined;
    await lock.release(replacement);
    if (stored && replacement) deps.kept?.keep(stored, replacement.value);
  }
}

export interface HoldRequest {
  target: string;
  scope: Scope;
  /** The mutation's id (workers/processors/mutation.ts `mutationId`) and its key's expiry. */
  m: string;
  x?: number;
  refundId: string;
  created: number;
  amount: number | null;
  reason: RefundReason | null;
  liveOperators: ReadonlySet<string>;
  /** Refunds an intent may have, failed ones included (`REFUND_LIMIT_PER_INTENT`). */
  limit?: number;
}

export type HoldResult =
  | { kind: 'missing' }
  | { kind: 'refused'; detail: ErrorDetail }
  /** `again`: the entry was there already (a retried job, or another job of the key). */
  | { kind: 'held'; doc: PaymentIntentDoc; entry: RefundLedgerEntry; again: boolean };

/** Holds the refund's amount on its intent, once per mutation. */
export async function holdRefund(deps: LedgerDeps, request: HoldRequest): Promise<HoldResult> {
  const nowMs = deps.now();
  const result = await change<HoldResult>(deps, request.target, request.scope, (doc) => {
    const ledger = doc.refunds ?? [];
    const done = ledger.find((e) => e.m === request.m && (e.x === undefined || e.x > nowMs));
    if (done) return { write: false, value: { kind: 'held', doc, entry: done, again: true } };
    const decision = decideHold(doc, request.amount, request.liveOperators, request.limit);
    if (decision.kind === 'refuse') return { write: false, value: { kind: 'refused', detail: decision.detail } };
    const entry: RefundLedgerEntry = {
      id: request.refundId,
      m: request.m,
      ...(request.x !== undefined ? { x: request.x } : {}),
      amount: decision.amount,
      status: 'pending',
      c: request.created,
      reason: request.reason,
      ev: { created: deps.ids.next('event') },
    };
    const counts = { amount_held: (doc.amount_held ?? 0) + decision.amount, refunds_pending: (doc.refunds_pending ?? 0) + 1 };
    return {
      write: true,
      set: { ...counts, refunds: [...ledger, entry] },
      update: { $set: counts, $push: { refunds: entry } },
      value: (after) => ({ kind: 'held', doc: after, entry, again: false }),
    };
  });
  return result ?? { kind: 'missing' };
}

/**
 * Holds a late payment's refund on its intent (worker/reconcile/), once per refund id:
 * the money of another attempt than the intent's, so it is not weighed against what
 * the intent's own refunds hold, and it changes none of the intent's amounts. Its
 * entry, counted among the pending refunds, is what the refund's steps and the
 * sweeper follow, as for any refund.
 */
export async function holdLateRefund(
  deps: LedgerDeps,
  request: { target: string; scope: Scope; m: string; refundId: string; created: number; amount: number; late: LatePayment },
): Promise<{ doc: PaymentIntentDoc; entry: RefundLedgerEntry } | null> {
  return change(deps, request.target, request.scope, (doc) => {
    const ledger = doc.refunds ?? [];
    const done = ledger.find((e) => e.id === request.refundId);
    if (done) return { write: false, value: { doc, entry: done } };
    const entry: RefundLedgerEntry = {
      id: request.refundId,
      m: request.m,
      amount: request.amount,
      status: 'pending',
      c: request.created,
      reason: 'late_payment',
      ev: { created: deps.ids.next('event') },
      late: request.late,
    };
    const counts = { refunds_pending: (doc.refunds_pending ?? 0) + 1 };
    return {
      write: true,
      set: { ...counts, refunds: [...ledger, entry] },
      update: { $set: counts, $push: { refunds: entry } },
      value: (after) => ({ doc: after, entry }),
    };
  });
}

/** Ends a pending refund on its intent, once; answers the intent and the entry as they are after (or were already). */
export async function settleRefund(
  deps: LedgerDeps,
  target: string,
  scope: Scope,
  refundId: string,
  outcome: RefundOutcome,
): Promise<{ doc: PaymentIntentDoc; entry: RefundLedgerEntry } | null> {
  return change(deps, target, scope, (doc) => {
    const entryOf = (d: PaymentIntentDoc) => (d.refunds ?? []).find((e) => e.id === refundId) ?? null;
    // The succeeded event is made before the intent's: listed in that order.
    const events = { settled: deps.ids.next('event'), refunded: deps.ids.next('event') };
    const set = decideSettle(doc, refundId, outcome, events);
    if (set === null) {
      const entry = entryOf(doc);
      return { write: false, value: entry ? { doc, entry } : null };
    }
    // The store gets the counters and the one entry that ended, at its place in the list.
    const index = (doc.refunds ?? []).findIndex((e) => e.id === refundId);
    const { refunds, ...counts } = set;
    const update = { $set: { ...counts, [`refunds.${index}`]: refunds?.[index] } };
    return { write: true, set, update, value: (after) => ({ doc: after, entry: entryOf(after) as RefundLedgerEntry }) };
  });
}
