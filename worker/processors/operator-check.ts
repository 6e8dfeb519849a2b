/**
 * Live mode: one look at an attempt at its operator (DESIGN.md section 12; issue 28).
 * Only the operator's answer, read here through the attempt's connector, decides a
 * live intent (security review M3): the job hands it to `decideOutcome` as the
 * outcome's `result`.
 *
 * - **The first check asks for the payment** of a push operator (MTN MoMo, M-Pesa):
 *   after the confirm's transition committed, so a concurrent cancel cannot be
 *   overtaken, and never in the api's request. The connector is idempotent on the
 *   attempt id (MTN: the X-Reference-Id derived from it, 409 counting as success;
 *   M-Pesa: its claim in MongoDB), so a retried job asks again and the payer is
 *   asked once. A redirect operator (Wave) was asked by the confirm itself.
 * - **Later checks read the answer** (`outcome`). A final one is applied in the same
 *   job; a pending one schedules the next check, with backoff
 *   (`OPERATOR_POLL_SCHEDULE_MS`, ±20%), until the attempt's window has closed (the
 *   approval's `expires_at`, or the intent's for a redirect) plus a grace; the check
 *   after that declines the attempt `approval_timeout` if the operator still says
 *   pending.
 * - **The pending set is in MongoDB.** Each scheduled check is first written on the
 *   intent (`payment.checks`, `payment.next_check_at`); the intents sweeper enqueues
 *   a due one again under the same job id, so a Redis that lost its jobs strands no
 *   attempt (processors/sweep-intents.ts).
 * - **Callbacks only say "look again"** (`n: 'cb'`, api/routes/operator-callbacks.ts):
 *   the same look, without scheduling anything. An unknown, finished or other-mode
 *   intent changes nothing.
 * - An operator's 5xx, a timeout or a refused connection (`OperatorUnavailableError`)
 *   is thrown: the job retries with backoff, never a decline.
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
import { operatorCallbackUrl, OperatorRequestError } from '../operators/connector.js';
import { INTENT_LOCK, intentLockKey, RecordLock } from '../record-lock.js';
import { intentTokenReplacement } from '../../common/intent-tokens.js';
import { contextOf, type LifecycleDeps } from './payment-intent-lifecycle.js';

/** After the attempt's window: how long its checks go on (operators answer late). */
export const CHECK_GRACE_S = 120;

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
    const where = deps.atomicConditionalUpdates ? { _id: doc._id, attempt: doc.attempt ?? 0, status: { $in: [...IN_FLIGHT] } } : { _id: doc._id };
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

export async function checkAttempt(deps: CheckDeps, job: Job<OperatorCheckData>): Promise<{ status: string | null; answer?: string }> {
  const data = job.data;
  const doc = await readIntent(deps, data);
  // Unknown, test mode, another attempt, or over: nothing to look at.
  if (!doc || !doc.livemode || !doc.payment) return { status: null };
  if ((doc.attempt ?? 0) !== data.attempt || !(IN_FLIGHT as readonly string[]).includes(doc.status)) return { status: doc.status, answer: 'over' };
  if (typeof data.n === 'number' && data.n < (doc.payment.checks ?? 0)) return { status: doc.status, answer: 'superseded' };
  const payment = doc.payment;
  const connector = deps.connectors.get(payment.operator);
  // Removed from the configuration since the confirm: retried, until it is back.
  if (!connector) throw new Error(`no live connector for ${payment.operator}`);
  const attemptId = `${doc._id}:${data.attempt}`;
  let result: OperatorAnswer;
  try {
    if (!payment.requested) {
      // A callback before the first check ran (forged, or early): the first check asks.
      if (data.n === 'cb') return { status: doc.status, answer: 'not_requested' };
      if (!payment.phone_number) throw new Error(`attempt ${attemptId} has no phone number to ask the operator with`);
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
      payment.operator_reference = requested.operatorReference ?? null;
      result = { kind: 'pending' };
    } else {
      result = await connector.outcome(attemptId, payment.operator_reference ?? undefined);
    }
  } catch (err) {
    if (!(err instanceof OperatorRequestError)) throw err;
    // The operator refused the request itself: a payer it does not know is its answer;
    // anything else (credentials, a malformed request) leaves the attempt to its window.
    deps.logger.warn({ payment_intent: doc._id, attempt: data.attempt, operator: payment.operator, status: err.status, operator_code: err.operatorCode }, 'operator refused a request');
    if (err.declineCode) {
      result = { kind: 'declined', code: err.declineCode, ...(err.operatorCode ? { operatorCode: err.operatorCode } : {}) };
    } else {
      if (!payment.requested) await setOnAttempt(deps, doc, { requested: true });
      result = { kind: 'pending' };
    }
  }
  const nowMs = deps.now();
  if (result.kind === 'pending') {
    if (data.n === 'cb') return { status: doc.status, answer: 'pending' };
    const closesAt = (attemptWindowEnd(doc) + CHECK_GRACE_S) * 1000;
    if (nowMs < closesAt) {
      const next = data.n + 1;
      // The last check lands just after the window and its grace.
      const delay = Math.min(checkDelayMs(deps.pollScheduleMs, next, deps.random), closesAt - nowMs + 1000);
      await setOnAttempt(deps, doc, { checks: next, next_check_at: nowMs + delay });
      await scheduleCheck(deps.intentsQueue, { paymentIntent: doc._id, attempt: data.attempt, project: doc.project, livemode: true }, next, delay);
      return { status: doc.status, answer: 'pending' };
    }
    // The window and its grace are over, and the operator still has no final answer.
    result = { kind: 'declined', code: 'approval_timeout', operatorCode: 'window_closed' };
  }
  const answer = result;
  const applied = await transition(
    deps,
    { target: doc._id, id: `job:${String(job.id)}`, project: doc.project, livemode: true, requestId: '', baseUrl: '' },
    (current) => decideOutcome(current, { paymentIntent: doc._id, project: doc.project, livemode: true, attempt: data.attempt, step: 'settle', result: answer }, contextOf(deps, '')),
  );
  if (answer.kind === 'declined') {
    deps.logger.info({ payment_intent: doc._id, attempt: data.attempt, operator: payment.operator, code: answer.code, operator_code: answer.operatorCode }, 'live attempt declined');
  }
  return { status: applied.kind === 'applied' || applied.kind === 'skipped' ? applied.doc.status : null, answer: answer.kind };
}
