/**
 * Decisions of the payment intent lifecycle (DESIGN.md section 7): given the stored
 * intent and what was asked, which change to make, which event it records, how it is
 * answered, and which delayed jobs follow. Pure: no I/O, no clock but the one given,
 * so every rule is testable alone. worker/lifecycle/transition.ts applies a decision
 * with a conditional update.
 */
import type { ErrorDetail } from '../../common/errors.js';
import type { EventType } from '../../common/events.js';
import type { PaymentIntentDoc } from '../../common/documents.js';
import {
  isFinal,
  maskPhone,
  ORANGE_OTP_USSD,
  OTP_LENGTH,
  paymentError,
  simulatedOutcome,
  TEST_OTP,
  type DeclineCode,
  type FollowUp,
  type NextAction,
  type SimulatedOutcome,
} from '../../common/lifecycle.js';
import { mergedMetadataTooLarge, mergeMetadata, METADATA_MAX_KEYS } from '../../common/metadata.js';
import { formatAmount } from '../../common/money.js';
import { flowOf, predictOperator } from '../../common/operator-catalog.js';
import { catalogRefusal, notConfigured, sandboxRefusal } from '../../common/operator-terms.js';
import type { CancelInput, ConfirmInput, OperatorOutcomeData, PaymentIntentUpdateInput } from '../../common/jobs.js';

export type Decision =
  /** A deterministic refusal: nothing changes; a request gets this answer (and records it). */
  | { kind: 'refuse'; status: number; detail: ErrorDetail }
  /** Nothing to do (an operator answer that arrived too late, an expiry moved away). */
  | { kind: 'skip'; reason: string }
  | {
      kind: 'apply';
      set: Partial<PaymentIntentDoc>;
      event: EventType | null;
      /** `declined`: a confirm the operator refused at once, answered 402. */
      answer: 'object' | 'declined';
      followUps: FollowUp[];
    };

export interface DecideContext {
  /** Unix seconds. */
  now: number;
  simulator: { approvalDelayMs: number; processingDelayMs: number; slowDelayMs: number; approvalWindowMs: number };
  /** Where the api serves the test checkout page. */
  baseUrl: string;
  /** A fresh unguessable token (the test checkout page's). */
  token: () => string;
  /** Live mode: the operators that have an account (worker/operators/registry.ts). */
  liveOperators: ReadonlySet<string>;
  /**
   * Live mode: the account of `operator` that serves the payer's number
   * (common/operator-accounts.ts), null when none does. Absent: any operator of
   * `liveOperators` is served (unit tests).
   */
  liveAccount?: (operator: string, phone: string) => { id: string; sandbox: boolean } | null;
  /** Live mode: how long the payer may be asked, per operator (`OPERATOR_APPROVAL_WINDOW_MS`, DESIGN section 14). */
  liveApprovalWindowMs?: (operator: string) => number;
  /**
   * Live mode, redirect flow: the operator's checkout for the attempt this confirm
   * starts (`attempt` = the intent's + 1), asked for before the decision
   * (worker/processors/payment-intent-lifecycle.ts). Without it a live redirect
   * confirm cannot be decided.
   */
  liveRedirect?: { attempt: number; url: string; operatorReference?: string } | { attempt: number; refused: DeclineCode } | null;
}

/** Live mode: the first check of an attempt asks the operator at once (worker/lifecycle/operator-check.ts). */
const CHECK_NOW: FollowUp = { kind: 'check', delayMs: 0 };

function unexpected(doc: PaymentIntentDoc, action: string): Decision {
  return {
    kind: 'refuse',
    status: 400,
    detail: { code: 'payment_intent_unexpected_state', message: `You cannot ${action} this PaymentIntent because it has a status of ${doc.status}.` },
  };
}

function refuse(detail: ErrorDetail): Decision {
  return { kind: 'refuse', status: 400, detail };
}

/**
 * Fields every end of an attempt sets: the phone number in full is dropped. A
 * checkout token stays, so its page can show how the attempt ended; it acts only
 * while its attempt is `requires_action` (api/routes/checkout.ts).
 */
function endAttempt(doc: PaymentIntentDoc): Partial<PaymentIntentDoc> {
  return { next_action: null, payment: doc.payment ? { ...doc.payment, phone_number: null } : null };
}

