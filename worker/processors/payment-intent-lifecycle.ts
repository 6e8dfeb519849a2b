/**
 * The payment intent lifecycle's jobs: confirm, cancel and update (asked by a
 * request, answered through worker/processors/mutation.ts), and the operator's
 * answers and the expiry (delayed jobs of the `intents` queue). Each decides with
 * worker/lifecycle/decide.ts and applies with worker/lifecycle/transition.ts.
 */
import { UnrecoverableError, type Job } from 'bullmq';
import { randomBase62 } from '../../common/ids.js';
import type { InputSeal, SecretInput } from '../../common/input-seal.js';
import { SealRefused } from '../../common/seal.js';
import type {
  CancelPaymentIntentData,
  ConfirmPaymentIntentData,
  WriteJobResult,
  ExpirePaymentIntentData,
  OperatorOutcomeData,
  TransitionJobResult,
  UpdatePaymentIntentData,
} from '../../common/jobs.js';
import type { Logger } from '../../common/logger.js';
import { returnUrlFor } from '../../common/return-url.js';
import { decideCancel, decideConfirm, decideExpiry, decideOutcome, decideUpdate, liveRedirectOperator, type DecideContext, type Decision } from '../lifecycle/decide.js';
import { transition, type Mutation, type TransitionDeps, type TransitionResult } from '../lifecycle/transition.js';
import { operatorCallbackUrl, OperatorRequestError, type WithdrawResult } from '../operators/connector.js';
import type { OperatorConnectors } from '../operators/registry.js';
import { accountFor, type LiveOperator } from '../../common/operator-accounts.js';
import { countryOf, flowOf } from '../../common/operator-catalog.js';
import type { OperatorAnswer } from '../../common/lifecycle.js';
import { findByIdInScope } from '../../common/mongo.js';
import { mutationId, notFound, runMutation, type Answer, type MutationDeps } from './mutation.js';
import type { PaymentIntentDoc } from '../../common/documents.js';
import type { SimulatorConfig } from '../../common/config.js';
import { endedAsLatePayer, recordSimulatorPayment } from '../reconcile/simulator.js';

