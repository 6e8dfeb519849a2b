/**
 * Live mode: one look at an attempt at its operator (DESIGN.md sections 12 and 14).
 * Only the operator's answer, read here through the attempt's account's connector,
 * decides a live intent: the job hands it to `decideOutcome` as the outcome's `result`.
 *
 * - **The first check asks for the payment** of a push operator (MTN MoMo, M-Pesa),
 *   after the confirm's transition committed, and never after the attempt's window
 *   (`OPERATOR_APPROVAL_WINDOW_MS`, the approval's `expires_at`): a request the
 *   operator has not accepted by then is never sent, and the attempt fails
 *   `operator_unavailable` (the payer was never asked). Before it asks, it notes
 *   `requesting_since` on the attempt: from then on the payer may be asked, and a
 *   cancel is refused. The connector is idempotent on the attempt id, so a retried
 *   check asks again and the payer is asked once. A redirect operator (Wave) was
 *   asked by the confirm itself.
 * - **Later checks read the answer** (`outcome`). A final one is applied in the same
 *   job; a pending one schedules the next check on `OPERATOR_POLL_SCHEDULE_MS`
 *   (±20%), past the window if need be, until the operator answers finally: our clock
 *   never declines what the operator may still approve. Only when an intent's
 *   attempt is still pending a day past its `expires_at` does the attempt end
 *   (`operator_unavailable`, logged), so no attempt is polled for ever.
 * - **Faults and throttling are retried on the same schedule**: a timeout, a 5xx, a
 *   429 (its `Retry-After` honoured) or a refused token is no answer; the next check
 *   comes no sooner than the schedule's step (the account's breaker counts it,
 *   worker/operators/registry.ts). Nothing is recorded as requested that was not.
 * - **An unexpected refusal is looked up**: a 4xx at the push that is neither a
 *   decline nor throttling ends the attempt `operator_request_rejected` only when the
 *   operator's status lookup shows it created nothing.
 * - **The pending set is in MongoDB.** Each scheduled check is first written on the
 *   intent (`payment.checks`, `payment.next_check_at`); the intents sweeper enqueues
 *   a due one again under the same job id, so a Redis that lost its jobs strands no
 *   attempt (processors/sweep-intents.ts).
 * - **Callbacks only say "look again"** (`n: 'cb'`, api/routes/operator-callbacks.ts):
 *   the same look, without scheduling anything, at most one per attempt per second;
 *   also while the request is in flight (the operator may call back before its
 *   answer to the request reaches us).
 */
import type { Job } from 'bullmq';
import type { PaymentIntentDoc } from '../../common/documents.js';
import type { OperatorCheckData } from '../../common/jobs.js';
import type { OperatorAnswer } from '../../common/lifecycle.js';
import { findByIdInScope } from '../../common/mongo.js';
import { returnUrlFor } from '../../common/return-url.js';
import { decideOutcome } from '../lifecycle/decide.js';
import { scheduleCheck } from '../lifecycle/follow-ups.js';
import { transition } from '../lifecycle/transition.js';
import { createHash } from 'node:crypto';
import { OperatorUnavailableError } from '../../common/infra-errors.js';
import { operatorCallbackUrl, OperatorRequestError, type OperatorConnector, type OperatorResult } from '../operators/connector.js';
import { INTENT_LOCK, intentLockKey, RecordLock } from '../record-lock.js';
import { intentTokenReplacement } from '../../common/intent-tokens.js';
import { conditionalUpdateFilter } from '../../common/store-profile.js';
import { contextOf, type LifecycleDeps } from './payment-intent-lifecycle.js';

/** How long past the intent's `expires_at` an attempt the operator still calls pending is polled. */
export const FINAL_ANSWER_LIMIT_S = 24 * 3600;

export interface CheckDeps extends LifecycleDeps {
  pollScheduleMs: number[];
  random?: () => number;
}

