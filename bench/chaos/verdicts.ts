/**
 * What a chaos run must show, checked after it (the issue's goal):
 *
 * - every key ended 200, with exactly one object: MongoDB holds one object per key
 *   (none duplicated, none lost) and none that no key's answer names (no orphan);
 * - every created event reached the receiver at least once, correctly signed;
 * - every replay is flagged `Idempotent-Replayed: true`, with the first answer's
 *   bytes, and no answer that created its object is flagged;
 * - throughput came back to `share` of the pre-fault rate within `recoveryS` of
 *   each fault.
 */
import type { Db } from 'mongodb';
import { createdEventId } from '../../common/events.js';
import type { EventDoc, PaymentIntentDoc, RefundDoc } from '../../common/documents.js';
import type { InjectedFault } from './faults.js';
import { idTime } from '../../common/ids.js';
import { madeBefore, type Attempt, type KeyRecord } from './load.js';
import type { VerifyingReceiver } from './receiver.js';

export interface Verdict {
  name: string;
  pass: boolean;
  detail: string;
}

export interface KeyFigures {
  keys: number;
  answered200: number;
  terminal: Record<string, number>;
  unanswered: number;
  objects: number;
  duplicated: number;
  lost: number;
  orphans: number;
}

export async function checkKeys(db: Db, project: string, keys: KeyRecord[]): Promise<{ verdict: Verdict; figures: KeyFigures }> {
  const docs = await db
    .collection<PaymentIntentDoc>('payment_intents')
    .find({ project }, { projection: { _id: 1, metadata: 1 } })
    .toArray();
  const byKey = new Map<string, string[]>();
  for (const doc of docs) {
    const key = doc.metadata.find((pair) => pair.k === 'chaos_key')?.v ?? '(none)';
    byKey.set(key, [...(byKey.get(key) ?? []), doc._id]);
  }
  const stored = new Set(docs.map((d) => d._id));
  const answeredIds = new Set<string>();
  const terminal: Record<string, number> = {};
  let answered = 0;
  let lost = 0;
  for (const record of keys) {
    if (record.terminal) terminal[record.terminal] = (terminal[record.terminal] ?? 0) + 1;
    if (!record.answer) continue;
    answered++;
    answeredIds.add(record.answer.id);
    if (!stored.has(record.answer.id)) lost++;
  }
  let duplicated = 0;
  for (const ids of byKey.values()) if (ids.length > 1) duplicated += ids.length - 1;
  // An orphan belongs to no key of the run, or to a key answered with another object
  // (an object of a key never answered is counted with the unanswered keys).
  const answeredKeys = new Set(keys.filter((k) => k.answer).map((k) => k.key));
  const orphans = docs.filter((d) => {
    const key = d.metadata.find((pair) => pair.k === 'chaos_key')?.v;
    return key === undefined || (answeredKeys.has(key) && !answeredIds.has(d._id));
  }).length;
  const figures: KeyFigures = {
    keys: keys.length,
    answered200: answered,
    terminal,
    unanswered: keys.length - answered,
    objects: docs.length,
    duplicated,
    lost,
    orphans,
  };
  const pass = answered === keys.length && duplicated === 0 && lost === 0 && orphans === 0 && docs.length === keys.length;
  const detail = `${answered}/${keys.length} keys answered 200; ${docs.length} objects: ${duplicated} duplicated, ${lost} lost, ${orphans} orphaned`;
  return { verdict: { name: 'every key 200, exactly one object', pass, detail }, figures };
}

export interface EventFigures {
  expected: number;
  delivered: number;
  missing: number;
  deliveries: number;
  redelivered: number;
  badSignatures: number;
  outboxLeft: number;
  /** Seconds from the last event's arrival until the outbox was empty; null: it never was, within --settle. */
  outboxEmptyAfterS: number | null;
}

export function eventIdsOf(keys: KeyRecord[]): string[] {
  return keys.flatMap((k) => (k.answer ? [createdEventId(k.answer.id)] : []));
}

