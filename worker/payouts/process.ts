/**
 * A payout's steps with its operator (DESIGN.md section 17), one job each on the
 * intents queue (`payout-<po_…>-<step>`), the payout read from MongoDB every time:
 *
 * 1. A batch's item holds its amount first (a payout made alone held it when it was
 *    accepted); short of balance, it fails `balance_insufficient`.
 * 2. `pending` / `enqueued`: while the operator account's breaker is open
 *    (common/operator-breaker.ts) the payout is `enqueued`, and looked at again every
 *    few seconds, so it goes out within seconds of the account's recovery (test mode:
 *    a number ending `008` stays enqueued `SIMULATOR_PAYOUT_ENQUEUED_MS`). Otherwise
 *    its commitment is claimed (./record.ts: sent or canceled, never both), it is
 *    `in_transit`, and the operator is asked.
 * 3. `in_transit`: the operator's answer decides (test mode: the simulator's, after
 *    `SIMULATOR_PROCESSING_DELAY_MS`). Live mode asks once (idempotent on the payout's
 *    id, so a retry after a lost answer asks again under the same reference), then
 *    reads the outcome on the poll schedule (`OPERATOR_POLL_SCHEDULE_MS`); a callback
 *    only brings the next look forward. A timeout, a 5xx or a 429 is no answer: asked
 *    again later, never a failure. A payout the operator never took fails
 *    `operator_unavailable` after `OPERATOR_REFUND_LIMIT_MS`, and only once its
 *    lookup shows no transfer there.
 */
import type { Job } from 'bullmq';
import { OperatorUnavailableError } from '../../common/infra-errors.js';
import type { ProcessPayoutData, Scope } from '../../common/jobs.js';
import { JOBS } from '../../common/jobs.js';
import type { Logger } from '../../common/logger.js';
import { BREAKER_PROBE_MS, breakerState } from '../../common/operator-breaker.js';
import { payoutLookKey, payoutStepJobId, type PayoutDoc } from '../../common/payouts.js';
import type { SimulatorConfig } from '../../common/config.js';
import { operatorCallbackUrl, OperatorRequestError, type DisbursementRequest, type DisbursementResult, type OperatorConnector } from '../operators/connector.js';
import type { OperatorConnectors } from '../operators/registry.js';
import { commit, endPayout, finishEnding, recordCreated, setPayout, withPayout, type Ending, type PayoutRecordDeps } from './record.js';
import { simulatedPayout } from './simulator.js';

export type ProcessPayoutDeps = PayoutRecordDeps & {
  connectors: OperatorConnectors;
  simulator: SimulatorConfig;
  logger: Logger;
  publicBaseUrl?: string | null;
  pollScheduleMs: number[];
  breakerFailures: number;
  /** How long a payout the operator never took may wait before it fails (`OPERATOR_REFUND_LIMIT_MS`). */
  giveUpMs: number;
};


/** Step `step` of the payout, `delayMs` from now; a step already scheduled is not added twice. */
export async function schedulePayoutStep(deps: Pick<PayoutRecordDeps, 'intentsQueue'>, doc: Pick<PayoutDoc, '_id' | 'project' | 'livemode'>, step: number, delayMs: number): Promise<Job> {
  return deps.intentsQueue.add(
    JOBS.processPayout,
    { payout: doc._id, project: doc.project, livemode: doc.livemode, step },
    { jobId: payoutStepJobId(doc._id, step), delay: Math.max(0, Math.round(delayMs)), attempts: 1000, backoff: { type: 'capped' }, removeOnComplete: true, removeOnFail: 1000 },
  );
}

function pollDelayMs(deps: ProcessPayoutDeps, polls: number): number {
  const schedule = deps.pollScheduleMs.length > 0 ? deps.pollScheduleMs : [2_000];
  return schedule[Math.min(polls, schedule.length - 1)]!;
}

/** Live mode: the account's breaker is open (its operator unavailable). */
async function accountUnavailable(deps: ProcessPayoutDeps, doc: PayoutDoc): Promise<boolean> {
  if (!doc.livemode || doc.account === null) return false;
  const state = await breakerState(deps.redis, deps.prefix, doc.account, deps.breakerFailures).catch(() => null);
  return state?.open ?? false;
}

