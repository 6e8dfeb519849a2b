/**
 * The payment intent lifecycle's jobs: confirm, cancel and update (asked by a
 * request, answered through worker/processors/mutation.ts), and the operator's
 * answers and the expiry (delayed jobs of the `intents` queue). Each decides with
 * worker/lifecycle/decide.ts and applies with worker/lifecycle/transition.ts.
 */
import { UnrecoverableError, type Job } from 'bullmq';
import { randomBase62 } from '../../common/ids.js';
import type {
  CancelPaymentIntentData,
  ConfirmPaymentIntentData,
  CreateJobResult,
  ExpirePaymentIntentData,
  OperatorOutcomeData,
  TransitionJobResult,
  UpdatePaymentIntentData,
} from '../../common/jobs.js';
import type { Logger } from '../../common/logger.js';
import { returnUrlFor } from '../../common/return-url.js';
import { decideCancel, decideConfirm, decideExpiry, decideOutcome, decideUpdate, type DecideContext, type Decision } from '../lifecycle/decide.js';
import { transition, type Mutation, type TransitionDeps, type TransitionResult } from '../lifecycle/transition.js';
import { operatorCallbackUrl, type OperatorConnectors } from '../operators/connector.js';
import { mutationId, notFound, runMutation, type Answer, type MutationDeps } from './mutation.js';
import type { PaymentIntentDoc } from '../../common/documents.js';
import type { SimulatorConfig } from '../../common/config.js';

export interface LifecycleDeps extends TransitionDeps, MutationDeps {
  simulator: SimulatorConfig;
  /** Declined or failed attempts an intent may have; then confirms are refused (`payment_attempt_limit`). */
  confirmFailureLimit: number;
  connectors: OperatorConnectors;
  logger: Logger;
}

type RequestData = ConfirmPaymentIntentData | CancelPaymentIntentData | UpdatePaymentIntentData;

function contextOf(deps: LifecycleDeps, baseUrl: string): DecideContext {
  return {
    now: Math.floor(deps.now() / 1000),
    simulator: deps.simulator,
    baseUrl,
    token: () => randomBase62(32),
    liveOperators: new Set(deps.connectors.keys()),
  };
}

function answerOf(result: TransitionResult, data: RequestData): Answer {
  switch (result.kind) {
    case 'missing':
      return notFound(data, 'payment_intent');
    case 'refused':
      return { status: result.status, body: result.body };
    case 'applied':
      // Applied by another request with this key (its job lost midway): a replay.
      return { status: result.record.st, body: result.record.res, replayed: result.again === true && result.record.r !== data.id };
    case 'skipped':
      // Decisions of requests never skip; answer the intent as it is.
      throw new Error(`a request's mutation was skipped: ${result.reason}`);
  }
}

async function request(
  deps: LifecycleDeps,
  job: Job<RequestData>,
  decide: (doc: PaymentIntentDoc, ctx: DecideContext) => Decision,
  afterApplied?: (result: Extract<TransitionResult, { kind: 'applied' }>) => Promise<void>,
): Promise<CreateJobResult> {
  const data = job.data;
  const { id, expiresAt } = mutationId(data);
  const mutation: Mutation = {
    target: data.target,
    id,
    ...(expiresAt ? { expiresAt } : {}),
    requestedBy: data.id,
    project: data.project,
    livemode: data.livemode,
    requestId: data.requestId,
    baseUrl: data.baseUrl,
  };
  return runMutation(deps, String(job.id), data, async () => {
    const ctx = contextOf(deps, data.baseUrl);
    const result = await transition(deps, mutation, (doc) => decide(doc, ctx));
    if (result.kind === 'applied') await afterApplied?.(result);
    return answerOf(result, data);
  });
}

function attemptLimit(limit: number): Decision {
  return {
    kind: 'refuse',
    status: 400,
    detail: {
      code: 'payment_attempt_limit',
      message: `This PaymentIntent has been declined or failed ${limit} times; it cannot be confirmed again. Create a new PaymentIntent.`,
    },
  };
}

/**
 * The confirm's secret input (phone number, one-time code) is read from MongoDB by
 * the request's id, never from the job (common/documents.ts, ConfirmInputDoc), and
 * deleted once the confirm is answered. A retried job that finds it gone has applied
 * its confirm already (its answer is in the intent's history, or recorded for its
 * key): it never needs to decide again.
 */
