/**
 * The payment intent lifecycle's jobs: confirm, cancel and update (asked by a
 * request, answered through worker/processors/mutation.ts), and the operator's
 * answers and the expiry (delayed jobs of the `intents` queue). Each decides with
 * worker/lifecycle/decide.ts and applies with worker/lifecycle/transition.ts.
 */
import { UnrecoverableError, type Job } from 'bullmq';
import { randomBase62 } from '../../common/ids.js';
import type { InputSeal, SecretInput } from '../../common/input-seal.js';
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
import { decideCancel, decideConfirm, decideExpiry, decideOutcome, decideUpdate, liveRedirectOperator, type DecideContext, type Decision } from '../lifecycle/decide.js';
import { transition, type Mutation, type TransitionDeps, type TransitionResult } from '../lifecycle/transition.js';
import { operatorCallbackUrl, OperatorRequestError, type OperatorConnectors } from '../operators/connector.js';
import { findByIdInScope } from '../../common/mongo.js';
import { mutationId, notFound, runMutation, type Answer, type MutationDeps } from './mutation.js';
import type { PaymentIntentDoc } from '../../common/documents.js';
import type { SimulatorConfig } from '../../common/config.js';

export interface LifecycleDeps extends TransitionDeps, MutationDeps {
  simulator: SimulatorConfig;
  /** Declined or failed attempts an intent may have; then confirms are refused (`payment_attempt_limit`). */
  confirmFailureLimit: number;
  connectors: OperatorConnectors;
  logger: Logger;
  /** `PUBLIC_BASE_URL`: where live operators send their callbacks and payers back. */
  publicBaseUrl?: string | null;
  /** Opens a confirm's sealed phone number and code. */
  inputSeal: InputSeal;
}

type RequestData = ConfirmPaymentIntentData | CancelPaymentIntentData | UpdatePaymentIntentData;

export function contextOf(deps: LifecycleDeps, baseUrl: string, liveRedirect?: DecideContext['liveRedirect']): DecideContext {
  return {
    now: Math.floor(deps.now() / 1000),
    simulator: deps.simulator,
    baseUrl,
    token: () => randomBase62(32),
    liveOperators: new Set(deps.connectors.keys()),
    ...(liveRedirect ? { liveRedirect } : {}),
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
  liveRedirect?: DecideContext['liveRedirect'],
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
    const ctx = contextOf(deps, data.baseUrl, liveRedirect);
    const result = await transition(deps, mutation, (doc) => decide(doc, ctx));
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
 * The confirm's secret input (phone number, one-time code) is opened from the job's
 * `sealed` (common/input-seal.ts), never logged, and kept only for the attempt. One
 * that does not open (sealed under another service's key) fails the job for good.
 */
export async function confirmPaymentIntent(deps: LifecycleDeps, job: Job<ConfirmPaymentIntentData>): Promise<CreateJobResult> {
  const secret = await openSealed(deps, job.data);
  const decide = (doc: PaymentIntentDoc, ctx: DecideContext): Decision => {
    // A new attempt of an intent declined too often: refused, before anything is asked of an operator.
    if (doc.status === 'new' && (doc.failures ?? 0) >= deps.confirmFailureLimit) return attemptLimit(deps.confirmFailureLimit);
    return decideConfirm(doc, { ...job.data.input, ...secret }, ctx);
  };
  // Live mode's push operators are asked by the attempt's first check, once the
  // attempt is recorded (processors/operator-check.ts); a redirect operator's checkout
  // is asked for here, since its link is the confirm's answer.
  const liveRedirect = await askLiveRedirect(deps, job.data, secret.phone_number);
  return request(deps, job, decide, liveRedirect);
}

async function openSealed(deps: LifecycleDeps, data: ConfirmPaymentIntentData): Promise<SecretInput> {
  await deps.inputSeal.ready();
  try {
    return await deps.inputSeal.open(data.id, data.sealed);
  } catch {
    throw new UnrecoverableError(`confirm ${data.id}: its sealed phone number does not open with this service's key`);
  }
}

/**
 * Live mode, redirect flow (Wave): the operator's checkout for the attempt this
 * confirm would start, asked for before the decision. The session is idempotent on
 * the attempt id, so a retried job gets the same one; one left unused (the
 * transition was refused after all) expires at the operator with nothing paid.
 * Null when the confirm would not start a live redirect attempt.
 */
async function askLiveRedirect(deps: LifecycleDeps, data: ConfirmPaymentIntentData, phone: string): Promise<DecideContext['liveRedirect']> {
  if (!data.livemode) return null;
  const doc = await findByIdInScope(deps.collections.paymentIntents, data.target, data, { projection: { history: 0, created_event: 0 } });
  if (!doc || doc.status !== 'new' || (doc.failures ?? 0) >= deps.confirmFailureLimit) return null;
  const operator = liveRedirectOperator(doc, { ...data.input, phone_number: phone, otp: null });
  const connector = operator === null ? undefined : deps.connectors.get(operator);
  if (operator === null || !connector) return null;
  const attempt = (doc.attempt ?? 0) + 1;
  const returnUrl = data.input.return_url ? returnUrlFor(data.input.return_url, { id: doc._id, clientSecret: doc.client_secret }) : null;
  try {
    const asked = await connector.requestPayment({
      attemptId: `${doc._id}:${attempt}`,
      paymentIntent: doc._id,
      amount: doc.amount,
      currency: doc.currency,
      phoneNumber: phone,
      returnUrl,
      callbackUrl: operatorCallbackUrl(deps.publicBaseUrl ?? '', operator, 'return'),
    });
    if (!asked.redirectUrl) throw new Error(`${operator} gave no checkout link for attempt ${attempt} of ${doc._id}`);
    return { attempt, url: asked.redirectUrl, ...(asked.operatorReference ? { operatorReference: asked.operatorReference } : {}) };
  } catch (err) {
    if (!(err instanceof OperatorRequestError)) throw err;
    deps.logger.warn({ payment_intent: doc._id, attempt, operator, status: err.status, operator_code: err.operatorCode }, 'operator refused a checkout');
    return { attempt, refused: err.declineCode ?? 'generic_decline' };
  }
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
    ...('recorded' in data && data.recorded ? { recorded: data.recorded } : {}),
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
