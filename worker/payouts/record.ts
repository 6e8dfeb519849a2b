/**
 * A payout's document, its transitions and its events. What it promises (DESIGN.md
 * sections 15 and 17):
 *
 * - **One payout per id.** The document is inserted with the id the api chose; a
 *   second insert is a duplicate and reads the first.
 * - **Sent or canceled, never both.** Before the operator is asked, and before a
 *   cancel, the payout's commitment is claimed in MongoDB (`event_keys`,
 *   `<po_…>:payout.commit`, worker/event-identity.ts): the first of the two takes it,
 *   whatever Redis forgot of the payout's lock.
 * - **One end.** The end (paid, failed, canceled) is decided once and written down
 *   (`ending`) before anything follows from it; its event takes the key
 *   `<po_…>:payout.ended`, so a second end, of any kind, records nothing. Then the
 *   ledger moves (settle or release, keyed by the payout), the event is recorded, and
 *   the document takes its final status last: a job lost midway is finished by its
 *   retry, or by the sweeper, to the same end.
 * - Writes are made under the payout's Redis lock, by `_id` (and, on a store with
 *   atomic conditional updates, on the status read), so a cancel and a step take turns.
 */
import { claimEvent } from '../event-identity.js';
import type { IdGenerator } from '../../common/ids.js';
import type { Scope } from '../../common/jobs.js';
import { isDuplicateKey } from '../../common/mongo.js';
import { conditionalUpdateFilter } from '../../common/store-profile.js';
import { presentPayout, type PayoutDoc, type PayoutFailureCode, type PayoutStatus } from '../../common/payouts.js';
import { JOBS, type TypedQueue } from '../../common/jobs.js';
import { objectLockKey, withRecordLock } from '../record-lock.js';
import { recordEvent, type RecordDeps } from '../refunds/record.js';
import type { PayoutBalance } from './balance.js';

export type PayoutRecordDeps = RecordDeps & {
  ids: IdGenerator;
  now: () => number;
  balance: PayoutBalance;
  intentsQueue: TypedQueue<'intents'>;
  atomicConditionalUpdates: boolean;
};

export type PayoutEnd = { status: 'paid'; reference?: string } | { status: 'failed'; code: PayoutFailureCode; reference?: string } | { status: 'canceled' };

/** What a payout's document keeps of its decided end, until the end is done. */
export interface Ending {
  status: 'paid' | 'failed' | 'canceled';
  code: PayoutFailureCode | null;
  reference: string | null;
  /** The end's event id. */
  ev: string;
  /** Unix seconds. */
  at: number;
}

type Stored = PayoutDoc & { ending?: Ending };

export function payoutLockKey(prefix: string, id: string): string {
  return objectLockKey(prefix, 'payouts', id);
}

/** Inserts the payout, or reads the one an earlier run inserted. */
export async function ensurePayout(deps: Pick<PayoutRecordDeps, 'collections' | 'inserts'>, doc: PayoutDoc): Promise<PayoutDoc> {
  try {
    await deps.inserts.insert(deps.collections.payouts, doc);
    return doc;
  } catch (err) {
    if (!isDuplicateKey(err)) throw err;
  }
  const stored = await deps.collections.payouts.findOne({ _id: doc._id });
  if (!stored) throw new Error(`payout ${doc._id}: duplicate key, yet no document`);
  return stored;
}

/** Sets fields of a payout by `_id`, on the status it was read with where the store makes that atomic; false when that status changed. */
export async function setPayout(deps: Pick<PayoutRecordDeps, 'collections' | 'atomicConditionalUpdates'>, doc: Pick<PayoutDoc, '_id' | 'status'>, set: Record<string, unknown>): Promise<boolean> {
  const filter = conditionalUpdateFilter(deps, doc._id, { status: doc.status });
  const result = await deps.collections.payouts.updateOne(filter, { $set: set });
  return result.matchedCount > 0;
}

/** Runs `work` on the payout as stored now, under its lock; null when it does not exist in `scope`. */
export async function withPayout<T>(deps: Pick<PayoutRecordDeps, 'redis' | 'prefix' | 'collections'>, id: string, scope: Scope, work: (doc: Stored) => Promise<T>): Promise<T | null> {
  return withRecordLock(deps.redis, payoutLockKey(deps.prefix, id), async () => {
    const doc = (await deps.collections.payouts.findOne({ _id: id })) as Stored | null;
    if (!doc || doc.project !== scope.project || doc.livemode !== scope.livemode) return null;
    return work(doc);
  });
}

/**
 * Whether this payout's commitment is `what` (the first to claim it wins): `send`, or
 * `cancel:<the cancel request's mutation id>`, so a retry of that cancel finds its own
 * claim, and another cancel finds it taken.
 */