function decline(doc: PaymentIntentDoc, code: DeclineCode, answer: 'object' | 'declined', now: number): Decision {
  const operator = doc.payment?.operator ?? 'unknown';
  return {
    kind: 'apply',
    set: { ...endAttempt(doc), status: 'new', last_payment_error: paymentError(operator, code) },
    event: 'payment_intent.payment_failed',
    answer,
    // An attempt that ends after `expires_at` hands the intent to its expiry.
    followUps: doc.expires_at <= now ? [{ kind: 'expire', expiresAt: doc.expires_at }] : [],
  };
}

/** Live mode: the account serving `phone` for `operator`, or null (every operator of `liveOperators` when no router is given). */
function liveAccountOf(operator: string, phone: string, ctx: DecideContext): { id: string; sandbox: boolean } | null {
  if (!ctx.liveOperators.has(operator)) return null;
  return ctx.liveAccount ? ctx.liveAccount(operator, phone) : { id: operator, sandbox: false };
}

/** The operator of a confirm: named, selected, or predicted from the number (common/operator-catalog.ts). */
function resolveOperator(doc: PaymentIntentDoc, input: ConfirmInput): string | ErrorDetail {
  if (input.operator !== null) {
    if (!doc.allowed_operators.includes(input.operator)) {
      return {
        code: 'operator_invalid',
        message: `Invalid operator: "${input.operator}" is not one of this PaymentIntent's allowed_operators (${doc.allowed_operators.join(', ')}).`,
        param: 'operator',
      };
    }
    return input.operator;
  }
  if (doc.selected_operator !== null) return doc.selected_operator;
  if (doc.automatic_operator) {
    const chosen = predictOperator(input.phone_number, doc.allowed_operators);
    if (chosen !== null) return chosen;
    return {
      code: 'operator_invalid',
      message: `None of this PaymentIntent's allowed_operators serves ${maskPhone(input.phone_number)} (by its prefix, or its country when the prefix is unknown); pass operator.`,
      param: 'operator',
    };
  }
  return { code: 'parameter_missing', message: 'Missing required param: operator (the PaymentIntent has no selected_operator and automatic_operator is false).', param: 'operator' };
}

/**
 * Past `expires_at`, an intent in `new` or `requires_action` is expired even before
 * its expiry job has run (a busy queue, a paused worker): no attempt starts or goes on.
 */
function pastExpiry(doc: PaymentIntentDoc, action: string, now: number): Decision | null {
  if (doc.expires_at > now) return null;
  return {
    kind: 'refuse',
    status: 400,
    detail: {
      code: 'payment_intent_unexpected_state',
      message: `You cannot ${action} this PaymentIntent because it has a status of expired: its expires_at (${doc.expires_at}) has passed.`,
    },
  };
}

/**
 * Live mode: the redirect operator that a confirm of `doc` in `new` would start an
 * attempt with, when nothing before the operator refuses it (the operator named or
 * predicted, the catalog's terms). Null otherwise. The confirm job asks that
 * operator for its checkout before deciding (its link is the answer).
 */
export function liveRedirectOperator(doc: PaymentIntentDoc, input: ConfirmInput): string | null {
  if (!doc.livemode || doc.status !== 'new') return null;
  const operator = resolveOperator(doc, input);
  if (typeof operator !== 'string' || flowOf(operator) !== 'redirect') return null;
  return catalogRefusal(doc, operator, input.phone_number) === null ? operator : null;
}

