/**
 * A refund with its operator: one job per step on the `intents` queue (the
 * operators' clock), `refund-<id>-<poll>`. Step 0 asks the operator for the refund
 * (`refund`); each later step asks how it went (`refundOutcome`), after a delay: the
 * simulator's processing delay in test mode, a backoff from 5 s to 5 min in live mode.
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
import { operatorCallbackUrl, type OperatorConnector, type OperatorConnectors, type RefundResult } from '../operators/connector.js';
import { refundSimulator } from '../operators/simulator.js';
import { withRecordLock } from '../record-lock.js';
import { settleRefund, type LedgerDeps } from './ledger.js';
import { finishSettled, refundLockKey, setRefundFields, type RecordDeps } from './record.js';

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

function connectorOf(deps: ProcessDeps, refund: RefundDoc): Pick<OperatorConnector, 'refund' | 'refundOutcome'> | null {
  if (!refund.livemode) return refundSimulator(deps.simulator, deps.now);
  return deps.connectors.get(refund.operator) ?? null;
}

export async function processRefund(deps: ProcessDeps, data: ProcessRefundData): Promise<{ status: string }> {
  const scope = { project: data.project, livemode: data.livemode };
  const refund = await findByIdInScope(deps.collections.refunds, data.refund, scope);
  if (!refund) return { status: 'missing' };
  // The document takes its final status last (./record.ts): nothing is left to do.
  if (refund.status !== 'pending') return { status: refund.status };
  const connector = connectorOf(deps, refund);
  // A connector removed from the configuration since the refund was accepted: retried.
  if (!connector) throw new Error(`refund ${refund._id}: no live connector for ${refund.operator}`);
  let result: RefundResult;
  if (!refund.requested) {
    // The request names the payment: the intent is read for it, and an entry ended
    // already (by a run that did not get to the document) is finished, not asked for again.
    const intent = await findByIdInScope(deps.collections.paymentIntents, refund.payment_intent, scope, { projection: { created_event: 0, history: 0 } });
    const entry = intent?.refunds?.find((e) => e.id === refund._id);
    if (!intent || !entry) return { status: 'missing' };
    if (entry.status !== 'pending') {
      await finishSettled(deps, intent, entry, undefined, refund);
      return { status: entry.status };
    }
    result = await connector.refund({
      refundId: refund._id,
      paymentIntent: intent._id,
      attemptId: `${intent._id}:${intent.attempt ?? 0}`,
      paymentReference: intent.payment?.operator_transaction ?? null,
      amount: refund.amount,
      currency: refund.currency,
      // The full number is not kept once the payment ends; test mode's simulator reads the masked one's last digits.
      phoneNumber: refund.livemode ? null : (intent.payment?.phone_masked ?? null),
      // M-Pesa's reversal answers at its ResultURL; MTN calls back where its payments do (polling reads both).
      callbackUrl: operatorCallbackUrl(deps.publicBaseUrl ?? '', refund.operator, refund.operator === 'mpesa' ? 'result' : 'callback'),
      reason: refund.reason,
    });
  } else {
    // Asked already: only its outcome. The intent is read once, by the settlement,
    // which changes nothing when the entry has ended already (it is finished then).
    result = await connector.refundOutcome(refund._id, refund.operator_reference ?? undefined);
  }
  if (result.kind === 'pending') {
    const next = Math.max(data.poll, refund.polls) + 1;
    await withRecordLock(deps.redis, refundLockKey(deps.prefix, refund._id), () =>
      setRefundFields(deps, refund._id, { requested: true, polls: next, ...(result.operatorReference !== undefined ? { operator_reference: result.operatorReference } : {}) }),
    );
    await scheduleRefundStep(deps.intentsQueue, refund, next, pollDelayMs(refund.livemode, next, deps.simulator));
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