export function commit(deps: PayoutRecordDeps, id: string, what: string): Promise<boolean> {
  return claimEvent(deps, `${id}:payout.commit`, what);
}

export function recordCreated(deps: PayoutRecordDeps, doc: PayoutDoc): Promise<void> {
  const scope = { project: doc.project, livemode: doc.livemode };
  const created = { ...doc, status: 'pending' as PayoutStatus };
  return recordEvent(deps, scope, { id: doc.ev.created, type: 'payout.created', objectId: doc._id, object: () => presentPayout(created), key: `${doc._id}:payout.created` });
}

/**
 * Ends the payout (see the module's comment): decides the end once, under the lock,
 * then follows it through. Returns the payout as it ended, or as another end left it.
 */
export async function endPayout(deps: PayoutRecordDeps, id: string, scope: Scope, end: PayoutEnd): Promise<PayoutDoc | null> {
  const decided = await withPayout(deps, id, scope, async (doc) => {
    if (doc.ending) return { doc, ending: doc.ending };
    if (doc.status === 'paid' || doc.status === 'failed' || doc.status === 'canceled') return { doc, ending: null };
    const ending: Ending = {
      status: end.status,
      code: end.status === 'failed' ? end.code : null,
      reference: end.status === 'canceled' ? null : (end.reference ?? null),
      ev: deps.ids.next('event'),
      at: Math.floor(deps.now() / 1000),
    };
    if (!(await setPayout(deps, doc, { ending }))) return { doc: (await deps.collections.payouts.findOne({ _id: id })) as Stored, ending: null };
    return { doc: { ...doc, ending }, ending };
  });
  if (!decided) return null;
  if (!decided.ending) return decided.doc;
  return finishEnding(deps, decided.doc, decided.ending);
}

/** The decided end followed through: ledger, event, final status. Idempotent. */
export async function finishEnding(deps: PayoutRecordDeps, doc: Stored, ending: Ending): Promise<PayoutDoc> {
  const scope = { project: doc.project, livemode: doc.livemode };
  const ended: PayoutDoc = {
    ...doc,
    status: ending.status,
    failure_code: ending.code,
    arrival_date: ending.status === 'paid' ? ending.at : null,
    operator_reference: ending.reference ?? doc.operator_reference,
    phone_number: null,
    ev: { ...doc.ev, ended: ending.ev },
  };
  if (!(await claimEvent(deps, `${doc._id}:payout.ended`, ending.ev))) {
    // Another end of this payout was recorded (two writers after Redis forgot its lock): that one stands.
    return (await deps.collections.payouts.findOne({ _id: doc._id })) ?? doc;
  }
  // Whether or not `held` was written: a hold taken by a step that did not get to write it is found by its key.
  if (ending.status === 'paid') await deps.balance.settle(ended);
  else await deps.balance.release(ended);
  const { ending: _, ...rest } = ended as Stored;
  await recordEvent(deps, scope, { id: ending.ev, type: `payout.${ending.status}`, objectId: doc._id, object: () => presentPayout(rest), key: `${doc._id}:payout.ended` });
  await withRecordLock(deps.redis, payoutLockKey(deps.prefix, doc._id), () =>
    deps.collections.payouts.updateOne(
      { _id: doc._id },
      {
        $set: { status: ended.status, failure_code: ended.failure_code, arrival_date: ended.arrival_date, operator_reference: ended.operator_reference, phone_number: null, ev: ended.ev },
        $unset: { ending: '' },
      },
    ),
  );
  if (doc.batch) await scheduleBatchCheck(deps, doc.batch, scope);
  return rest;
}

/** How soon a batch is looked at after one of its payouts ended, or again while it is not complete. */
export const BATCH_CHECK_MS = 1_000;

/**
 * A check of the batch (worker/payouts/batches.ts) a second from now: one per batch and
 * second. Added after the payout's final write, it runs after that write (a bucket's
 * job waits a whole second from the first add in its second), so the last payout of a
 * batch to end is always seen by a check.
 */
export async function scheduleBatchCheck(deps: Pick<PayoutRecordDeps, 'intentsQueue' | 'now'>, batch: string, scope: Scope): Promise<void> {
  const bucket = Math.floor(deps.now() / BATCH_CHECK_MS);
  await deps.intentsQueue.add(JOBS.checkPayoutBatch, { ...scope, batch }, { jobId: `payout-batch-check-${batch}-${bucket}`, delay: BATCH_CHECK_MS, removeOnComplete: true, removeOnFail: 1000, attempts: 20, backoff: { type: 'capped' } });
}