export function decideConfirm(doc: PaymentIntentDoc, input: ConfirmInput, ctx: DecideContext): Decision {
  if (doc.status !== 'new' && doc.status !== 'requires_action') return unexpected(doc, 'confirm');
  const expired = pastExpiry(doc, 'confirm', ctx.now);
  if (expired) return expired;
  if (doc.status === 'requires_action') return decideOtp(doc, input, ctx);
  const operator = resolveOperator(doc, input);
  if (typeof operator !== 'string') return refuse(operator);
  const account = doc.livemode ? liveAccountOf(operator, input.phone_number, ctx) : null;
  const refusal = account?.sandbox ? sandboxRefusal(doc, input.phone_number) : catalogRefusal(doc, operator, input.phone_number);
  if (refusal !== null) return refuse(refusal);
  const flow = flowOf(operator);
  if (input.otp !== null && flow !== 'otp') {
    return refuse({ code: 'parameter_invalid', message: `Invalid otp: ${operator} does not use one-time codes.`, param: 'otp' });
  }
  if (doc.livemode && account === null) return refuse(notConfigured(operator, input.phone_number));
  const attempt = (doc.attempt ?? 0) + 1;
  const payment = {
    operator,
    phone_number: input.phone_number,
    phone_masked: maskPhone(input.phone_number),
    // Kept after the attempt, for search (DESIGN section 18); the full number is not.
    phone_last4: input.phone_number.slice(-4),
    return_url: input.return_url,
    checkout_token: null as string | null,
    ...(account ? { account: account.id } : {}),
  };
  const started: PaymentIntentDoc = { ...doc, attempt, payment, last_payment_error: null };
  // Live mode has no magic numbers: the operator answers.
  const outcome: SimulatedOutcome = doc.livemode ? { kind: 'succeed', slow: false } : simulatedOutcome(input.phone_number);
  if (outcome.kind === 'decline' && outcome.stage === 'confirm') {
    const declined = decline(started, outcome.code, 'declined', ctx.now);
    if (declined.kind === 'apply') declined.set = { attempt, ...declined.set };
    return declined;
  }
  const base = { attempt, payment, last_payment_error: null };
  switch (flow) {
    case 'phone_approval': {
      const nextAction: NextAction = {
        type: 'await_phone_approval',
        await_phone_approval: {
          operator,
          phone_number: payment.phone_masked,
          display_message: `Approve the payment of ${formatAmount(doc.amount, doc.currency)} on your phone.`,
          expires_at: ctx.now + Math.ceil((doc.livemode && ctx.liveApprovalWindowMs ? ctx.liveApprovalWindowMs(operator) : ctx.simulator.approvalWindowMs) / 1000),
        },
      };
      return {
        kind: 'apply',
        set: { ...base, status: 'requires_action', next_action: nextAction },
        event: 'payment_intent.requires_action',
        answer: 'object',
        followUps: doc.livemode ? [CHECK_NOW] : payerFollowUps(outcome, ctx, doc.livemode),
      };
    }
    case 'redirect': {
      if (doc.livemode) return liveRedirect(doc, attempt, base, payment, input.return_url, ctx);
      const token = `${doc._id}.${ctx.token()}`;
      const nextAction: NextAction = {
        type: 'redirect_to_url',
        redirect_to_url: { url: `${ctx.baseUrl}/test/checkout/${token}`, return_url: input.return_url },
      };
      return {
        kind: 'apply',
        set: { ...base, payment: { ...payment, checkout_token: token }, status: 'requires_action', next_action: nextAction },
        event: 'payment_intent.requires_action',
        answer: 'object',
        // The payer's buttons on the checkout page enqueue the outcome.
        followUps: [],
      };
    }
    case 'otp': {
      if (input.otp === null || outcome.kind === 'silent') {
        return {
          kind: 'apply',
          set: { ...base, status: 'requires_action', next_action: otpRequired() },
          event: 'payment_intent.requires_action',
          answer: 'object',
          followUps: [],
        };
      }
      return checkOtp(started, input.otp, base, ctx);
    }
  }
}

/**
 * A live redirect attempt: the payer goes to the operator's own checkout, asked for
 * before this decision (its session is idempotent on the attempt id, so a retried
 * job gets the same one). Its answer is read by the attempt's checks.
 */
function liveRedirect(
  doc: PaymentIntentDoc,
  attempt: number,
  base: Partial<PaymentIntentDoc>,
  payment: NonNullable<PaymentIntentDoc['payment']>,
  returnUrl: string | null,
  ctx: DecideContext,
): Decision {
  const redirect = ctx.liveRedirect;
  // Asked for another attempt (the intent changed in between): the job asks again.
  if (!redirect || redirect.attempt !== attempt) throw new Error(`live redirect for attempt ${attempt} of ${doc._id} was not asked of the operator`);
  if ('refused' in redirect) {
    // The operator refused the checkout itself: its answer, at once (402).
    const declined = decline({ ...doc, attempt, payment: { ...payment } }, redirect.refused, 'declined', ctx.now);
    if (declined.kind === 'apply') declined.set = { ...base, ...declined.set };
    return declined;
  }
  const nextAction: NextAction = { type: 'redirect_to_url', redirect_to_url: { url: redirect.url, return_url: returnUrl } };
  return {
    kind: 'apply',
    set: {
      ...base,
      payment: { ...payment, requested: true, operator_reference: redirect.operatorReference ?? null },
      status: 'requires_action',
      next_action: nextAction,
    },
    event: 'payment_intent.requires_action',
    answer: 'object',
    followUps: [CHECK_NOW],
  };
}