export function checkEvents(
  keys: KeyRecord[],
  receiver: VerifyingReceiver,
  outbox: { left: number; emptyAfterS: number | null },
): { verdict: Verdict; figures: EventFigures } {
  const expected = eventIdsOf(keys);
  const delivered = expected.filter((id) => receiver.verified.has(id)).length;
  let redelivered = 0;
  for (const count of receiver.verified.values()) if (count > 1) redelivered += count - 1;
  const figures: EventFigures = {
    expected: expected.length,
    delivered,
    missing: expected.length - delivered,
    deliveries: receiver.deliveries,
    redelivered,
    badSignatures: receiver.badSignatures + receiver.unverifiable,
    outboxLeft: outbox.left,
    outboxEmptyAfterS: outbox.emptyAfterS,
  };
  const pass = delivered === expected.length && figures.badSignatures === 0;
  const detail = `${delivered}/${expected.length} created events received correctly signed (${receiver.deliveries} deliveries, ${redelivered} repeats, ${figures.badSignatures} bad signatures; ${outbox.emptyAfterS === null ? `${outbox.left} outbox entries left` : `outbox empty ${outbox.emptyAfterS} s after the last arrival`})`;
  return { verdict: { name: 'every created event delivered, signed', pass, detail }, figures };
}

export interface ReplayFigures {
  replaysSent: number;
  replaysAnswered: number;
  replaysFlagged: number;
  replaysIdentical: number;
  /** First answers to a key whose object an earlier request made, flagged or not. */
  firstAnswersMadeEarlier: number;
  firstAnswersFlagged: number;
  /**
   * First answers flagged as replays whose object was made by that very request: must
   * be 0. (Made after the request was sent, with no earlier request of the key that
   * the client abandoned while the server may have gone on with it.)
   */
  wronglyFlagged: number;
  /** First answers flagged whose object was made after them by an abandoned earlier request (rightly flagged). */
  flaggedAfterAbandoned: number;
  /** Up to five keys behind either count, with their attempts: what to look at. */
  flaggedLateExamples: Array<{ key: string; objectMs: number; attempts: Attempt[] }>;
  /** Up to five replays whose bytes differ from their key's first answer, with both bodies. */
  differingReplayExamples: Array<{ key: string; first: string; replay: string; confirmed: boolean }>;
}

/**
 * Whether an earlier request of the key may still have been running on the server
 * when this one was sent: the client gave up waiting (timeout), but the api went on,
 * and may have made the object only then, after this request was sent. That request's
 * object makes this answer a replay, rightly flagged, though made after it was sent.
 * (A refused or reset connection never reached, or died with, its api.)
 */
function earlierMayStillRun(attempts: Attempt[], sentMs: number): boolean {
  return attempts.some((a) => a.sentMs < sentMs && (a.outcome === 'timeout' || a.outcome.startsWith('network error')));
}

export function checkReplays(keys: KeyRecord[]): { verdict: Verdict; figures: ReplayFigures } {
  const figures: ReplayFigures = {
    replaysSent: 0,
    replaysAnswered: 0,
    replaysFlagged: 0,
    replaysIdentical: 0,
    firstAnswersMadeEarlier: 0,
    firstAnswersFlagged: 0,
    wronglyFlagged: 0,
    flaggedAfterAbandoned: 0,
    flaggedLateExamples: [],
    differingReplayExamples: [],
  };
  for (const record of keys) {
    const first = record.answer;
    if (first) {
      if (madeBefore(first)) figures.firstAnswersMadeEarlier++;
      if (first.replayed) figures.firstAnswersFlagged++;
      if (first.replayed && !madeBefore(first)) {
        if (earlierMayStillRun(record.attempts, first.sentMs)) figures.flaggedAfterAbandoned++;
        else figures.wronglyFlagged++;
        if (figures.flaggedLateExamples.length < 5) figures.flaggedLateExamples.push({ key: record.key, objectMs: idTime(first.id), attempts: record.attempts });
      }
    }
    if (!record.replay) continue;
    figures.replaysSent++;
    const again = record.replay.answer;
    if (!again) continue;
    figures.replaysAnswered++;
    if (again.replayed) figures.replaysFlagged++;
    if (first && again.body === first.body) figures.replaysIdentical++;
    else if (first && figures.differingReplayExamples.length < 5) {
      figures.differingReplayExamples.push({ key: record.key, first: first.body, replay: again.body, confirmed: record.confirm !== null });
    }
  }
  const pass =
    figures.replaysAnswered === figures.replaysSent &&
    figures.replaysFlagged === figures.replaysSent &&
    figures.replaysIdentical === figures.replaysSent &&
    figures.wronglyFlagged === 0;
  const detail =
    `${figures.replaysFlagged}/${figures.replaysSent} replays flagged Idempotent-Replayed (${figures.replaysIdentical} byte-identical, ` +
    `${figures.replaysAnswered} answered); ${figures.firstAnswersFlagged} first answers flagged, ${figures.wronglyFlagged} wrongly` +
    (figures.flaggedAfterAbandoned ? ` (${figures.flaggedAfterAbandoned} made after them by a request the client had given up on)` : '');
  return { verdict: { name: 'every replay flagged', pass, detail }, figures };
}

