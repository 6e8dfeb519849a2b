/**
 * The payment intent lifecycle's jobs: confirm, cancel and update (asked by a
 * request, answered through worker/processors/mutation.ts), and the operator's
 * answers and the expiry (delayed jobs of the `intents` queue). Each decides with
 * worker/lifecycle/decide.ts and applies with worker/lifecycle/transition.ts.
 */
import type { Job } from 'bullmq';
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
import { decideCancel, decideConfirm, decideExpiry, decideOutcome, decideUpdate, type DecideContext, type Decision } from '../lifecycle/decide.js';
import { transition, type Mutation, type TransitionDeps, type TransitionResult } from '../lifecycle/transition.js';
import { operatorCallbackUrl, type OperatorConnectors } from '../operators/connector.js';
import { mutationId, notFound, runMutation, type Answer, type MutationDeps } from './mutation.js';
import type { PaymentIntentDoc } from '../../common/documents.js';
import type { SimulatorConfig } from '../../common/config.js';

export interface LifecycleDeps extends TransitionDeps, MutationDeps {
  simulator: SimulatorConfig;
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

export function confirmPaymentIntent(deps: LifecycleDeps, job: Job<ConfirmPaymentIntentData>): Promise<CreateJobResult> {
  return request(deps, job, (doc, ctx) => decideConfirm(doc, job.data.input, ctx), async (result) => {
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
      returnUrl: payment.return_url,
      callbackUrl: operatorCallbackUrl(job.data.baseUrl, payment.operator, 'callback'),
    });
  });
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
