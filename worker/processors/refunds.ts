/**
 * The refunds' requests (DESIGN.md section 11): create and update, answered through
 * ./mutation.ts like every mutation (a keyed request replays its first answer,
 * refusals included). What a create promises:
 *
 * - Exactly one refund per request: its amount is held on the intent once, under the
 *   mutation's id (../refunds/ledger.ts), and a retried job, or a second job of the
 *   same key, finds that hold and answers with its refund.
 * - Never more held than the intent's amount, whatever runs at the same time.
 * - A refusal (the intent's status, the amounts, the operator) changes nothing.
 * - Once held: the refund's document, its `refund.created` event and its first step
 *   with the operator follow, each idempotent, so a crash midway is finished by the
 *   retried job or by the sweeper.
 */
import type { Job } from 'bullmq';
import { errorBody } from '../../common/errors.js';
import type { WriteJobResult, CreateRefundData, UpdateRefundData } from '../../common/jobs.js';
import { mergedMetadataTooLarge, mergeMetadata, METADATA_MAX_KEYS } from '../../common/metadata.js';
import { findByIdInScope } from '../../common/mongo.js';
import { presentRefund } from '../../common/presenters.js';
import { withRecordLock } from '../record-lock.js';
import { holdRefund } from '../refunds/ledger.js';
import { scheduleRefundStep, type ProcessDeps } from '../refunds/process.js';
import { ensureRefundDoc, recordCreated, refundLockKey } from '../refunds/record.js';
import { mutationId, notFound, runMutation, type Answer, type MutationDeps } from './mutation.js';

export type RefundDeps = ProcessDeps & MutationDeps & { refundLimitPerIntent?: number };

export function createRefund(deps: RefundDeps, job: Job<CreateRefundData>): Promise<WriteJobResult> {
  const data = job.data;
  const { id: m, expiresAt } = mutationId(data);
  return runMutation(deps, String(job.id), data, async (): Promise<Answer> => {
    const held = await holdRefund(deps, {
      target: data.target,
      scope: data,
      m,
      ...(expiresAt !== undefined ? { x: expiresAt } : {}),
      refundId: data.id,
      created: data.created,
      amount: data.input.amount,
      reason: data.input.reason,
      liveOperators: deps.connectors.operators(),
      limit: deps.refundLimitPerIntent,
    });
    if (held.kind === 'missing') {
      const detail = { code: 'resource_missing' as const, message: `No such payment_intent: '${data.target}'.`, param: 'payment_intent' };
      return { status: 404, body: errorBody(detail, data.requestId, data.baseUrl) };
    }
    if (held.kind === 'refused') return { status: 400, body: errorBody(held.detail, data.requestId, data.baseUrl) };
    const refund = await ensureRefundDoc(deps, held.doc, held.entry, data.input);
    await recordCreated(deps, refund, held.entry);
    // Step 0 asks the operator; a later step already scheduled makes it a no-op.
    if (refund.polls === 0) await scheduleRefundStep(deps.intentsQueue, refund, 0, 0);
    return { status: 200, body: refund.answer, replayed: held.entry.id !== data.id };
  });
}

/** Description and metadata only, in any status; idempotent by nature (the same fields set again). */
export function updateRefund(deps: RefundDeps, job: Job<UpdateRefundData>): Promise<WriteJobResult> {
  const data = job.data;
  return runMutation(deps, String(job.id), data, () =>
    withRecordLock(deps.redis, refundLockKey(deps.prefix, data.target), async (): Promise<Answer> => {
      const doc = await findByIdInScope(deps.collections.refunds, data.target, data);
      if (!doc) return notFound(data, 'refund');
      const set: { description?: string | null; metadata?: typeof doc.metadata } = {};
      if (data.input.description !== undefined) set.description = data.input.description;
      if (data.input.metadata !== undefined) {
        set.metadata = mergeMetadata(doc.metadata, data.input.metadata);
        if (set.metadata.length > METADATA_MAX_KEYS) {
          return { status: 400, body: errorBody(mergedMetadataTooLarge(set.metadata.length, 'Refund'), data.requestId, data.baseUrl) };
        }
      }
      if (Object.keys(set).length > 0) await deps.collections.refunds.updateOne({ _id: doc._id }, { $set: set });
      return { status: 200, body: JSON.stringify(presentRefund({ ...doc, ...set })) };
    }),
  );
}