export interface Recovery {
  kind: string;
  target: string;
  atS: number;
  /** Seconds until the rate over a window wholly after the fault was back to the goal; null: never within the limit. */
  recoveredAfterS: number | null;
}

/** Successes (first 200s) per bucket of `bucketMs`, from `startMs`. */
export function successSeries(keys: KeyRecord[], startMs: number, bucketMs: number, buckets: number): number[] {
  const series = new Array<number>(buckets).fill(0);
  for (const record of keys) {
    if (!record.answer) continue;
    const i = Math.floor((record.answer.atMs - startMs) / bucketMs);
    if (i >= 0 && i < buckets) series[i] = (series[i] ?? 0) + 1;
  }
  return series;
}

export interface RecoveryOptions {
  startMs: number;
  warmupS: number;
  recoveryS: number;
  share: number;
  windowS?: number;
}

/** The buckets of 250 ms the recovery is read in, and how many reach past the last fault's recovery. */
export const RECOVERY_BUCKET_MS = 250;
export function recoveryBuckets(faults: InjectedFault[], options: RecoveryOptions): number {
  const horizonS = Math.max(...faults.map((f) => (f.startedMs - options.startMs) / 1000), options.warmupS) + options.recoveryS + 5;
  return Math.ceil((horizonS * 1000) / RECOVERY_BUCKET_MS);
}

/**
 * The pre-fault rate of a series of `RECOVERY_BUCKET_MS` buckets (the warm-up, less
 * its first 2 s of ramp-up), and for each fault the seconds until the rate over a
 * window wholly after it was back to `share` of it (null: not within `recoveryS`).
 */
export function recoveriesOf(series: number[], faults: InjectedFault[], options: RecoveryOptions): { baselinePerS: number; recoveries: Recovery[] } {
  const bucketMs = RECOVERY_BUCKET_MS;
  const windowBuckets = Math.round(((options.windowS ?? 2) * 1000) / bucketMs);
  const fromBucket = Math.round(2000 / bucketMs);
  const toBucket = Math.round((options.warmupS * 1000) / bucketMs);
  const warm = series.slice(fromBucket, toBucket);
  const baselinePerS = warm.reduce((a, b) => a + b, 0) / ((warm.length * bucketMs) / 1000 || 1);
  const goal = options.share * baselinePerS * ((windowBuckets * bucketMs) / 1000);
  const recoveries: Recovery[] = [];
  for (const fault of faults.filter((f) => f.kind !== 'redis-snapshot')) {
    const atMs = fault.startedMs - options.startMs;
    const first = Math.ceil(atMs / bucketMs);
    let recoveredAfterS: number | null = null;
    // The window must lie wholly after the fault: a window that straddles it would
    // count successes from before it.
    for (let end = first + windowBuckets; end * bucketMs <= atMs + options.recoveryS * 1000; end++) {
      const sum = series.slice(end - windowBuckets, end).reduce((a, b) => a + b, 0);
      if (sum >= goal) {
        recoveredAfterS = Math.round((end * bucketMs - atMs) / 100) / 10;
        break;
      }
    }
    recoveries.push({ kind: fault.kind, target: fault.target, atS: Math.round(atMs / 100) / 10, recoveredAfterS });
  }
  return { baselinePerS, recoveries };
}

/** The verdict on `recoveries`, named after what came back. */
export function recoveryVerdict(what: string, baselinePerS: number, recoveries: Recovery[], options: RecoveryOptions): Verdict {
  const failed = recoveries.filter((r) => r.recoveredAfterS === null);
  const worst = Math.max(0, ...recoveries.map((r) => r.recoveredAfterS ?? Infinity));
  const detail =
    `pre-fault ${baselinePerS.toFixed(1)}/s; ${recoveries.length - failed.length}/${recoveries.length} faults followed by ` +
    `${Math.round(options.share * 100)}% of it within ${options.recoveryS} s (slowest ${Number.isFinite(worst) ? `${worst} s` : 'never'})`;
  return { name: `${what} back within ${options.recoveryS} s`, pass: failed.length === 0 && baselinePerS > 0, detail };
}

export function checkRecovery(keys: KeyRecord[], faults: InjectedFault[], options: RecoveryOptions): { verdict: Verdict; baselinePerS: number; recoveries: Recovery[] } {
  const series = successSeries(keys, options.startMs, RECOVERY_BUCKET_MS, recoveryBuckets(faults, options));
  const { baselinePerS, recoveries } = recoveriesOf(series, faults, options);
  return { verdict: recoveryVerdict('throughput', baselinePerS, recoveries, options), baselinePerS, recoveries };
}