function otpRequired(): NextAction {
  return {
    type: 'otp_required',
    otp_required: {
      display_message: `Dial ${ORANGE_OTP_USSD} on your phone to get a one-time code, then confirm again with it.`,
      ussd_code: ORANGE_OTP_USSD,
      otp_length: OTP_LENGTH,
    },
  };
}

function payerFollowUps(outcome: SimulatedOutcome, ctx: DecideContext, livemode: boolean): FollowUp[] {
  // Live answers come from the operator's connector, never from the simulator.
  if (livemode || outcome.kind === 'silent') return [];
  // A payer who pays late (030): the operator stops answering, so the attempt ends when its window closes.
  const late = outcome.kind === 'decline' && outcome.paysLate === true;
  const delayMs = outcome.kind === 'succeed' && outcome.slow ? ctx.simulator.slowDelayMs : late ? ctx.simulator.approvalWindowMs : ctx.simulator.approvalDelayMs;
  return [{ kind: 'outcome', step: 'payer', delayMs }];
}

/** A confirm in `requires_action`: only to give the one-time code of an Orange Money attempt. */
function decideOtp(doc: PaymentIntentDoc, input: ConfirmInput, ctx: DecideContext): Decision {
  if (input.otp === null || doc.payment === null || doc.payment === undefined || flowOf(doc.payment.operator) !== 'otp') {
    return unexpected(doc, 'confirm');
  }
  // An operator named with the code is checked as on the first confirm: it is the attempt's.
  if (input.operator !== null && input.operator !== doc.payment.operator) {
    const allowed = doc.allowed_operators.includes(input.operator);
    return refuse({
      code: 'operator_invalid',
      message: allowed
        ? `Invalid operator: the attempt in progress is with ${doc.payment.operator}; confirm with its one-time code, or cancel the PaymentIntent first.`
        : `Invalid operator: "${input.operator}" is not one of this PaymentIntent's allowed_operators (${doc.allowed_operators.join(', ')}).`,
      param: 'operator',
    });
  }
  if (!doc.livemode && simulatedOutcome(doc.payment.phone_number ?? '').kind === 'silent') {
    // The operator never answers: the intent waits for its expiry.
    return { kind: 'apply', set: {}, event: null, answer: 'object', followUps: [] };
  }
  return checkOtp(doc, input.otp, {}, ctx);
}

function checkOtp(doc: PaymentIntentDoc, otp: string, base: Partial<PaymentIntentDoc>, ctx: DecideContext): Decision {
  // Live mode has no test code: a one-time code goes to the operator, and no live
  // connector takes one yet (Orange Money has none).
  if (doc.livemode) {
    return refuse({
      code: 'operator_not_configured',
      message: `No live connector is configured for ${doc.payment?.operator ?? 'this operator'}: live one-time codes cannot be checked yet.`,
      param: 'otp',
    });
  }
  if (otp !== TEST_OTP) {
    const declined = decline(doc, 'invalid_otp', 'declined', ctx.now);
    if (declined.kind === 'apply') declined.set = { ...base, ...declined.set };
    return declined;
  }
  return {
    kind: 'apply',
    set: { ...base, status: 'processing', next_action: null },
    event: 'payment_intent.processing',
    answer: 'object',
    // The code is the payer's step: a slow number (`011`) takes its time after it.
    followUps: [{ kind: 'outcome', step: 'settle', delayMs: settleDelayMs(simulatedOutcome(doc.payment?.phone_number ?? ''), ctx) }],
  };
}

/**
 * How long the operator takes to settle after the payer's step. A slow number
 * (`011`, "succeeds after 60 s") waits its delay at the payer's step where the
 * simulator plays that step (phone approval); where the payer acts themselves (a
 * one-time code, the checkout page's Pay button) it waits here instead.
 */
function settleDelayMs(outcome: SimulatedOutcome, ctx: DecideContext, payerStepWaited = false): number {
  const slow = outcome.kind === 'succeed' && outcome.slow && !payerStepWaited;
  return slow ? ctx.simulator.slowDelayMs : ctx.simulator.processingDelayMs;
}

/**
 * Live mode (DESIGN section 14, "Cancel withdraws or refuses"): an MTN or M-Pesa
 * prompt that may have reached the payer's phone cannot be withdrawn, so its attempt
 * is not cancelled: only the operator's answer ends it. A Wave session is withdrawn
 * (expired at Wave) by the cancel job before this decision (`withdrawn`).
 */
