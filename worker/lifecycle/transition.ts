/**
 * Applies a lifecycle decision to a payment intent, at most once. What it promises:
 *
 * - Racing transitions take turns: read, decision and update are made under the
 *   intent's lock (../record-lock.ts), checked once more right before the update.
 *   On a store with atomic conditional updates (`atomicConditionalUpdates`,
 *   common/store-profile.ts), the update is also conditional: its filter names the
 *   intent's `rev` (and its status and attempt) as they were when the decision was
 *   made, so two racing jobs cannot both apply even when the lock did not hold; the
 *   loser reads the intent again and decides again (a cancel that lost to a success
 *   is then refused, an operator answer that lost to a cancel is dropped as late).
 *   On a store without them the lock is the only guard (docs/storage.md).
 * - The same update adds a `history` entry: the mutation's id, its answer's status,
 *   its event's id and its delayed jobs. So the event is recorded atomically with
 *   the change, and a retried job (crash, stall, lost connection) finds its entry and
 *   finishes what it had begun (the event's own document, its dispatch, the delayed
 *   jobs) instead of applying anything twice. Every step after the update is
 *   idempotent.
 * - The first change records the intent's created event in `events`, before its
 *   update, and drops the copy an earlier version kept on the intent: until then the
 *   event was the intent itself (common/created-events.ts).
 * - The intent stays small however often it changes (security review M1). A
 *   request's answer (its body), which a retry of its job must answer again, is a
 *   document of its own, keyed by (intent, mutation) (`intent_mutations`, swept with
 *   the idempotency keys), inserted in a batch before the update. The event's JSON
 *   stays in the newest history entry only: the update that adds the next entry
 *   compacts it, once that event is known to be recorded (its follow-up job says so,
 *   or one read finds it; else it is recorded then). The history keeps the last
 *   HISTORY_KEEP entries. So an operator's step costs one update of the intent and
 *   its event's batched insert, and a request's one batched insert more
 *   (docs/decisions/0012-event-json-on-the-newest-entry.md).
 * - Infrastructure faults are thrown, so BullMQ retries the job.
 */
import type { Filter } from 'mongodb';
import { createdEventDoc, withinRetention } from '../../common/created-events.js';
import type { MutationDoc, MutationEntry, MutationRecord, PaymentIntentDoc } from '../../common/documents.js';
import type { KeptIntents } from '../../common/kept-intents.js';
import { errorBody } from '../../common/errors.js';
import { idTime, type IdGenerator } from '../../common/ids.js';
import type { Scope, TypedQueue } from '../../common/jobs.js';
import type { Collections } from '../../common/mongo.js';
import { findByIdInScope, isDuplicateKey } from '../../common/mongo.js';
import { buildEventJson, presentPaymentIntent } from '../../common/presenters.js';
import type { InsertBatcher } from '../group-commit.js';
import { recordOutgoing, type OutboxDeps } from '../webhooks/outbox.js';
import { scopeMayWant } from '../webhooks/subscriptions.js';
import type { Redis } from 'ioredis';
import type { Decision } from './decide.js';
import { freezeCreateAnswer } from '../idempotency-records.js';
import { scheduleFollowUps } from './follow-ups.js';
import { INTENT_LOCK, RecordLock, intentLockKey } from '../record-lock.js';
import type { FencedUpdates } from '../fenced-updates.js';
import { retryInfrastructure } from '../../common/retry.js';
import { intentTokenKey, intentTokenReplacement } from '../../common/intent-tokens.js';
import { conditionalUpdateFilter } from '../../common/store-profile.js';
import { claimEventNaming } from '../event-identity.js';
import type { HeldIdentity } from '../balance/ledger.js';
import { postPayment, type Postings } from '../balance/postings.js';