function connectorOf(deps: ProcessPayoutDeps, doc: PayoutDoc): Pick<OperatorConnector, 'payout' | 'payoutOutcome'> {
  const connector = deps.connectors.get(doc.operator, doc.account);
  // A connector removed from the configuration since the payout was accepted: retried.
  if (!connector) throw new Error(`payout ${doc._id}: no live connector for ${doc.operator}`);
  return connector;
}

function disbursement(deps: ProcessPayoutDeps, doc: PayoutDoc): DisbursementRequest {
  if (doc.phone_number === null) throw new Error(`payout ${doc._id}: no destination number`);
  return {
    payoutId: doc._id,
    amount: doc.amount,
    currency: doc.currency,
    phoneNumber: doc.phone_number,
    // Daraja's B2C answers at its ResultURL; MTN calls back where its payments do; Wave sends its webhook.
    callbackUrl: operatorCallbackUrl(deps.publicBaseUrl ?? '', doc.operator, doc.operator === 'mpesa' ? 'result' : 'callback'),
  };
}

/** One step of the payout; returns its status after it. */
export async function processPayout(deps: ProcessPayoutDeps, data: ProcessPayoutData): Promise<{ status: string }> {
  const scope: Scope = { project: data.project, livemode: data.livemode };
  let doc = await deps.collections.payouts.findOne({ _id: data.payout });
  if (!doc || doc.project !== scope.project || doc.livemode !== scope.livemode) return { status: 'missing' };
  const ending = (doc as PayoutDoc & { ending?: Ending }).ending;
  // An end decided by a run that did not finish it.
  if (ending) return ended(await finishEnding(deps, doc, ending));
  if (doc.status === 'paid' || doc.status === 'failed' || doc.status === 'canceled') return { status: doc.status };
  const next = Math.max(data.step, doc.steps) + 1;

  if (!doc.held) {
    // A batch's item: its created event is recorded here, then its hold, kept with the step's next write.
    await recordCreated(deps, doc);
    const held = await deps.balance.hold(doc);
    if (held === 'insufficient') return ended(await endPayout(deps, doc._id, scope, { status: 'failed', code: 'balance_insufficient' }));
    doc = { ...doc, held: true };
  }

  if (doc.status === 'pending' || doc.status === 'enqueued') {
    const waitMs = await enqueuedFor(deps, doc);
    if (waitMs > 0) {
      const updated = await withPayout(deps, doc._id, scope, async (now) => {
        if (now.status !== 'pending' && now.status !== 'enqueued') return now;
        const set: Record<string, unknown> = { status: 'enqueued', steps: next, held: true };
        if (!doc!.livemode && now.enqueued_until === undefined) set.enqueued_until = deps.now() + waitMs;
        await setPayout(deps, now, set);
        return { ...now, ...set } as PayoutDoc;
      });
      if (updated?.status === 'enqueued') await schedulePayoutStep(deps, doc, next, waitMs);
      return { status: updated?.status ?? 'missing' };
    }
    // Sent, or canceled: the first to claim the payout's commitment. A cancel that won
    // may have released before this step's hold was taken: released again (once, by key).
    if (!(await commit(deps, doc._id, 'send'))) {
      await deps.balance.release(doc);
      return { status: 'canceled' };
    }
    const moved = await withPayout(deps, doc._id, scope, async (now) => {
      if (now.status === 'pending' || now.status === 'enqueued') {
        await setPayout(deps, now, { status: 'in_transit', steps: next, held: true });
        return { ...now, status: 'in_transit' as const, steps: next, held: true };
      }
      return now;
    });
    if (!moved || moved.status !== 'in_transit') return { status: moved?.status ?? 'missing' };
    doc = moved;
    if (!doc.livemode) {
      await schedulePayoutStep(deps, doc, next, deps.simulator.processingDelayMs);
      return { status: 'in_transit' };
    }
  }

  if (doc.status !== 'in_transit') return { status: doc.status };
  if (!doc.livemode) {
    const outcome = simulatedPayout(doc.phone_masked);
    return ended(await endPayout(deps, doc._id, scope, outcome.kind === 'paid' ? { status: 'paid', reference: `sim_${doc._id}` } : { status: 'failed', code: outcome.code }));
  }
  return askOperator(deps, doc, scope, next);
}