export async function confirmPaymentIntent(deps: LifecycleDeps, job: Job<ConfirmPaymentIntentData>): Promise<CreateJobResult> {
  const inputs = deps.collections.confirmInputs;
  const secret = await inputs.findOne({ _id: job.data.id });
  const decide = (doc: PaymentIntentDoc, ctx: DecideContext): Decision => {
    // A new attempt of an intent declined too often: refused, before anything is asked of an operator.
    if (doc.status === 'new' && (doc.failures ?? 0) >= deps.confirmFailureLimit) return attemptLimit(deps.confirmFailureLimit);
    if (!secret) throw new UnrecoverableError(`confirm ${job.data.id}: its phone number is gone, and it was never applied`);
    return decideConfirm(doc, { ...job.data.input, phone_number: secret.phone_number, otp: secret.otp }, ctx);
  };
  const answered = await request(deps, job, decide, async (result) => {
    // Live mode: the operator is asked through its connector once the attempt is recorded.
    const payment = result.doc.payment;
    if (!result.doc.livemode || result.doc.status !== 'requires_action' || !payment?.phone_number) return;
    const connector = deps.connectors.get(payment.operator);
    await connector?.requestPayment({
      attemptId: `${result.doc._id}:${result.record.at}`,
      paymentIntent: result.doc._id,
      amount: result.doc.amount,
      currency: result.doc.currency,
      phoneNumber: payment.phone_number,
      // The operator sends the payer back as our test checkout page does: with the intent's id and client secret.
      returnUrl: payment.return_url ? returnUrlFor(payment.return_url, { id: result.doc._id, clientSecret: result.doc.client_secret }) : null,
      callbackUrl: operatorCallbackUrl(job.data.baseUrl, payment.operator, 'callback'),
    });
  });
  if (secret) await inputs.deleteOne({ _id: secret._id });
  return answered;
}

export function cancelPaymentIntent(deps: LifecycleDeps, job: Job<CancelPaymentIntentData>): Promise<CreateJobResult> {
  return request(deps, job, (doc, ctx) => decideCancel(doc, job.data.input, ctx.now));
}

export function updatePaymentIntent(deps: LifecycleDeps, job: Job<UpdatePaymentIntentData>): Promise<CreateJobResult> {
  return request(deps, job, (doc) => decideUpdate(doc, job.data.input));
}

/** A job of the `intents` queue: its own id is the mutation's id, stable across retries. */
async function internal(
  deps: LifecycleDeps,
  job: Job<OperatorOutcomeData | ExpirePaymentIntentData>,
  decide: (doc: PaymentIntentDoc, ctx: DecideContext) => Decision,
): Promise<TransitionJobResult> {
  const data = job.data;
  const mutation: Mutation = {
    target: data.paymentIntent,
    id: `job:${String(job.id)}`,
    project: data.project,
    livemode: data.livemode,
    requestId: '',
    baseUrl: '',
  };
  const result = await transition(deps, mutation, (doc) => decide(doc, contextOf(deps, '')));
  switch (result.kind) {
    case 'applied':
      return { applied: true, status: result.doc.status };
    case 'skipped':
      // Documented: an operator answer after a cancel or an expiry is recorded here as late.
      deps.logger.info({ job: job.name, job_id: job.id, payment_intent: data.paymentIntent, reason: result.reason }, 'payment intent job changed nothing');
      return { applied: false, status: result.doc.status, reason: result.reason };
    case 'missing':
      return { applied: false, status: null, reason: 'no such payment intent' };
    case 'refused':
      return { applied: false, status: null, reason: 'refused' };
  }
}

export function applyOperatorOutcome(deps: LifecycleDeps, job: Job<OperatorOutcomeData>): Promise<TransitionJobResult> {
  return internal(deps, job, (doc, ctx) => decideOutcome(doc, job.data, ctx));
}

export function expirePaymentIntent(deps: LifecycleDeps, job: Job<ExpirePaymentIntentData>): Promise<TransitionJobResult> {
  return internal(deps, job, (doc, ctx) => decideExpiry(doc, job.data.expiresAt, ctx.now));
}