export interface ConfirmFigures {
  confirms: number;
  answered200: number;
  terminal: Record<string, number>;
  succeeded: number;
  /** Confirmed intents not `succeeded` when checked, by status. */
  notSucceeded: Record<string, number>;
  /** Intents with more than one `payment_intent.succeeded` event. */
  doubleSucceeded: number;
  /** Events recorded twice (the same transition applied twice). */
  duplicateEvents: number;
}

/**
 * Every confirm answered 200, and each confirmed intent ended `succeeded` with exactly
 * one `succeeded` event and no transition recorded twice: the lifecycle's promise of
 * exactly once, under the same faults as the creates.
 */
export async function checkConfirms(db: Db, keys: KeyRecord[]): Promise<{ verdict: Verdict; figures: ConfirmFigures }> {
  const confirmed = keys.filter((k) => k.confirm && k.answer);
  const ids = confirmed.map((k) => k.answer!.id);
  const figures: ConfirmFigures = { confirms: confirmed.length, answered200: 0, terminal: {}, succeeded: 0, notSucceeded: {}, doubleSucceeded: 0, duplicateEvents: 0 };
  for (const k of confirmed) {
    if (k.confirm!.answer) figures.answered200++;
    if (k.confirm!.terminal) figures.terminal[k.confirm!.terminal] = (figures.terminal[k.confirm!.terminal] ?? 0) + 1;
  }
  const docs = await db
    .collection<PaymentIntentDoc>('payment_intents')
    .find({ _id: { $in: ids } }, { projection: { _id: 1, status: 1, history: 1 } })
    .toArray();
  for (const doc of docs) {
    if (doc.status === 'succeeded') figures.succeeded++;
    else figures.notSucceeded[doc.status] = (figures.notSucceeded[doc.status] ?? 0) + 1;
    const types = (doc.history ?? []).flatMap((h) => (h.evt ? [h.evt.type] : []));
    if (types.filter((t) => t === 'payment_intent.succeeded').length > 1) figures.doubleSucceeded++;
    const kinds = new Set(types);
    if (kinds.size !== types.length) figures.duplicateEvents++;
  }
  const stored = await db
    .collection('events')
    .aggregate<{ _id: string; n: number }>([{ $match: { object_id: { $in: ids }, type: 'payment_intent.succeeded' } }, { $group: { _id: '$object_id', n: { $sum: 1 } } }])
    .toArray()
    .catch(() => []);
  figures.doubleSucceeded += stored.filter((s) => s.n > 1).length;
  const pass = figures.answered200 === figures.confirms && figures.succeeded === figures.confirms && figures.doubleSucceeded === 0 && figures.duplicateEvents === 0;
  const detail =
    `${figures.answered200}/${figures.confirms} confirms answered 200; ${figures.succeeded} intents succeeded` +
    `${Object.keys(figures.notSucceeded).length ? ` (others: ${JSON.stringify(figures.notSucceeded)})` : ''}; ` +
    `${figures.doubleSucceeded} with two succeeded events, ${figures.duplicateEvents} with a transition recorded twice`;
  return { verdict: { name: 'every confirm 200, each intent succeeded exactly once', pass, detail }, figures };
}

export interface RefundFigures {
  /** Intents refunded (at least one refund asked). */
  intents: number;
  requests: number;
  answered200: number;
  terminal: Record<string, number>;
  /** Refunds stored, by status. */
  byStatus: Record<string, number>;
  /** Refunds with other than one `refund.created` and one `refund.succeeded` or `refund.failed`. */
  notExactlyOnce: number;
  /** `payment_intent.refunded` events recorded, against the succeeded refunds: one each. */
  intentRefundedEvents: number;
  /** Intents whose `amount_refunded` or held amount exceeds their amount. */
  overRefunded: number;
  /** Intents whose `amount_refunded` is not the sum of their succeeded refunds. */
  mismatched: number;
  eventsExpected: number;
  eventsDelivered: number;
}

export const REFUND_EVENT_TYPES = ['refund.created', 'refund.succeeded', 'refund.failed', 'payment_intent.refunded'];

/** The stored events of the refunded intents and their refunds. */
export async function refundEvents(db: Db, keys: KeyRecord[]): Promise<Array<Pick<EventDoc, '_id' | 'type' | 'object_id'>>> {
  const intents = keys.flatMap((k) => (k.refunds?.length ? [k.refunds[0]!.intent] : []));
  if (intents.length === 0) return [];
  const refunds = await db.collection<RefundDoc>('refunds').find({ payment_intent: { $in: intents } }, { projection: { _id: 1 } }).toArray();
  return db
    .collection<EventDoc>('events')
    .find({ object_id: { $in: [...intents, ...refunds.map((r) => r._id)] }, type: { $in: REFUND_EVENT_TYPES } }, { projection: { _id: 1, type: 1, object_id: 1 } })
    .toArray();
}