export interface TransitionDeps {
  collections: Collections;
  inserts: InsertBatcher;
  redis: Redis;
  prefix: string;
  eventsQueue: TypedQueue<'events'>;
  /** An event's fan-out, run in the transition's job (../webhooks/outbox.ts). */
  fanOut?: OutboxDeps['fanOut'];
  intentsQueue: TypedQueue<'intents'>;
  ids: IdGenerator;
  /** Epoch ms. */
  now: () => number;
  /** Every transition's update passes through it, grouped with others at the write gate (../fenced-updates.ts). */
  updates: FencedUpdates;
  /**
   * The store's capability (common/store-profile.ts). When true, the update's filter
   * names the intent's status, attempt and `rev` as they were read, and a transition
   * that lost a race decides again. When false, the filter names `_id` alone: such a
   * store would not apply the condition atomically anyway, and any field besides
   * `_id` costs it a scan of every intent (docs/storage.md).
   */
  atomicConditionalUpdates: boolean;
  /** The intents this worker wrote last (common/kept-intents.ts); without it every change reads MongoDB. */
  kept?: KeptIntents;
  /**
   * `EVENT_RETENTION_DAYS`, in ms: an event older than this is deleted by the
   * retention sweeper, so a change neither records nor records again one so old.
   * Absent: events are kept for ever.
   */
  eventRetentionMs?: number;
  /** The ledger (../balance/postings.ts): a payment is posted before its succeeded event is recorded. Absent: nothing is posted. */
  postings?: Postings;
}

export interface Mutation extends Scope {
  /** The intent. */
  target: string;
  /** The mutation's id: a retried job keeps it (worker/processors/mutation.ts, `mutationId`). */
  id: string;
  /** When `id` is an idempotency key's: the key's expiry (epoch ms); an entry past it matches no one. */
  expiresAt?: number;
  /** The request asking, if a request is. */
  requestedBy?: string;
  /** An event known to be recorded already (OperatorOutcomeData `recorded`): not looked for. */
  recorded?: string;
  /** For the error body of a 402: the request's id and origin. */
  requestId: string;
  baseUrl: string;
}

export type TransitionResult =
  | { kind: 'missing' }
  | { kind: 'refused'; status: number; body: string }
  | { kind: 'skipped'; reason: string; doc: PaymentIntentDoc }
  /** `again`: found in the history, applied by an earlier job (this request's, or another with its key). */
  | { kind: 'applied'; record: MutationRecord; doc: PaymentIntentDoc; again?: boolean };

const UPDATE_RETRY = { tries: 6, baseMs: 100, capMs: 2000 };

/** How many times a mutation that lost a race decides again before the job is retried. */
const MAX_RACES = 8;

/** Everything stored but an earlier version's copy of the created event: what presentations and decisions read. */
const WITHOUT_HISTORY = { created_event: 0 } as const;

/** History entries an intent keeps. */
export const HISTORY_KEEP = 50;

/** How long a request's answer is kept (a keyed one at least as long as its key). */
const RECORD_TTL_MS = 48 * 3600_000;

export function mutationDocId(intent: string, mutation: string): string {
  return `${intent}:${mutation}`;
}

export async function transition(
  deps: TransitionDeps,
  mutation: Mutation,
  decide: (doc: PaymentIntentDoc) => Decision,
): Promise<TransitionResult> {
  const lock = new RecordLock(deps.redis, intentLockKey(deps.prefix, mutation.target), INTENT_LOCK);
  const token = await lock.acquire(deps.kept ? intentTokenKey(deps.prefix, mutation.target) : undefined);
  const kept = deps.kept?.take(mutation, mutation.target, token) ?? null;
  let result: TransitionResult;
  try {
    result = await decideAndApply(deps, mutation, decide, lock, kept);
  } catch (err) {
    await lock.release();
    throw err;
  }
  if (result.kind !== 'applied') {
    await lock.release();
    return result;
  }
  // The intent's token is replaced again once the update is in, before anything
  // answers, with the lock's release: by this job, or by its retry (which finds the
  // change applied). A failure here fails the job. The intent is kept under it.
  const replacement = intentTokenReplacement(deps.prefix, mutation.target);
  await lock.release(replacement);
  deps.kept?.keep(result.doc, replacement.value);
  // Every step after the update is idempotent: no need to hold the lock for them.
  await finish(deps, result.doc, result.record);
  return result;
}