export function decideCancel(doc: PaymentIntentDoc, input: CancelInput, now: number, withdrawn = false): Decision {
  if (doc.status !== 'new' && doc.status !== 'requires_action') return unexpected(doc, 'cancel');
  const payment = doc.payment;
  const asked = doc.livemode && doc.status === 'requires_action' && payment && (payment.requested || payment.requesting_since);
  if (asked && !withdrawn) {
    return {
      kind: 'refuse',
      status: 400,
      detail: {
        code: 'payment_intent_unexpected_state',
        message: `You cannot cancel this PaymentIntent because it has a status of requires_action and ${payment.operator} has asked the payer to approve it; such a request cannot be withdrawn. Wait for the operator's answer (payment_intent.succeeded or payment_intent.payment_failed).`,
      },
    };
  }
  return {
    kind: 'apply',
    set: { ...endAttempt(doc), status: 'canceled', canceled_at: now, cancellation_reason: input.cancellation_reason },
    event: 'payment_intent.canceled',
    answer: 'object',
    followUps: [],
  };
}

const ANY_STATUS_FIELDS = new Set(['description', 'metadata']);

export function decideUpdate(doc: PaymentIntentDoc, input: PaymentIntentUpdateInput): Decision {
  if (isFinal(doc.status)) return unexpected(doc, 'update');
  const given = Object.keys(input) as Array<keyof PaymentIntentUpdateInput>;
  const restricted = given.filter((name) => !ANY_STATUS_FIELDS.has(name));
  if (doc.status !== 'new' && restricted.length > 0) {
    return {
      kind: 'refuse',
      status: 400,
      detail: {
        code: 'payment_intent_unexpected_state',
        message: `You cannot update ${restricted.join(', ')} of this PaymentIntent because it has a status of ${doc.status}; only description and metadata can change after a confirm.`,
        param: restricted[0],
      },
    };
  }
  const allowed = input.allowed_operators ?? doc.allowed_operators;
  const selected = input.selected_operator !== undefined ? input.selected_operator : doc.selected_operator;
  if (selected !== null && !allowed.includes(selected)) {
    return refuse({
      code: 'operator_invalid',
      message: `Invalid selected_operator: "${selected}" is not one of the allowed operators (${allowed.join(', ')}).`,
      param: input.selected_operator !== undefined ? 'selected_operator' : 'allowed_operators',
    });
  }
  const automatic = input.automatic_operator ?? (input.selected_operator !== undefined ? selected === null : doc.automatic_operator);
  if (automatic && selected !== null) {
    return refuse({
      code: 'parameter_conflict',
      message: 'automatic_operator cannot be true when a selected_operator is given: choose one or the other.',
      param: 'automatic_operator',
    });
  }
  const set: Partial<PaymentIntentDoc> = {};
  if (input.amount !== undefined) set.amount = input.amount;
  if (input.currency !== undefined) set.currency = input.currency;
  if (input.description !== undefined) set.description = input.description;
  if (input.metadata !== undefined) {
    set.metadata = mergeMetadata(doc.metadata, input.metadata);
    if (set.metadata.length > METADATA_MAX_KEYS) return refuse(mergedMetadataTooLarge(set.metadata.length, 'PaymentIntent'));
  }
  if (input.allowed_operators !== undefined) set.allowed_operators = allowed;
  if (input.selected_operator !== undefined || input.automatic_operator !== undefined) {
    set.selected_operator = selected;
    set.automatic_operator = automatic;
  }
  const followUps: FollowUp[] = [];
  if (input.expires_at !== undefined) {
    set.expires_at = input.expires_at;
    followUps.push({ kind: 'expire', expiresAt: input.expires_at });
  }
  return { kind: 'apply', set, event: null, answer: 'object', followUps };
}

