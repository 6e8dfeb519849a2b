/**
 * The refund's own document and its events, written after its ledger entry
 * (./ledger.ts) and following it: every step here is idempotent, so a retried job,
 * or the sweeper, runs it again to the same end.
 *
 * - The document is inserted with the refund's id; a second insert is a duplicate
 *   and reads the first one, whose `answer` (the create's response) stays what the
 *   first request got.
 * - Its status is set from the entry once the entry has ended, under the refund's
 *   lock (a store without atomic conditional updates replaces the whole document it
 *   updates, docs/storage.md, and a metadata update may run at the same time).
 * - Each event's id is in the entry, chosen with the change that caused it; its
 *   document is inserted once, and a second recording delivers the stored JSON.
 */
import type { PaymentIntentDoc, RefundDoc, RefundLedgerEntry } from '../../common/documents.js';
import { idTime } from '../../common/ids.js';
import type { RefundInput, Scope } from '../../common/jobs.js';
import { isDuplicateKey } from '../../common/mongo.js';
import { buildEventJson, presentPaymentIntent, presentRefund } from '../../common/presenters.js';
import { objectLockKey, withRecordLock } from '../record-lock.js';
import { recordOutgoing, recordOutgoingFirst } from '../webhooks/outbox.js';
import { claimEvent } from '../event-identity.js';
import { scopeMayWant } from '../webhooks/subscriptions.js';
import type { TransitionDeps } from '../lifecycle/transition.js';
import { postRefund } from '../balance/postings.js';

export type RecordDeps = Pick<TransitionDeps, 'collections' | 'inserts' | 'updates' | 'redis' | 'prefix' | 'eventsQueue' | 'fanOut' | 'postings'>;

/**
 * A refund's writes are not fenced (../record-lock.ts): its lock makes them take
 * turns, and each writes fields that a retry writes again.
 */
const UNFENCED = () => Promise.resolve(true);

/** Sets fields of a refund by `_id`, grouped with the refund updates that meet at the write gate (../fenced-updates.ts). */
export async function setRefundFields(deps: Pick<RecordDeps, 'collections' | 'updates'>, id: string, set: Partial<RefundDoc>): Promise<void> {
  await deps.updates.update({ collection: deps.collections.refunds, filter: { _id: id }, update: { $set: set }, fence: UNFENCED });
}

export function refundLockKey(prefix: string, refundId: string): string {
  return objectLockKey(prefix, 'refunds', refundId);
}

/** The refund's document (inserted now, or as an earlier run left it). `input` null: rebuilt by the sweeper. */
export async function ensureRefundDoc(deps: RecordDeps, intent: PaymentIntentDoc, entry: RefundLedgerEntry, input: Pick<RefundInput, 'description' | 'metadata'> | null): Promise<RefundDoc> {
  const base: Omit<RefundDoc, 'answer'> = {
    _id: entry.id,
    project: intent.project,
    livemode: intent.livemode,
    amount: entry.amount,
    currency: intent.currency,
    payment_intent: intent._id,
    status: 'pending',
    reason: entry.reason,
    failure_reason: null,
    description: input?.description ?? null,
    metadata: input?.metadata ?? [],
    operator: entry.late?.operator ?? intent.payment?.operator ?? 'unknown',
    created: entry.c,
    requested: false,
    operator_reference: null,
    polls: 0,
  };
  const doc: RefundDoc = { ...base, answer: JSON.stringify(presentRefund(base)) };
  try {
    await deps.inserts.insert(deps.collections.refunds, doc);
    return doc;
  } catch (err) {
    if (!isDuplicateKey(err)) throw err;
  }
  const stored = await deps.collections.refunds.findOne({ _id: entry.id });
  if (!stored) throw new Error(`refund ${entry.id}: duplicate key, yet no document`);
  return stored;
}

/**
 * Records an event (once) and hands it to delivery: its outbox entry when an endpoint
 * of its scope may take it, then its own document, then its fan-out. In that order,
 * as for a transition's event, an event whose document exists has its deliveries
 * recorded too, though Redis lose this job's retry between the two (a rollback). With
 * Redis away an endpoint is assumed to want it, and the outbox sweeper delivers what
 * the fan-out could not. A retry records the JSON written first.
 */