function ended(doc: PayoutDoc | null): { status: string } {
  return { status: doc?.status ?? 'missing' };
}

/** How long the payout must stay enqueued from now; 0 when it may go. */
async function enqueuedFor(deps: ProcessPayoutDeps, doc: PayoutDoc): Promise<number> {
  if (!doc.livemode) {
    const outcome = simulatedPayout(doc.phone_masked);
    if (outcome.kind !== 'paid' || !outcome.enqueued) return 0;
    const until = doc.enqueued_until ?? deps.now() + deps.simulator.payoutEnqueuedMs;
    return Math.max(0, until - deps.now());
  }
  return (await accountUnavailable(deps, doc)) ? BREAKER_PROBE_MS : 0;
}

/** Live mode, `in_transit`: ask the operator (once), or read its answer; schedule the next look while it is pending. */
async function askOperator(deps: ProcessPayoutDeps, doc: PayoutDoc, scope: Scope, next: number): Promise<{ status: string }> {
  const connector = connectorOf(deps, doc);
  const request = disbursement(deps, doc);
  let result: DisbursementResult;
  let retryAfterMs = 0;
  let answered = true;
  try {
    if (!doc.requested) {
      result = await connector.payout(request);
    } else {
      result = await connector.payoutOutcome(request, doc.operator_reference ?? undefined);
      // Never taken by the operator (the first request was lost on its way): asked again, under the same reference.
      if (result.kind === 'not_found' && deps.now() - doc.created * 1000 < deps.giveUpMs) result = await connector.payout(request);
    }
  } catch (err) {
    if (!(err instanceof OperatorUnavailableError) && !(err instanceof OperatorRequestError)) throw err;
    deps.logger.warn(
      { payout: doc._id, operator: doc.operator, error: err.message, operator_message: err instanceof OperatorUnavailableError ? err.operatorMessage : err.operatorCode },
      'payout: the operator gave no answer; asked again later',
    );
    retryAfterMs = err instanceof OperatorUnavailableError ? (err.retryAfterMs ?? 0) : 0;
    answered = false;
    result = { kind: 'pending' };
  }
  if (result.kind === 'not_found') {
    // The operator holds no transfer of ours, and we stopped asking: it never took it.
    deps.logger.warn({ payout: doc._id, operator: doc.operator }, 'payout: the operator never took it; it fails');
    return ended(await endPayout(deps, doc._id, scope, { status: 'failed', code: 'operator_unavailable' }));
  }
  if (result.kind === 'paid') return ended(await endPayout(deps, doc._id, scope, { status: 'paid', ...(result.operatorReference ? { reference: result.operatorReference } : {}) }));
  if (result.kind === 'failed') {
    deps.logger.info({ payout: doc._id, code: result.code, operator_code: result.operatorCode }, 'payout failed at the operator');
    return ended(await endPayout(deps, doc._id, scope, { status: 'failed', code: result.code }));
  }
  const reference = result.operatorReference;
  await withPayout(deps, doc._id, scope, async (now) => {
    if (now.status !== 'in_transit') return;
    await setPayout(deps, now, { requested: now.requested || answered, steps: next, ...(reference !== undefined ? { operator_reference: reference } : {}) });
  });
  const look = await schedulePayoutStep(deps, doc, next, Math.max(pollDelayMs(deps, next - 1), retryAfterMs));
  // A callback that came while this step ran found no look waiting to bring forward: this one goes now.
  if (retryAfterMs === 0 && (await deps.redis.del(payoutLookKey(deps.prefix, doc._id))) === 1) await look.promote().catch(() => undefined);
  return { status: 'in_transit' };
}