/** The delay before check `n` (≥ 1): the schedule's step, its last one repeated, ±20%. */
export function checkDelayMs(schedule: readonly number[], n: number, random: () => number = Math.random): number {
  const steps = schedule.length > 0 ? schedule : [60_000];
  const base = steps[Math.min(n - 1, steps.length - 1)]!;
  return Math.round(base * (0.8 + 0.4 * random()));
}

/** Unix seconds: when the payer's part of the attempt ends (the approval's window, else the intent's expiry). */
export function attemptWindowEnd(doc: Pick<PaymentIntentDoc, 'next_action' | 'expires_at'>): number {
  const approval = doc.next_action?.type === 'await_phone_approval' ? doc.next_action.await_phone_approval.expires_at : undefined;
  return approval ?? doc.expires_at;
}

const IN_FLIGHT = ['requires_action', 'processing'] as const;

/** Writes fields of the attempt's `payment`, under the intent's lock, while the attempt is in flight. */
async function setOnAttempt(deps: LifecycleDeps, doc: PaymentIntentDoc, fields: Record<string, unknown>): Promise<void> {
  const set = Object.fromEntries(Object.entries(fields).map(([name, value]) => [`payment.${name}`, value]));
  const intents = deps.collections.paymentIntents;
  const lock = new RecordLock(deps.redis, intentLockKey(deps.prefix, doc._id), INTENT_LOCK);
  await lock.acquire();
  let wrote = false;
  try {
    // Under the lock no transition runs: the attempt read again is the one written.
    // The filters name `_id` alone where the store scans for any other field (docs/storage.md).
    const current = await intents.findOne({ _id: doc._id }, { projection: { attempt: 1, status: 1 } });
    if (!current || (current.attempt ?? 0) !== (doc.attempt ?? 0) || !(IN_FLIGHT as readonly string[]).includes(current.status)) return;
    const where = conditionalUpdateFilter(deps, doc._id, { attempt: doc.attempt ?? 0, status: { $in: [...IN_FLIGHT] } });
    // `rev` moves, so a transition that read the intent before this write decides
    // again; the intent's token is replaced before the write and after it, as for
    // every write of an intent (common/intent-tokens.ts).
    const sent = await lock.fenced(() => intents.updateOne(where, { $set: set, $inc: { rev: 1 } }), intentTokenReplacement(deps.prefix, doc._id));
    if (sent === null) throw new Error(`payment intent ${doc._id}: its lock was lost before the attempt could be noted`);
    wrote = true;
  } finally {
    await lock.release(wrote ? intentTokenReplacement(deps.prefix, doc._id) : undefined);
  }
}

async function readIntent(deps: LifecycleDeps, data: OperatorCheckData): Promise<PaymentIntentDoc | null> {
  const projection = { history: 0, created_event: 0 } as const;
  if (data.project !== undefined && data.livemode !== undefined) {
    return findByIdInScope(deps.collections.paymentIntents, data.paymentIntent, { project: data.project, livemode: data.livemode }, { projection });
  }
  return deps.collections.paymentIntents.findOne({ _id: data.paymentIntent }, { projection });
}

/** The connector of the attempt's account (worker/operators/registry.ts). */
function connectorOf(deps: CheckDeps, payment: NonNullable<PaymentIntentDoc['payment']>): OperatorConnector {
  const connector = deps.connectors.get(payment.operator, payment.account);
  // Removed from the configuration since the confirm: retried, until it is back.
  if (!connector) throw new Error(`no live connector for ${payment.operator} (account ${payment.account ?? 'default'})`);
  return connector;
}

type Look = { result: OperatorAnswer } | { retryAfterMs: number | undefined; why: string };

/**
 * Asks (first check) or reads (later checks) the operator: its answer, or why there
 * was none (a fault, throttling), with the operator's `Retry-After`.
 */