export async function recordEvent(deps: RecordDeps, scope: Scope, event: { id: string; type: string; objectId: string; object: () => unknown; key: string }): Promise<void> {
  // A refund's event is one per refund and type (../event-identity.ts): a second
  // settlement of it (its lock lost to a Redis that forgot) records nothing.
  if (!(await claimEvent(deps, event.key, event.id))) return;
  const hooked = await scopeMayWant(deps.redis, deps.prefix, deps.collections, scope, event.type).catch(() => true);
  let json = buildEventJson({ id: event.id, type: event.type, created: Math.floor(idTime(event.id) / 1000), livemode: scope.livemode, object: event.object() });
  let fanOut: (() => Promise<void>) | null = null;
  if (hooked) ({ json, fanOut } = await recordOutgoingFirst(deps, { id: event.id, ...scope, type: event.type, json }));
  try {
    await deps.inserts.insert(deps.collections.events, { _id: event.id, ...scope, type: event.type, object_id: event.objectId, json, created_ms: idTime(event.id) });
  } catch (err) {
    if (!isDuplicateKey(err)) throw err;
    // Recorded by an earlier run: that one's JSON is delivered (its outbox entry may be gone, its deliveries done).
    if (!fanOut) return;
    json = (await deps.collections.events.findOne({ _id: event.id }, { projection: { json: 1 } }))?.json ?? json;
    fanOut = await recordOutgoing(deps, { id: event.id, ...scope, type: event.type, json });
  }
  if (fanOut) await fanOut();
}

export function recordCreated(deps: RecordDeps, refund: RefundDoc, entry: RefundLedgerEntry): Promise<void> {
  const scope = { project: refund.project, livemode: refund.livemode };
  return recordEvent(deps, scope, { id: entry.ev.created, type: 'refund.created', objectId: refund._id, object: () => JSON.parse(refund.answer) as unknown, key: `${refund._id}:refund.created` });
}

/**
 * After the entry ended: its postings are made (held, and released when it failed),
 * the events are recorded, `refund.succeeded` and
 * `payment_intent.refunded` (the intent with the `amount_refunded` this refund gave
 * it), or `refund.failed`; then the document takes its status. In that order a job
 * lost between the two (Redis rolled back) leaves the refund `pending`, which the
 * sweeper finishes (processors/sweep-refunds.ts), its events recorded once; the other
 * way round a refund could end with no event at all.
 *
 * `known`: the refund's document as the caller read it (its step), else read here.
 * The status is written under the refund's lock, by `_id`, with no read first: a
 * retry writes the same fields again, and a metadata update waits for the lock.
 */
export async function finishSettled(deps: RecordDeps, intent: PaymentIntentDoc, entry: RefundLedgerEntry, operatorReference?: string, known?: RefundDoc): Promise<void> {
  if (entry.status === 'pending' || !entry.ev.settled) return;
  const status = entry.status;
  const failure = status === 'failed' ? (entry.fr ?? 'generic_decline') : null;
  const set = { status, failure_reason: failure, ...(operatorReference !== undefined ? { operator_reference: operatorReference } : {}) };
  const before = known ?? (await deps.collections.refunds.findOne({ _id: entry.id }));
  if (!before) return;
  // The ledger first (../balance/postings.ts): a refund shown ended is posted, held and, failed, released.
  if (deps.postings) await postRefund(deps.postings, intent, entry);
  const scope = { project: before.project, livemode: before.livemode };
  const ended = { ...before, ...set };
  const type = status === 'succeeded' ? 'refund.succeeded' : 'refund.failed';
  await recordEvent(deps, scope, { id: entry.ev.settled, type, objectId: before._id, object: () => presentRefund(ended), key: `${entry.id}:${type}` });
  if (status === 'succeeded' && entry.ev.refunded) {
    await recordEvent(deps, scope, {
      id: entry.ev.refunded,
      type: 'payment_intent.refunded',
      objectId: intent._id,
      object: () => presentPaymentIntent({ ...intent, amount_refunded: entry.ar ?? intent.amount_refunded ?? 0 }),
      key: `${entry.id}:payment_intent.refunded`,
    });
  }
  await withRecordLock(deps.redis, refundLockKey(deps.prefix, entry.id), () => setRefundFields(deps, entry.id, set));
}
