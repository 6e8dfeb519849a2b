/**
 * What a chaos run with `--payments` must show (issue 31), besides the verdicts of
 * verdicts.ts:
 *
 * - every confirmed payment final within its client's budget, as its client saw it;
 * - exactly one `payment_intent.succeeded` event per succeeded payment (none for the
 *   others), and no transition recorded twice;
 * - every event of the run delivered, signed (the endpoint is on `*`);
 * - the payment path back after each fault: payments reaching final per second, back
 *   to the pre-fault rate's share, as the creates' recovery verdict reads it.
 *
 * Also the confirm → final times, and how long no payment reached final after each fault.
 */
import type { Db } from 'mongodb';
import type { EventDoc, PaymentIntentDoc } from '../../common/documents.js';
import { idTime } from '../../common/ids.js';
import type { InjectedFault } from './faults.js';
import type { KeyRecord } from './load.js';
import type { VerifyingReceiver } from './receiver.js';
import { recoveriesOf, recoveryBuckets, recoveryVerdict, RECOVERY_BUCKET_MS, type Recovery, type RecoveryOptions, type Verdict } from './verdicts.js';

export interface PaymentFigures {
  /** Payments whose client sent a confirm. */
  payments: number;
  confirmed200: number;
  confirmTerminal: Record<string, number>;
  /** Final within the client's budget, by the status the client saw. */
  final: Record<string, number>;
  /** Not final within the budget, by the last status the client saw (`none`: never read). */
  notFinal: Record<string, number>;
  /** From the first confirm request until a poll saw the payment final. */
  confirmToFinalMs: { p50: number; p99: number; max: number } | null;
  /**
   * The same time in two parts, over the payments final in their budget: from the
   * first confirm request until the confirm's 200 (its retries included), and from
   * that 200 until a poll saw the payment final. Which side of the answer a slow
   * payment waited on.
   */
  confirmAnswerMs: { p50: number; p99: number; max: number } | null;
  answerToFinalMs: { p50: number; p99: number; max: number } | null;
  polls: number;
  pollFailures: number;
  /** Stored statuses of the payments, when checked. */
  stored: Record<string, number>;
  /** Succeeded payments without a `payment_intent.succeeded` event, with more than one, and other payments with one. */
  succeededWithoutEvent: number;
  succeededTwice: number;
  eventWithoutSuccess: number;
  /** Payments with a transition recorded twice in their history. */
  transitionsTwice: number;
  /**
   * The slowest payments (those never final first), each as a timeline in seconds from
   * the run's start: its first confirm request, the confirm's attempts, its 200, the
   * transitions its stored history records (each at its event's id time), and when a
   * poll saw it final. Which step a slow payment waited for, and its id for the logs.
   */
  slowest?: SlowPayment[];
  /** Some of the payments that failed the event check (up to 5 of each kind), with their newest history entry's event, to look up in the logs. */
  samples?: Array<{ id: string; status: string; problem: string; newest: { type: string; id: string; json: boolean } | null }>;
}

export interface SlowPayment {
  id: string;
  /** From the first confirm request until a poll saw it final; null: never within the budget. */
  tookMs: number | null;
  confirmS: number;
  /** The confirm's attempts' outcomes, in order, runs of one outcome folded (`503 ×3`). */
  attempts: string;
  answeredS: number | null;
  /** The transitions recorded, by their events, in order. */
  steps: Array<{ type: string; atS: number }>;
  finalS: number | null;
}

/** How many slow payments the report shows. */
export const SLOWEST_SHOWN = 5;

/** Outcomes in order, a run of one outcome written once with its count. */
export function foldOutcomes(outcomes: string[]): string {
  const runs: Array<{ outcome: string; n: number }> = [];
  for (const outcome of outcomes) {
    const last = runs.at(-1);
    if (last && last.outcome === outcome) last.n++;
    else runs.push({ outcome, n: 1 });
  }
  return runs.map((r) => (r.n > 1 ? `${r.outcome} ×${r.n}` : r.outcome)).join(', ');
}

/**
 * The `count` slowest payments as timelines from `startMs` (never final first, then by
 * confirm → final), with the transitions their stored intents record: an entry's event
 * id carries the time it was made (common/ids.ts), just before its update.
 */