async function look(deps: CheckDeps, doc: PaymentIntentDoc, data: OperatorCheckData, connector: OperatorConnector): Promise<Look | 'not_requested'> {
  const payment = doc.payment!;
  const attemptId = `${doc._id}:${data.attempt}`;
  try {
    if (payment.requested) return { result: pendingIfUnknown(await connector.outcome(attemptId, payment.operator_reference ?? undefined)) };
    if (data.n === 'cb') {
      // A callback before the first check ran (forged, or early): the first check asks.
      if (!payment.requesting_since) return 'not_requested';
      // One while our request may be in flight (sent, the operator's answer to it not
      // yet recorded): the operator calls back only on a request it holds, so its
      // record decides; holding none, the callback was not about our request.
      const found = await connector.outcome(attemptId, payment.operator_reference ?? undefined);
      return found.kind === 'not_found' ? 'not_requested' : { result: found };
    }
    // The window has closed before the operator accepted the request: it is never sent.
    if (deps.now() >= attemptWindowEnd(doc) * 1000) {
      // Unless an earlier try of this check may have reached it: then its record decides.
      if (payment.requesting_since) {
        const found = await connector.outcome(attemptId, payment.operator_reference ?? undefined);
        if (found.kind !== 'not_found') return { result: found };
      }
      return { result: { kind: 'declined', code: 'operator_unavailable', operatorCode: 'window_closed_unsent' } };
    }
    if (!payment.phone_number) throw new Error(`attempt ${attemptId} has no phone number to ask the operator with`);
    if (!payment.requesting_since) await setOnAttempt(deps, doc, { requesting_since: deps.now() });
    const requested = await connector.requestPayment({
      attemptId,
      paymentIntent: doc._id,
      amount: doc.amount,
      currency: doc.currency,
      phoneNumber: payment.phone_number,
      returnUrl: payment.return_url ? returnUrlFor(payment.return_url, { id: doc._id, clientSecret: doc.client_secret }) : null,
      callbackUrl: operatorCallbackUrl(deps.publicBaseUrl ?? '', payment.operator, 'callback'),
    });
    await setOnAttempt(deps, doc, { requested: true, operator_reference: requested.operatorReference ?? null });
    payment.requested = true;
    payment.operator_reference = requested.operatorReference ?? null;
    return { result: { kind: 'pending' } };
  } catch (err) {
    // An earlier try of ours may still be in flight (M-Pesa's claim): not the operator's fault; the job retries soon.
    if (err instanceof OperatorUnavailableError && err.reason === 'in_flight') throw err;
    if (err instanceof OperatorUnavailableError) {
      deps.logger.warn({ payment_intent: doc._id, attempt: data.attempt, operator: payment.operator, reason: err.reason, status: err.status, operator_message: err.operatorMessage }, 'operator gave no answer; checked again on the poll schedule');
      return { retryAfterMs: err.retryAfterMs, why: err.reason };
    }
    if (!(err instanceof OperatorRequestError)) throw err;
    deps.logger.warn({ payment_intent: doc._id, attempt: data.attempt, operator: payment.operator, status: err.status, operator_code: err.operatorCode }, 'operator refused a request');
    if (err.declineCode) return { result: { kind: 'declined', code: err.declineCode, ...(err.operatorCode ? { operatorCode: err.operatorCode } : {}) } };
    if (payment.requested) return { retryAfterMs: undefined, why: 'lookup_refused' };
    return refusedRequest(deps, doc, attemptId, connector, err);
  }
}

/** A request refused with an unexpected 4xx: rejected only when the operator certainly holds nothing by our reference. */
async function refusedRequest(deps: CheckDeps, doc: PaymentIntentDoc, attemptId: string, connector: OperatorConnector, err: OperatorRequestError): Promise<Look> {
  const rejected: Look = { result: { kind: 'declined', code: 'operator_request_rejected', operatorCode: err.operatorCode ?? String(err.status) } };
  if (!err.sent) return rejected;
  try {
    const found = await connector.outcome(attemptId, doc.payment?.operator_reference ?? undefined);
    if (found.kind === 'not_found') return rejected;
    await setOnAttempt(deps, doc, { requested: true });
    return { result: found };
  } catch (lookupErr) {
    if (!(lookupErr instanceof OperatorUnavailableError) && !(lookupErr instanceof OperatorRequestError)) throw lookupErr;
    return { retryAfterMs: lookupErr instanceof OperatorUnavailableError ? lookupErr.retryAfterMs : undefined, why: 'lookup_failed' };
  }
}