async function decideAndApply(
  deps: TransitionDeps,
  mutation: Mutation,
  decide: (doc: PaymentIntentDoc) => Decision,
  lock: RecordLock,
  kept: PaymentIntentDoc | null,
): Promise<TransitionResult> {
  const c = deps.collections.paymentIntents;
  for (let race = 0; race < MAX_RACES; race++) {
    // A kept copy saves the first read only: a race lost is read again from MongoDB.
    const doc = race === 0 && kept ? kept : await findByIdInScope(c, mutation.target, mutation, { projection: WITHOUT_HISTORY });
    if (!doc) return { kind: 'missing' };
    const done = doc.history?.find((h) => h.m === mutation.id && (h.x === undefined || h.x > deps.now()));
    if (done) return { kind: 'applied', record: await wholeRecord(deps, doc, done), doc, again: true };
    const decision = decide(doc);
    if (decision.kind === 'refuse') {
      return { kind: 'refused', status: decision.status, body: errorBody(decision.detail, mutation.requestId, mutation.baseUrl) };
    }
    if (decision.kind === 'skip') return { kind: 'skipped', reason: decision.reason, doc };

    const rev = doc.rev ?? 0;
    // The create's replays must not show the change, nor its created event, which was
    // the intent itself until now: both are written down before the first change (a
    // later change finds them, as every change passes here).
    if (rev === 0) {
      await Promise.all([
        freezeCreateAnswer(deps, doc, () => JSON.stringify(presentPaymentIntent(doc, { withSecret: true }))),
        recordCreatedEvent(deps, doc),
      ]);
    }
    const after: PaymentIntentDoc = { ...doc, ...decision.set, rev: rev + 1 };
    const object = presentPaymentIntent(after);
    const evt = decision.event === null ? null : eventOf(deps, after, decision.event, object, `${doc._id}:${rev + 1}:${decision.event}`);
    const record: MutationRecord = {
      m: mutation.id,
      ...answerOf(decision.answer, after, object, mutation),
      evt,
      fu: decision.followUps,
      at: after.attempt ?? 0,
      ...(mutation.requestedBy ? { r: mutation.requestedBy } : {}),
      ...(mutation.expiresAt ? { x: mutation.expiresAt } : {}),
    };
    // The entry before this one loses its large parts in this update: its event must
    // be recorded first (it is, unless its job died before recording it).
    const previous = doc.history?.at(-1);
    if (previous?.evt?.json && previous.evt.id !== mutation.recorded) {
      await recordedBefore(deps, doc, { id: previous.evt.id, type: previous.evt.type, json: previous.evt.json, ...(previous.evt.k ? { k: previous.evt.k } : {}) });
    }
    const history = [...(doc.history ?? []).slice(-(HISTORY_KEEP - 1)).map(compact), newest(record)];
    // Before the update: a request's entry in the history always has its answer.
    if (mutation.requestedBy) await keepAnswer(deps, doc, mutation, record.res);
    // Declines and failures counted: past the limit, confirms are refused.
    const failures = decision.event === 'payment_intent.payment_failed' ? { failures: (doc.failures ?? 0) + 1 } : {};
    const where = conditionalUpdateFilter(deps, doc._id, {
      status: doc.status,
      // `attempt` of a document no transition has touched yet is absent, not 0.
      attempt: doc.attempt === undefined ? { $exists: false } : doc.attempt,
      rev: doc.rev === undefined ? { $exists: false } : rev,
    }) as Filter<PaymentIntentDoc>;
    // A locked database is contention: waited out here, not a failed job. The wait for
    // the gate may outlive the lock: each try is fenced (../record-lock.ts), never sent
    // under another's lock. Kept copies of the intent (common/kept-intents.ts) are
    // dropped before each try, by the fence's own round trip. Updates of other
    // intents that wait at the gate meanwhile go in the same command (../fenced-updates.ts).
    const changedMs = deps.now();
    const sent = await retryInfrastructure(
      () =>
        deps.updates.update({
          collection: c,
          filter: where,
          update: {
            $set: { ...decision.set, ...failures, rev: rev + 1, history, changed_ms: changedMs },
            // An earlier version's copy of the created event, recorded in `events` above.
            ...(rev === 0 ? { $unset: { created_event: '' } } : {}),
          },
          fence: (extraMs) => lock.renew(intentTokenReplacement(deps.prefix, doc._id), extraMs),
        }),
      UPDATE_RETRY,
    );
    if (sent === 'lost') {
      await lock.acquire();
      continue; // the lock was lost meanwhile: read and decide again under the new one
    }
    // Another mutation got there first, or the batch could not say: read and decide
    // again (a change of this mutation's is then found in the history).
    if (sent === 'unknown') continue;
    // As stored: the intent as it was read, with the update's fields.
    Object.assign(after, failures, { history, changed_ms: changedMs });
    return { kind: 'applied', record, doc: after };
  }
  throw new Error(`payment intent ${mutation.target}: still changing after ${MAX_RACES} tries`);
}