/** An operator's answer (the simulator's in test mode) about attempt `data.attempt`. */
export function decideOutcome(doc: PaymentIntentDoc, data: OperatorOutcomeData, ctx: DecideContext): Decision {
  if ((doc.attempt ?? 0) !== data.attempt) return { kind: 'skip', reason: `arrived too late: attempt ${data.attempt} is over` };
  if (doc.livemode) return decideLiveOutcome(doc, data, ctx);
  const phone = doc.payment?.phone_number ?? '';
  const outcome = simulatedOutcome(phone);
  if (data.step === 'payer') {
    if (doc.status !== 'requires_action') return { kind: 'skip', reason: `arrived too late: the intent is ${doc.status}` };
    // The payer's step ends at expires_at, whether or not the expiry job has run yet.
    if (doc.expires_at <= ctx.now) return { kind: 'skip', reason: `arrived too late: the intent expired at ${doc.expires_at}` };
    if (data.action === 'cancel') {
      return decideCancel(doc, { cancellation_reason: 'abandoned' }, ctx.now);
    }
    if (data.action === 'decline') return decline(doc, 'payer_declined', 'object', ctx.now);
    if (outcome.kind === 'silent') return { kind: 'skip', reason: 'the operator never answers (suffix 010)' };
    if (outcome.kind === 'decline' && outcome.stage !== 'processing') return decline(doc, outcome.code, 'object', ctx.now);
    // Phone approval: the simulator's payer step already waited a slow number's delay.
    const payerStepWaited = doc.payment ? flowOf(doc.payment.operator) === 'phone_approval' : true;
    return {
      kind: 'apply',
      set: { status: 'processing', next_action: null },
      event: 'payment_intent.processing',
      answer: 'object',
      followUps: [{ kind: 'outcome', step: 'settle', delayMs: settleDelayMs(outcome, ctx, payerStepWaited) }],
    };
  }
  if (doc.status !== 'processing') return { kind: 'skip', reason: `arrived too late: the intent is ${doc.status}` };
  if (outcome.kind === 'decline') return decline(doc, outcome.code, 'object', ctx.now);
  return {
    kind: 'apply',
    set: { ...endAttempt(doc), status: 'succeeded' },
    event: 'payment_intent.succeeded',
    answer: 'object',
    followUps: [],
  };
}

/**
 * Live mode (security review M3): the operator's answer, as its connector read it,
 * is the only thing that decides. No magic number, no simulated step: an outcome
 * without a result (a simulator's job, a checkout page's button) changes nothing.
 */
function decideLiveOutcome(doc: PaymentIntentDoc, data: OperatorOutcomeData, ctx: DecideContext): Decision {
  const result = data.result;
  if (!result) return { kind: 'skip', reason: 'live mode: only the operator\'s answer decides an attempt' };
  if (doc.status !== 'requires_action' && doc.status !== 'processing') return { kind: 'skip', reason: `arrived too late: the intent is ${doc.status}` };
  switch (result.kind) {
    case 'pending': {
      // A failed try the operator keeps open for another (Wave): shown once, the intent still waiting.
      const tried = result.failedTry;
      if (!tried || doc.status !== 'requires_action' || !doc.payment || doc.payment.failed_try === tried.key) {
        return { kind: 'skip', reason: 'the operator has not answered finally' };
      }
      return {
        kind: 'apply',
        set: { last_payment_error: paymentError(doc.payment.operator, tried.code), payment: { ...doc.payment, failed_try: tried.key } },
        event: 'payment_intent.payment_failed',
        answer: 'object',
        followUps: [],
      };
    }
    case 'declined':
      return decline(doc, result.code, 'object', ctx.now);
    case 'succeeded': {
      const ended = endAttempt(doc);
      return {
        kind: 'apply',
        set: {
          ...ended,
          payment: ended.payment ? { ...ended.payment, next_check_at: null, operator_transaction: result.operatorReference ?? ended.payment.operator_reference ?? null } : null,
          status: 'succeeded',
        },
        event: 'payment_intent.succeeded',
        answer: 'object',
        followUps: [],
      };
    }
  }
}

/** The expiry job of `expires_at`: from `new` or `requires_action`; an attempt in `processing` resolves first. */
export function decideExpiry(doc: PaymentIntentDoc, scheduledFor: number, now: number, withdrawn = false): Decision {
  if (doc.expires_at !== scheduledFor) return { kind: 'skip', reason: 'expires_at was changed' };
  if (doc.status !== 'new' && doc.status !== 'requires_action') return { kind: 'skip', reason: `the intent is ${doc.status}` };
  // Live mode (DESIGN section 14): an attempt the operator may still approve is not expired
  // blind; its checks go on, and its final answer (a decline) hands the intent to its expiry.
  const payment = doc.payment;
  if (doc.livemode && doc.status === 'requires_action' && payment && (payment.requested || payment.requesting_since) && !withdrawn) {
    return { kind: 'skip', reason: 'the operator has not answered this attempt finally' };
  }
  // BullMQ runs a delayed job at or after its time; a second of slack for clocks.
  if (doc.expires_at > now + 1) return { kind: 'skip', reason: 'not expired yet' };
  return {
    kind: 'apply',
    set: { ...endAttempt(doc), status: 'expired' },
    event: 'payment_intent.expired',
    answer: 'object',
    followUps: [],
  };
}

