/**
 * A refund with its operator: one job per step on the `intents` queue (the
 * operators' clock), `refund-<id>-<poll>`. Step 0 asks the operator for the refund
 * (`refund`); each later step asks how it went (`refundOutcome`), after a delay: the
 * simulator's processing delay in test mode, a backoff from 5 s to 5 min in live mode.
 * Live mode (DESIGN section 14): a fault or throttling at the operator is no answer:
 * the step is scheduled again after the backoff (or the operator's `Retry-After`),
 * never recorded as a failure; an answer that was lost is read back from the
 * operator's record (`refundOutcome`), and a refund the operator never resolves
 * fails after `OPERATOR_REFUND_LIMIT_MS` with `operator_unavailable`.
 * A final answer ends the refund's ledger entry (./ledger.ts), then its document and
 * events follow (./record.ts). Every step reads the refund again, and the intent
 * when it asks for the refund or settles it (under the intent's lock), so a step
 * that runs twice, late, or after the refund ended changes nothing more.
 * The refund's document keeps how many polls were scheduled (`polls`): the sweeper
 * (processors/sweep-refunds.ts) looks up the last one's job to know whether the
 * chain is still alive.
 */
import type { JobsOptions } from 'bullmq';
import type { RefundDoc } from '../../common/documents.js';
import { JOBS, type ProcessRefundData, type TypedQueue } from '../../common/jobs.js';
import { findByIdInScope } from '../../common/mongo.js';
import type { Logger } from '../../common/logger.js';
import type { SimulatorConfig } from '../../common/config.js';
import { OperatorUnavailableError } from '../../common/infra-errors.js';
import type { LatePayment, PaymentIntentDoc } from '../../common/documents.js';
import { operatorCallbackUrl, OperatorRequestError, type OperatorConnector, type RefundRequest, type RefundResult } from '../operators/connector.js';
import type { OperatorConnectors } from '../operators/registry.js';
import { refundSimulator } from '../operators/simulator.js';
import { withRecordLock } from '../record-lock.js';
import { settleRefund, type LedgerDeps } from './ledger.js';
import { finishSettled, refundLockKey, setRefundFields, type RecordDeps } from './record.js';
import { postRefund } from '../balance/postings.js';

const OPTIONS: JobsOptions = {
  attempts: 1000,
  backoff: { type: 'capped' },
  removeOnComplete: { age: 3600, count: 10_000 },
  removeOnFail: { age: 7 * 24 * 3600 },
};

const LIVE_POLL = { baseMs: 5_000, capMs: 5 * 60_000 };

export interface ProcessDeps extends LedgerDeps, RecordDeps {
  intentsQueue: TypedQueue<'intents'>;
  simulator: SimulatorConfig;
  connectors: OperatorConnectors;
  /** Where operators send their callbacks (`PUBLIC_BASE_URL`). */
  publicBaseUrl: string | null;
  /** Live mode: a refund still pending this long after it was made fails (`OPERATOR_REFUND_LIMIT_MS`). */
  refundLimitMs?: number;
  logger: Logger;
}

export function processJobId(refundId: string, poll: number): string {
  return `refund-${refundId}-${poll}`;
}

export async function scheduleRefundStep(queue: TypedQueue<'intents'>, refund: Pick<RefundDoc, '_id' | 'project' | 'livemode' | 'payment_intent'>, poll: number, delayMs: number): Promise<void> {
  await queue.add(
    JOBS.processRefund,
    { refund: refund._id, paymentIntent: refund.payment_intent, project: refund.project, livemode: refund.livemode, poll },
    { ...OPTIONS, jobId: processJobId(refund._id, poll), delay: Math.max(0, delayMs) },
  );
}

/** The delay before poll `poll` (≥ 1). */
export function pollDelayMs(livemode: boolean, poll: number, simulator: Pick<SimulatorConfig, 'processingDelayMs'>): number {
  if (!livemode) return simulator.processingDelayMs;
  return Math.min(LIVE_POLL.baseMs * 2 ** Math.max(0, poll - 1), LIVE_POLL.capMs);
}

function connectorOf(deps: ProcessDeps, refund: RefundDoc, intent: PaymentIntentDoc, late?: LatePayment): Pick<OperatorConnector, 'refund' | 'refundOutcome'> | null {
  if (!refund.livemode) return refundSimulator(deps.simulator, deps.now);
  return deps.connectors.get(refund.operator, late ? late.account : intent.payment?.account) ?? null;
}

/** `late`: a late payment's refund names its own attempt, not the intent's (worker/reconcile/). */
function refundRequest(deps: ProcessDeps, refund: RefundDoc, intent: PaymentIntentDoc, late?: LatePayment): RefundRequest {
  return {
    refundId: refund._id,
    paymentIntent: intent._id,
    attemptId: `${intent._id}:${late ? late.attempt : (intent.attempt ?? 0)}`,
    paymentReference: late ? late.reference : (intent.payment?.operator_transaction ?? null),
    amount: refund.amount,
    currency: refund.currency,
    // The full number is not kept once the payment ends; test mode's simulator reads the masked one's last digits.
    phoneNumber: refund.livemode ? null : ((late ? late.phone_masked : intent.payment?.phone_masked) ?? null),
    // M-Pesa's reversal answers at its ResultURL; MTN calls back where its payments do (polling reads both).
    callbackUrl: operatorCallbackUrl(deps.publicBaseUrl ?? '', refund.operator, refund.operator === 'mpesa' ? 'result' : 'callback'),
    reason: refund.reason,
  };
}