export function slowestPayments(keys: KeyRecord[], docs: Array<Pick<PaymentIntentDoc, '_id' | 'history'>>, startMs: number, count: number = SLOWEST_SHOWN): SlowPayment[] {
  const s = (ms: number) => Math.round((ms - startMs) / 100) / 10;
  const byId = new Map(docs.map((d) => [d._id, d]));
  const took = (k: KeyRecord) => (k.payment!.finalMs === null ? Infinity : k.payment!.finalMs - k.payment!.startedMs);
  return keys
    .filter((k) => k.payment && k.answer)
    .sort((a, b) => took(b) - took(a))
    .slice(0, count)
    .map((k) => {
      const payment = k.payment!;
      const history = byId.get(k.answer!.id)?.history ?? [];
      return {
        id: k.answer!.id,
        tookMs: payment.finalMs === null ? null : payment.finalMs - payment.startedMs,
        confirmS: s(payment.startedMs),
        attempts: foldOutcomes((k.confirm?.attempts ?? []).map((a) => a.outcome)),
        answeredS: k.confirm?.answer ? s(k.confirm.answer.atMs) : null,
        steps: history.flatMap((h) => (h.evt && h.evt.type.startsWith('payment_intent.') ? [{ type: h.evt.type.slice('payment_intent.'.length), atS: s(idTime(h.evt.id)) }] : [])),
        finalS: payment.finalMs === null ? null : s(payment.finalMs),
      };
    });
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

/** What the clients saw: confirms answered, payments final within `budgetMs` (and how long it took), the others. */
export function clientFigures(
  keys: KeyRecord[],
  budgetMs: number,
): Pick<PaymentFigures, 'payments' | 'confirmed200' | 'confirmTerminal' | 'final' | 'notFinal' | 'confirmToFinalMs' | 'confirmAnswerMs' | 'answerToFinalMs' | 'polls' | 'pollFailures'> {
  const paid = keys.filter((k) => k.payment);
  const figures = { payments: paid.length, confirmed200: 0, confirmTerminal: {} as Record<string, number>, final: {} as Record<string, number>, notFinal: {} as Record<string, number>, polls: 0, pollFailures: 0 };
  const times: number[] = [];
  const answers: number[] = [];
  const afterAnswers: number[] = [];
  for (const k of paid) {
    const payment = k.payment!;
    if (k.confirm?.answer) figures.confirmed200++;
    if (k.confirm?.terminal) figures.confirmTerminal[k.confirm.terminal] = (figures.confirmTerminal[k.confirm.terminal] ?? 0) + 1;
    figures.polls += payment.polls;
    figures.pollFailures += payment.pollFailures;
    const took = payment.finalMs === null ? null : payment.finalMs - payment.startedMs;
    if (took !== null && took <= budgetMs) {
      times.push(took);
      const answeredMs = k.confirm?.answer?.atMs;
      if (answeredMs !== undefined) {
        answers.push(answeredMs - payment.startedMs);
        afterAnswers.push(Math.max(0, payment.finalMs! - answeredMs));
      }
      figures.final[payment.status!] = (figures.final[payment.status!] ?? 0) + 1;
    } else {
      const last = payment.status ?? 'none';
      figures.notFinal[last] = (figures.notFinal[last] ?? 0) + 1;
    }
  }
  return { ...figures, confirmToFinalMs: spread(times), confirmAnswerMs: spread(answers), answerToFinalMs: spread(afterAnswers) };
}

function spread(values: number[]): { p50: number; p99: number; max: number } | null {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length ? { p50: percentile(sorted, 50), p99: percentile(sorted, 99), max: sorted.at(-1) as number } : null;
}

/** The goal's bound on confirm → final at p99 (issue "The storm with payments"). */
export const CONFIRM_TO_FINAL_P99_GOAL_MS = 10_000;

/**
 * Confirm → final at p99 within `goalMs`, over every confirmed payment: one that never
 * became final within its client's budget counts as slower than any bound.
 */
export function p99Verdict(keys: KeyRecord[], goalMs: number = CONFIRM_TO_FINAL_P99_GOAL_MS): Verdict {
  const paid = keys.flatMap((k) => (k.payment ? [k.payment] : []));
  const within = paid.filter((p) => p.finalMs !== null && p.finalMs - p.startedMs <= goalMs).length;
  const needed = Math.floor(0.99 * paid.length) + 1;
  return {
    name: `confirm → final p99 within ${goalMs / 1000} s`,
    pass: paid.length > 0 && within >= needed,
    detail: `${within}/${paid.length} confirmed payments final within ${goalMs / 1000} s of their first confirm (p99 needs ${Math.min(needed, paid.length)})`,
  };
}

/** Succeeded payments against their `payment_intent.succeeded` events: exactly one each, none for the others. */
export function succeededEventCounts(statuses: Map<string, string>, events: Map<string, number>): Pick<PaymentFigures, 'succeededWithoutEvent' | 'succeededTwice' | 'eventWithoutSuccess'> {
  const counts = { succeededWithoutEvent: 0, succeededTwice: 0, eventWithoutSuccess: 0 };
  for (const [id, status] of statuses) {
    const n = events.get(id) ?? 0;
    if (status === 'succeeded' && n === 0) counts.succeededWithoutEvent++;
    else if (status === 'succeeded' && n > 1) counts.succeededTwice++;
    else if (status !== 'succeeded' && n > 0) counts.eventWithoutSuccess++;
  }
  return counts;
}

export async function checkPayments(db: Db, keys: KeyRecord[], budgetMs: number, startMs: number): Promise<{ verdicts: Verdict[]; figures: PaymentFigures }> {
  const client = clientFigures(keys, budgetMs);
  const ids = keys.flatMap((k) => (k.payment && k.answer ? [k.answer.id] : []));
  const docs = await db.collection<PaymentIntentDoc>('payment_intents').find({ _id: { $in: ids } }, { projection: { _id: 1, status: 1, history: 1 } }).toArray();
  const statuses = new Map(docs.map((d) => [d._id, d.status as string]));
  const stored: Record<string, number> = {};
  let transitionsTwice = 0;
  for (const doc of docs) {
    stored[doc.status] = (stored[doc.status] ?? 0) + 1;
    const types = (doc.history ?? []).flatMap((h) => (h.evt ? [h.evt.type] : []));
    if (new Set(types).size !== types.length) transitionsTwice++;
  }
  const grouped = await db
    .collection<EventDoc>('events')
    .aggregate<{ _id: string; n: number }>([{ $match: { object_id: { $in: ids }, type: 'payment_intent.succeeded' } }, { $group: { _id: '$object_id', n: { $sum: 1 } } }])
    .toArray();
  const counted = new Map(grouped.map((g) => [g._id, g.n]));
  const events = succeededEventCounts(statuses, counted);
  const samples = docs
    .flatMap((doc) => {
      const n = counted.get(doc._id) ?? 0;
      const problem = doc.status === 'succeeded' ? (n === 0 ? 'no succeeded event' : n > 1 ? `${n} succeeded events` : null) : n > 0 ? 'an event, not succeeded' : null;
      if (!problem) return [];
      const evt = doc.history?.at(-1)?.evt;
      return [{ id: doc._id, status: doc.status as string, problem, newest: evt ? { type: evt.type, id: evt.id, json: evt.json !== undefined } : null }];
    })
    .slice(0, 5);
  const slowest = slowestPayments(keys, docs, startMs);
  const figures: PaymentFigures = { ...client, stored, ...events, transitionsTwice, slowest, ...(samples.length ? { samples } : {}) };
  const inBudget = Object.values(client.final).reduce((a, b) => a + b, 0);
  const t = client.confirmToFinalMs;
  return {
    figures,
    verdicts: [
      {
        name: `every confirmed payment final within its client's budget (${budgetMs / 1000} s)`,
        pass: client.payments > 0 && client.confirmed200 === client.payments && inBudget === client.payments,
        detail:
          `${client.confirmed200}/${client.payments} confirms answered 200; ${inBudget} final in time ${JSON.stringify(client.final)}` +
          `${Object.keys(client.notFinal).length ? `, not: ${JSON.stringify(client.notFinal)}` : ''}` +
          `${Object.keys(client.confirmTerminal).length ? `, confirms ended ${JSON.stringify(client.confirmTerminal)}` : ''}; ` +
          `confirm → final ${t ? `p50 ${t.p50} ms, p99 ${t.p99} ms, max ${t.max} ms` : 'never'}`,
      },
      p99Verdict(keys),
      {
        name: 'exactly one succeeded event per succeeded payment',
        pass: docs.length === ids.length && events.succeededWithoutEvent === 0 && events.succeededTwice === 0 && events.eventWithoutSuccess === 0 && transitionsTwice === 0,
        detail:
          `${docs.length}/${ids.length} payments stored ${JSON.stringify(stored)}; ${events.succeededWithoutEvent} succeeded without the event, ` +
          `${events.succeededTwice} with two or more, ${events.eventWithoutSuccess} others with one; ${transitionsTwice} with a transition recorded twice` +
          `${samples.length ? `; e.g. ${samples.map((x) => `${x.id} (${x.problem}; newest entry ${x.newest ? `${x.newest.type} ${x.newest.id}${x.newest.json ? ', its JSON kept' : ''}` : 'none'})`).join(', ')}` : ''}`,
      },
    ],
  };
}

export interface AllEventFigures {
  expected: number;
  delivered: number;
  /** Undelivered, by event type. */
  missing: Record<string, number>;
  /** Up to five undelivered events: what to look for in the logs. */
  missingExamples: Array<Pick<EventDoc, '_id' | 'type' | 'object_id' | 'created_ms'>>;
}

/** Every event of `project` recorded since its endpoint (on `*`) was made reached the receiver, correctly signed. */
export async function checkAllEvents(db: Db, receiver: VerifyingReceiver, sinceMs: number, project: string): Promise<{ verdict: Verdict; figures: AllEventFigures }> {
  const events = await db
    .collection<EventDoc>('events')
    .find({ project, created_ms: { $gte: sinceMs } }, { projection: { _id: 1, type: 1, object_id: 1, created_ms: 1 } })
    .toArray();
  const missing: Record<string, number> = {};
  const missingExamples: AllEventFigures['missingExamples'] = [];
  for (const e of events) {
    if (receiver.verified.has(e._id)) continue;
    missing[e.type] = (missing[e.type] ?? 0) + 1;
    if (missingExamples.length < 5) missingExamples.push(e);
  }
  const delivered = events.length - Object.values(missing).reduce((a, b) => a + b, 0);
  const bad = receiver.badSignatures + receiver.unverifiable;
  return {
    figures: { expected: events.length, delivered, missing, missingExamples },
    verdict: {
      name: 'every event delivered, signed (endpoint on *)',
      pass: delivered === events.length && bad === 0,
      detail: `${delivered}/${events.length} events received correctly signed${Object.keys(missing).length ? ` (missing ${JSON.stringify(missing)})` : ''}; ${bad} bad signatures`,
    },
  };
}

/** Payments reaching final (as their clients saw it) per bucket of `bucketMs`, from `startMs`. */
export function finalSeries(keys: KeyRecord[], startMs: number, bucketMs: number, buckets: number): number[] {
  const series = new Array<number>(buckets).fill(0);
  for (const k of keys) {
    const finalMs = k.payment?.finalMs;
    if (finalMs === null || finalMs === undefined) continue;
    const i = Math.floor((finalMs - startMs) / bucketMs);
    if (i >= 0 && i < buckets) series[i] = (series[i] ?? 0) + 1;
  }
  return series;
}

/** The median confirm → final time, in seconds, of the payments confirmed in each second of the run (null: none final). */
export function medianBySecondS(keys: KeyRecord[], startMs: number, seconds: number): Array<number | null> {
  const bySecond = Array.from({ length: seconds }, () => [] as number[]);
  for (const k of keys) {
    const p = k.payment;
    if (!p || p.finalMs === null) continue;
    bySecond[Math.floor((p.startedMs - startMs) / 1000)]?.push(p.finalMs - p.startedMs);
  }
  return bySecond.map((times) => (times.length ? Math.round(times.sort((a, b) => a - b)[Math.floor(times.length / 2)]! / 100) / 10 : null));
}

/** The longest stretch, in seconds, of buckets without a payment reaching final, within `spanS` after `atMs`. */
export function longestGapS(series: number[], bucketMs: number, atMs: number, spanS: number): number {
  let longest = 0;
  let run = 0;
  for (let i = Math.ceil(atMs / bucketMs); i < Math.min(series.length, (atMs + spanS * 1000) / bucketMs); i++) {
    run = series[i] === 0 ? run + 1 : 0;
    longest = Math.max(longest, run);
  }
  return (longest * bucketMs) / 1000;
}

export interface PaymentRecovery extends Recovery {
  /** The longest stretch without a payment reaching final within the recovery limit after the fault. */
  stalledS: number;
}

/** The payment path's recovery after each fault: payments reaching final per second, back to `share` of the pre-fault rate. */
export function checkPaymentRecovery(
  keys: KeyRecord[],
  faults: InjectedFault[],
  options: RecoveryOptions,
): { verdict: Verdict; baselinePerS: number; recoveries: PaymentRecovery[] } {
  const series = finalSeries(keys, options.startMs, RECOVERY_BUCKET_MS, recoveryBuckets(faults, options));
  const { baselinePerS, recoveries } = recoveriesOf(series, faults, options);
  const withGaps = recoveries.map((r) => ({ ...r, stalledS: longestGapS(series, RECOVERY_BUCKET_MS, r.atS * 1000, options.recoveryS) }));
  return { verdict: recoveryVerdict('payments final', baselinePerS, withGaps, options), baselinePerS, recoveries: withGaps };
}