/**
 * The event of a transition, and its identity (`k`, ../event-identity.ts): the
 * intent, the `rev` the transition makes and the event's type. Two writers of the
 * same transition read the same `rev`, so they name the same change.
 */
function eventOf(deps: TransitionDeps, after: PaymentIntentDoc, type: string, object: unknown, key: string): NonNullable<MutationRecord['evt']> {
  const id = deps.ids.next('event');
  const json = buildEventJson({ id, type, created: Math.floor(deps.now() / 1000), livemode: after.livemode, object });
  return { id, type, json, k: key };
}

function answerOf(kind: 'object' | 'declined', after: PaymentIntentDoc, object: unknown, mutation: Mutation): { st: number; res: string } {
  if (kind === 'object') return { st: 200, res: JSON.stringify(object) };
  const error = after.last_payment_error;
  return {
    st: 402,
    res: errorBody(
      {
        code: 'payment_declined',
        message: error?.message ?? 'The operator declined the payment.',
        operator_decline_code: error?.operator_decline_code,
        payment_intent: object,
      },
      mutation.requestId,
      mutation.baseUrl,
    ),
  };
}

/** An entry once a newer one follows it: without the answer's body or the event's JSON. */
function compact(record: MutationEntry): MutationEntry {
  const { res: _res, evt, ...rest } = record;
  return { ...rest, evt: evt ? { id: evt.id, type: evt.type } : null };
}

/** The newest entry as stored: the answer's body is a request's own document, or not needed. */
function newest(record: MutationRecord): MutationEntry {
  const { res: _res, ...rest } = record;
  return rest;
}

/** A request's answer, inserted in a batch; a retry that decided again (the first update never applied) replaces it. */
async function keepAnswer(deps: TransitionDeps, doc: PaymentIntentDoc, mutation: Mutation, res: string): Promise<void> {
  const answer: MutationDoc = {
    _id: mutationDocId(doc._id, mutation.id),
    project: doc.project,
    livemode: doc.livemode,
    res,
    expires_at: Math.max(mutation.expiresAt ?? 0, deps.now() + RECORD_TTL_MS),
  };
  await deps.inserts.insert(deps.collections.intentMutations, answer).catch(async (err: unknown) => {
    if (!isDuplicateKey(err)) throw err;
    await retryInfrastructure(() => deps.collections.intentMutations.replaceOne({ _id: answer._id }, answer), UPDATE_RETRY);
  });
}

/**
 * A history entry as its job's retry needs it: a request's answer from its own
 * document (read by retries alone), or from the entry itself when written before
 * the answers moved out. The intent as it is now answers for an operator's step,
 * whose answer no one reads, and for a request's answer already swept (a retry two
 * days late). The event's JSON is in the newest entry; one compacted since is
 * recorded already (by the transition that compacted it), so there is nothing left
 * to record ('').
 */
async function wholeRecord(deps: TransitionDeps, doc: PaymentIntentDoc, entry: MutationEntry): Promise<MutationRecord> {
  const kept = entry.res ?? (entry.r ? (await deps.collections.intentMutations.findOne({ _id: mutationDocId(doc._id, entry.m) }))?.res : undefined);
  return {
    ...entry,
    res: kept ?? JSON.stringify(presentPaymentIntent(doc)),
    evt: entry.evt ? { ...entry.evt, json: entry.evt.json ?? '' } : null,
  };
}

/** What follows an applied transition; every step idempotent, so a retry may run it again. */
async function finish(deps: TransitionDeps, doc: PaymentIntentDoc, record: MutationRecord): Promise<void> {
  if (record.evt && record.evt.json !== '') await recordEvent(deps, doc, record.evt);
  // Once the event is recorded: the next transition, often the follow-up's, finds it.
  // The attempt the transition was about, not the intent's current one (a retry may come later).
  if (record.fu.length > 0) await scheduleFollowUps(deps.intentsQueue, { ...doc, attempt: record.at }, record.fu, deps.now(), record.evt?.id);
}