/** An operator with no record of a request we made is still pending (its request may not have landed yet). */
function pendingIfUnknown(result: OperatorResult): OperatorAnswer {
  return result.kind === 'not_found' ? { kind: 'pending' } : result;
}

export async function checkAttempt(deps: CheckDeps, job: Job<OperatorCheckData>): Promise<{ status: string | null; answer?: string }> {
  const data = job.data;
  const doc = await readIntent(deps, data);
  // Unknown, test mode, another attempt, or over: nothing to look at.
  if (!doc || !doc.livemode || !doc.payment) return { status: null };
  if ((doc.attempt ?? 0) !== data.attempt || !(IN_FLIGHT as readonly string[]).includes(doc.status)) return { status: doc.status, answer: 'over' };
  if (typeof data.n === 'number' && data.n < (doc.payment.checks ?? 0)) return { status: doc.status, answer: 'superseded' };
  const payment = doc.payment;
  const looked = await look(deps, doc, data, connectorOf(deps, payment));
  if (looked === 'not_requested') return { status: doc.status, answer: 'not_requested' };
  const nowMs = deps.now();
  let result: OperatorAnswer | null = 'result' in looked ? looked.result : null;
  if (result === null || result.kind === 'pending') {
    if (result?.kind === 'pending' && result.failedTry) await apply(deps, job, doc, data, result);
    if (data.n === 'cb') return { status: doc.status, answer: result ? 'pending' : 'unavailable' };
    if (nowMs < (doc.expires_at + FINAL_ANSWER_LIMIT_S) * 1000) {
      const next = data.n + 1;
      const retryAfter = result === null && 'retryAfterMs' in looked ? (looked.retryAfterMs ?? 0) : 0;
      const delay = Math.max(checkDelayMs(deps.pollScheduleMs, next, deps.random), retryAfter);
      await setOnAttempt(deps, doc, { checks: next, next_check_at: nowMs + delay });
      await scheduleCheck(deps.intentsQueue, { paymentIntent: doc._id, attempt: data.attempt, project: doc.project, livemode: true }, next, delay);
      return { status: doc.status, answer: result ? 'pending' : 'unavailable' };
    }
    // A day past its expiry and still no final answer: the attempt ends (reconciliation finds any late money).
    deps.logger.warn({ payment_intent: doc._id, attempt: data.attempt, operator: payment.operator }, 'operator never answered finally; the attempt ends');
    result = { kind: 'declined', code: 'operator_unavailable', operatorCode: 'no_final_answer' };
  }
  const applied = await apply(deps, job, doc, data, result);
  if (result.kind === 'declined') {
    deps.logger.info({ payment_intent: doc._id, attempt: data.attempt, operator: payment.operator, code: result.code, operator_code: result.operatorCode }, 'live attempt declined');
  }
  return { status: applied.kind === 'applied' || applied.kind === 'skipped' ? applied.doc.status : null, answer: result.kind };
}

/** Applies the operator's answer with `decideOutcome`. */
export function apply(deps: LifecycleDeps, job: Job, doc: PaymentIntentDoc, data: { attempt: number }, answer: OperatorAnswer, suffix = ''): ReturnType<typeof transition> {
  // A failed try keeps the attempt open: its transition's id names the try, so the next one is its own.
  const id = answer.kind === 'pending' && answer.failedTry ? `try:${doc._id}:${data.attempt}:${hash(answer.failedTry.key)}` : `job:${String(job.id)}${suffix}`;
  return transition(
    deps,
    { target: doc._id, id, project: doc.project, livemode: true, requestId: '', baseUrl: '' },
    (current) => decideOutcome(current, { paymentIntent: doc._id, project: doc.project, livemode: true, attempt: data.attempt, step: 'settle', result: answer }, contextOf(deps, '')),
  );
}

const hash = (text: string) => createHash('sha256').update(text).digest('base64url').slice(0, 16);