export interface LifecycleDeps extends TransitionDeps, MutationDeps {
  simulator: SimulatorConfig;
  /** Declined or failed attempts an intent may have; then confirms are refused (`payment_attempt_limit`). */
  confirmFailureLimit: number;
  connectors: OperatorConnectors;
  /** Live mode: how long the payer may be asked, per operator (DESIGN section 14). */
  approvalWindowMs?: Readonly<Record<LiveOperator, number>>;
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
    liveOperators: deps.connectors.operators(),
    liveAccount: (operator, phone) => {
      const account = accountFor(deps.connectors.accounts, operator, countryOf(phone)?.code ?? null, phone);
      return account ? { id: account.id, sandbox: account.sandbox } : null;
    },
    liveApprovalWindowMs: (operator) => deps.approvalWindowMs?.[operator as LiveOperator] ?? deps.simulator.approvalWindowMs,
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
): Promise<WriteJobResult> {
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
export async function confirmPaymentIntent(deps: LifecycleDeps, job: Job<ConfirmPaymentIntentData>): Promise<WriteJobResult> {
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
  try {
    return await deps.inputSeal.open(data.id, data.sealed);
  } catch (err) {
    // MongoDB away while the keys were read: worth a retry. A text that does not open never will.
    if (!(err instanceof SealRefused)) throw err;
    throw new UnrecoverableError(`confirm ${data.id}: its sealed phone number does not open with this service's keys (${err.message})`);
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
  const account = operator === null ? null : accountFor(deps.connectors.accounts, operator, countryOf(phone)?.code ?? null, phone);
  const connector = account ? deps.connectors.byId(account.id) : undefined;
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

/**
 * A cancel of a live attempt that Wave holds first withdraws it (expires the session,
 * DESIGN section 14), so its link can no longer be paid; a session Wave says was paid
 * is applied instead (the intent succeeds), and the cancel is then refused as for any
 * succeeded intent.
 */
export async function cancelPaymentIntent(deps: LifecycleDeps, job: Job<CancelPaymentIntentData>): Promise<WriteJobResult> {
  const withdrawn = await withdrawLive(deps, job, job.data.target, job.data);
  return request(deps, job, (doc, ctx) => decideCancel(doc, job.data.input, ctx.now, withdrawn));
}

/**
 * Live mode: withdraws the attempt in flight of `target` at its operator when the
 * operator allows it (Wave), before a cancel or an expiry ends it. True when it was
 * withdrawn (or there was nothing to withdraw); a paid one is applied as the
 * operator's answer, and false is returned.
 */
async function withdrawLive(deps: LifecycleDeps, job: Job, target: string, scope: { project?: string; livemode?: boolean }): Promise<boolean> {
  if (!scope.livemode) return false;
  const doc = await findByIdInScope(deps.collections.paymentIntents, target, scope as { project: string; livemode: boolean }, { projection: { history: 0, created_event: 0 } });
  const payment = doc?.payment;
  if (!doc || doc.status !== 'requires_action' || !payment?.requested || flowOf(payment.operator) !== 'redirect') return false;
  const connector = deps.connectors.get(payment.operator, payment.account);
  if (!connector) return false;
  const attempt = doc.attempt ?? 0;
  const withdrawn: WithdrawResult = await connector.withdraw(`${doc._id}:${attempt}`, payment.operator_reference ?? undefined);
  if (withdrawn.kind === 'withdrawn') return true;
  if (withdrawn.kind === 'paid') await applyAnswer(deps, job, doc._id, doc, attempt, withdrawn.answer);
  return false;
}

/** Applies an operator's answer about `attempt` (its transition named after the job that read it). */
async function applyAnswer(deps: LifecycleDeps, job: Job, target: string, scope: { project: string; livemode: boolean }, attempt: number, answer: OperatorAnswer): Promise<void> {
  await transition(
    deps,
    { target, id: `job:${String(job.id)}:answer`, project: scope.project, livemode: scope.livemode, requestId: '', baseUrl: '' },
    (current) => decideOutcome(current, { paymentIntent: target, project: scope.project, livemode: scope.livemode, attempt, step: 'settle', result: answer }, contextOf(deps, '')),
  );
}

export function updatePaymentIntent(deps: LifecycleDeps, job: Job<UpdatePaymentIntentData>): Promise<WriteJobResult> {
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

export async function applyOperatorOutcome(deps: LifecycleDeps, job: Job<OperatorOutcomeData>): Promise<TransitionJobResult> {
  const result = await internal(deps, job, (doc, ctx) => decideOutcome(doc, job.data, ctx));
  // Test mode's late payer (030): the simulated operator takes the money once the attempt ended (worker/reconcile/simulator.ts).
  if (!job.data.livemode && result.applied && result.status === 'new') {
    const doc = await deps.collections.paymentIntents.findOne({ _id: job.data.paymentIntent }, { projection: { history: 0, created_event: 0 } });
    if (doc && endedAsLatePayer(doc, job.data.attempt)) await recordSimulatorPayment(deps.collections, doc, deps.now());
  }
  return result;
}

/**
 * Live mode (DESIGN section 14): an intent whose attempt the operator may still
 * approve is not expired blind. A Wave session is withdrawn first (a paid one
 * succeeds the intent); an MTN or M-Pesa attempt is asked once more, and its final
 * answer applied: a success succeeds the intent, a decline hands it to this expiry
 * again; still pending, the attempt's checks go on.
 */
export async function expirePaymentIntent(deps: LifecycleDeps, job: Job<ExpirePaymentIntentData>): Promise<TransitionJobResult> {
  const data = job.data;
  let withdrawn = false;
  if (data.livemode) {
    withdrawn = await withdrawLive(deps, job, data.paymentIntent, data);
    if (!withdrawn) await askBeforeExpiry(deps, job);
  }
  return internal(deps, job, (doc, ctx) => decideExpiry(doc, data.expiresAt, ctx.now, withdrawn));
}

async function askBeforeExpiry(deps: LifecycleDeps, job: Job<ExpirePaymentIntentData>): Promise<void> {
  const data = job.data;
  const doc = await findByIdInScope(deps.collections.paymentIntents, data.paymentIntent, data, { projection: { history: 0, created_event: 0 } });
  const payment = doc?.payment;
  if (!doc || doc.status !== 'requires_action' || !payment?.requested || doc.expires_at > Math.floor(deps.now() / 1000) + 1) return;
  const connector = deps.connectors.get(payment.operator, payment.account);
  if (!connector) return;
  const attempt = doc.attempt ?? 0;
  const found = await connector.outcome(`${doc._id}:${attempt}`, payment.operator_reference ?? undefined).catch((err: unknown) => {
    deps.logger.warn({ payment_intent: doc._id, operator: payment.operator, err: (err as Error).message }, 'operator could not be asked before the expiry; its checks go on');
    return null;
  });
  if (found && (found.kind === 'succeeded' || found.kind === 'declined')) await applyAnswer(deps, job, doc._id, doc, attempt, found);
}