type Evt = NonNullable<MutationRecord['evt']>;

/**
 * Records the event: its outbox entry when an endpoint of its scope may take it,
 * then its own document, then its fan-out. In that order, an event whose document
 * exists has its deliveries recorded too (recordedBefore relies on it). Only MongoDB
 * stands between the update and the event's document: with Redis away (a restart, a
 * rollback that may also lose this job's retry) an endpoint is assumed to want it,
 * and the outbox sweeper delivers what the fan-out could not.
 */
async function recordEvent(deps: TransitionDeps, doc: PaymentIntentDoc, evt: Evt): Promise<void> {
  const postings = evt.type === 'payment_intent.succeeded' ? deps.postings : undefined;
  // A payment's event claim names the transaction that posts it: one insert claims both.
  const names = postings ? { txn: deps.ids.next('balance_transaction'), claimed_ms: deps.now() } : undefined;
  const { outcome, claim } = evt.k ? await claimEventNaming(deps, evt.k, evt.id, names) : { outcome: 'mine' as const, claim: null };
  // Another writer of this transition recorded it (its lock lost to a Redis that forgot): nothing more.
  if (outcome === 'other') return;
  // The payment's posting goes beside the outbox's steps, and before the event's
  // document: an event recorded is a payment posted, and whatever records a lost
  // event (its job's retry, recordedBefore) posts it too, once (../balance/ledger.ts).
  // A claim with no transaction (none taken: a record without `k`) leaves the ledger to claim its own.
  const identity: HeldIdentity | undefined = claim?.txn ? { txn: claim.txn, claimedMs: claim.claimed_ms ?? 0, fresh: outcome === 'taken' } : undefined;
  const posted = postings ? postPayment(postings, doc, identity) : null;
  posted?.catch(() => undefined);
  const scope = { project: doc.project, livemode: doc.livemode };
  const hooked = await scopeMayWant(deps.redis, deps.prefix, deps.collections, scope, evt.type).catch(() => true);
  const fanOut = hooked ? await recordOutgoing(deps, { id: evt.id, ...scope, type: evt.type, json: evt.json }) : null;
  await posted;
  await deps.inserts
    .insert(deps.collections.events, { _id: evt.id, ...scope, type: evt.type, object_id: doc._id, json: evt.json, created_ms: idTime(evt.id) })
    .catch((err: unknown) => {
      if (!isDuplicateKey(err)) throw err;
    });
  if (fanOut) await fanOut();
}

/**
 * Before a transition compacts the newest entry, whose event's JSON is nowhere else:
 * that event is recorded, by its own job normally (one read finds it), or here when
 * the job died between its update and its event. Also a reconnect's sweep, for the
 * newest entries of recent transitions, whose jobs Redis may have lost. An event
 * older than the events' retention is not looked for: missing, it was deleted for
 * its age, and recorded again it would be delivered again.
 */
export async function recordedBefore(deps: TransitionDeps, doc: PaymentIntentDoc, evt: Evt): Promise<void> {
  if (!retained(deps, evt.id)) return;
  if (await deps.collections.events.findOne({ _id: evt.id }, { projection: { _id: 1 } })) return;
  await recordEvent(deps, doc, evt);
}

/**
 * Before the intent's first change: its created event, until now derived from the
 * intent, becomes a document of `events` (common/created-events.ts). Only the
 * document: its deliveries, if any, were handed over by the create.
 */
async function recordCreatedEvent(deps: TransitionDeps, doc: PaymentIntentDoc): Promise<void> {
  const event = createdEventDoc(doc);
  if (!retained(deps, event._id)) return;
  await deps.inserts.insert(deps.collections.events, event).catch((err: unknown) => {
    if (!isDuplicateKey(err)) throw err;
  });
}

function retained(deps: TransitionDeps, eventId: string): boolean {
  return deps.eventRetentionMs === undefined || withinRetention(eventId, deps.now(), deps.eventRetentionMs);
}