/**
 * Refunds under faults (issue 27): every refund request answered 200; every refund
 * ended `succeeded` or `failed`, with exactly one `refund.created` and one ending
 * event; no intent refunded (or held) past its amount; `amount_refunded` the sum of
 * its succeeded refunds; every refund event delivered, signed.
 */
export async function checkRefunds(db: Db, keys: KeyRecord[], receiver: VerifyingReceiver): Promise<{ verdicts: Verdict[]; figures: RefundFigures }> {
  const asked = keys.filter((k) => k.refunds?.length);
  const intents = asked.map((k) => k.refunds![0]!.intent);
  const figures: RefundFigures = {
    intents: asked.length, requests: 0, answered200: 0, terminal: {}, byStatus: {}, notExactlyOnce: 0, intentRefundedEvents: 0, overRefunded: 0, mismatched: 0, eventsExpected: 0, eventsDelivered: 0,
  };
  for (const refund of asked.flatMap((k) => k.refunds!)) {
    figures.requests++;
    if (refund.answer) figures.answered200++;
    if (refund.terminal) figures.terminal[refund.terminal] = (figures.terminal[refund.terminal] ?? 0) + 1;
  }
  const refunds = await db.collection<RefundDoc>('refunds').find({ payment_intent: { $in: intents } }).toArray();
  for (const r of refunds) figures.byStatus[r.status] = (figures.byStatus[r.status] ?? 0) + 1;
  const events = await refundEvents(db, keys);
  const count = new Map<string, { created: number; ended: number }>();
  figures.intentRefundedEvents = events.filter((e) => e.type === 'payment_intent.refunded').length;
  for (const e of events) {
    if (!e.type.startsWith('refund.')) continue;
    const c = count.get(e.object_id) ?? { created: 0, ended: 0 };
    if (e.type === 'refund.created') c.created++;
    else c.ended++;
    count.set(e.object_id, c);
  }
  for (const r of refunds) {
    const c = count.get(r._id);
    if (!c || c.created !== 1 || c.ended !== 1 || r.status === 'pending') figures.notExactlyOnce++;
  }
  const docs = await db.collection<PaymentIntentDoc>('payment_intents').find({ _id: { $in: intents } }, { projection: { _id: 1, amount: 1, amount_refunded: 1, amount_held: 1 } }).toArray();
  for (const doc of docs) {
    const succeeded = refunds.filter((r) => r.payment_intent === doc._id && r.status === 'succeeded').reduce((sum, r) => sum + r.amount, 0);
    if ((doc.amount_refunded ?? 0) > doc.amount || (doc.amount_held ?? 0) > doc.amount) figures.overRefunded++;
    if ((doc.amount_refunded ?? 0) !== succeeded) figures.mismatched++;
  }
  figures.eventsExpected = events.length;
  figures.eventsDelivered = events.filter((e) => receiver.verified.has(e._id)).length;
  const unanswered = figures.requests - figures.answered200;
  return {
    figures,
    verdicts: [
      {
        name: 'every refund 200, ended succeeded or failed exactly once',
        pass: unanswered === 0 && figures.notExactlyOnce === 0 && refunds.length > 0 === figures.requests > 0 && figures.intentRefundedEvents === (figures.byStatus.succeeded ?? 0),
        detail:
          `${figures.answered200}/${figures.requests} refund requests of ${figures.intents} intents answered 200; ${refunds.length} refunds ${JSON.stringify(figures.byStatus)}; ` +
          `${figures.notExactlyOnce} not ended exactly once; ${figures.intentRefundedEvents} payment_intent.refunded events`,
      },
      {
        name: 'no intent refunded past its amount, amount_refunded = its succeeded refunds',
        pass: figures.overRefunded === 0 && figures.mismatched === 0 && docs.length === intents.length,
        detail: `${docs.length} intents: ${figures.overRefunded} refunded or held past their amount, ${figures.mismatched} whose amount_refunded is not their succeeded refunds' sum`,
      },
      {
        name: 'every refund event delivered, signed',
        pass: figures.eventsDelivered === figures.eventsExpected,
        detail: `${figures.eventsDelivered}/${figures.eventsExpected} refund events (${REFUND_EVENT_TYPES.join(', ')}) received correctly signed`,
      },
    ],
  };
}