/** The refund's step with its operator: ask, or read how it went; a lost request (`not_found`) is asked again. */
async function askOperator(connector: Pick<OperatorConnector, 'refund' | 'refundOutcome'>, refund: RefundDoc, request: RefundRequest): Promise<RefundResult> {
  if (!refund.requested) return connector.refund(request);
  const found = await connector.refundOutcome(request, refund.operator_reference ?? undefined);
  return found.kind === 'not_found' ? connector.refund(request) : found;
}

export async function processRefund(deps: ProcessDeps, data: ProcessRefundData): Promise<{ status: string }> {
  const scope = { project: data.project, livemode: data.livemode };
  const refund = await findByIdInScope(deps.collections.refunds, data.refund, scope);
  if (!refund) return { status: 'missing' };
  // The document takes its final status last (./record.ts): nothing is left to do.
  if (refund.status !== 'pending') return { status: refund.status };
  // The request names the payment: the intent is read for it, and an entry ended
  // already (by a run that did not get to the document) is finished, not asked for again.
  const intent = await findByIdInScope(deps.collections.paymentIntents, refund.payment_intent, scope, { projection: { created_event: 0, history: 0 } });
  const entry = intent?.refunds?.find((e) => e.id === refund._id);
  if (!intent || !entry) return { status: 'missing' };
  if (entry.status !== 'pending') {
    await finishSettled(deps, intent, entry, undefined, refund);
    return { status: entry.status };
  }
  // Held in the ledger before the operator is asked (../balance/postings.ts): once, whatever the step.
  if (deps.postings) await postRefund(deps.postings, intent, entry);
  const connector = connectorOf(deps, refund, intent, entry.late);
  // A connector removed from the configuration since the refund was accepted: retried.
  if (!connector) throw new Error(`refund ${refund._id}: no live connector for ${refund.operator}`);
  let result: RefundResult;
  let retryAfterMs = 0;
  let faulted = false;
  try {
    result = await askOperator(connector, refund, refundRequest(deps, refund, intent, entry.late));
  } catch (err) {
    if (!(err instanceof OperatorUnavailableError) && !(err instanceof OperatorRequestError)) throw err;
    // No answer, throttled, or a request the operator refused outright (credentials): asked again on the schedule.
    deps.logger.warn({ refund: refund._id, operator: refund.operator, error: err.message, operator_message: err instanceof OperatorUnavailableError ? err.operatorMessage : err.operatorCode }, 'refund: the operator gave no answer; asked again later');
    retryAfterMs = err instanceof OperatorUnavailableError ? (err.retryAfterMs ?? 0) : 0;
    faulted = true;
    result = { kind: 'pending' };
  }
  if (result.kind === 'not_found') result = { kind: 'pending' };
  const limitMs = deps.refundLimitMs ?? 24 * 3600_000;
  if (result.kind === 'pending' && refund.livemode && deps.now() - refund.created * 1000 >= limitMs) {
    deps.logger.warn({ refund: refund._id, operator: refund.operator }, 'refund: the operator never resolved it; it fails');
    result = { kind: 'failed', code: 'operator_unavailable', operatorCode: 'refund_limit' };
  }
  if (result.kind === 'pending') {
    const next = Math.max(data.poll, refund.polls) + 1;
    const reference = result.operatorReference;
    // A step that got no answer asks again (every connector's refund is idempotent on the refund id).
    await withRecordLock(deps.redis, refundLockKey(deps.prefix, refund._id), () =>
      setRefundFields(deps, refund._id, { requested: refund.requested || !faulted, polls: next, ...(reference !== undefined ? { operator_reference: reference } : {}) }),
    );
    await scheduleRefundStep(deps.intentsQueue, refund, next, Math.max(pollDelayMs(refund.livemode, next, deps.simulator), retryAfterMs));
    return { status: 'pending' };
  }
  const outcome = result.kind === 'succeeded' ? { kind: 'succeeded' as const } : { kind: 'failed' as const, code: result.code };
  const settled = await settleRefund(deps, refund.payment_intent, scope, refund._id, outcome);
  if (!settled) return { status: 'missing' };
  if (result.kind === 'failed') {
    deps.logger.info({ refund: refund._id, payment_intent: refund.payment_intent, code: result.code, operator_code: result.operatorCode }, 'refund failed at the operator');
  }
  const reference = result.kind === 'succeeded' ? result.operatorReference : undefined;
  await finishSettled(deps, settled.doc, settled.entry, reference, refund);
  return { status: settled.entry.status };
}
