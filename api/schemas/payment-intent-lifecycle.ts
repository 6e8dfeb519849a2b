/**
 * Bodies of confirm, cancel and update (DESIGN.md section 7). What depends on the
 * intent itself (its status, its allowed operators) is decided by the worker, on
 * the stored intent; these check the request alone.
 */
import { ApiError } from '../../common/errors.js';
import { CANCELLATION_REASONS, E164, type CancellationReason } from '../../common/lifecycle.js';
import type { CancelInput, ConfirmInput, PaymentIntentUpdateInput } from '../../common/jobs.js';
import { toPairs } from '../../common/metadata.js';
import { bodySchema, checkBody } from './body.js';
import type { BodyEncoding } from './fields.js';
import type { Raise } from './joi-errors.js';
import { Joi } from './joi.js';
import { urlErrors } from './urls.js';
import {
  ALLOWED_OPERATORS_ERRORS,
  allowedOperators,
  amount,
  AMOUNT_ERRORS,
  AUTOMATIC_OPERATOR_ERRORS,
  automaticOperator,
  currency,
  CURRENCY_ERRORS,
  EXPIRES_AT_ERRORS,
  expiresAt,
  intentVars,
} from './payment-intents.js';
import { description, notAnOperator, oneOfErrors, operatorsOf } from './validate.js';

export const RETURN_URL_MAX_LENGTH = 2048;
const OTP_MAX_LENGTH = 16;

export interface LifecycleContext {
  operators: string[];
  /** Unix seconds. */
  now: number;
  encoding?: BodyEncoding;
}

/** A name of the operator catalog (the validation's `operators`). */
const catalogOperator = () =>
  Joi.string().custom((value: string, helpers) => (operatorsOf(helpers.prefs.context ?? {}).includes(value) ? value : helpers.error('operator.unknown')));
const CATALOG_OPERATOR_ERRORS: Record<string, Raise> = { 'operator.unknown': notAnOperator, 'string.empty': notAnOperator };

export const phoneNumber = () => Joi.string().pattern(E164);
const phoneInvalid: Raise = ({ param }) =>
  new ApiError('phone_number_invalid', 'Invalid phone_number: use E.164, a "+" then the country code and number, 8 to 15 digits (for example "+2250700000000").', param);
export const PHONE_NUMBER_ERRORS: Record<string, Raise> = { 'string.pattern.base': phoneInvalid, 'string.empty': phoneInvalid };

/**
 * A `+` written as is in a form body or a query string reads as a space (form
 * encoding: `curl -d phone_number=+225…`). A phone number is never a space then
 * digits, so that is taken as the `+` it was meant to be, in every form body and
 * query that takes one; `%2B` (`curl --data-urlencode`) sends the `+` itself. JSON
 * is taken as it is.
 */
export function restoreFormPlus(value: unknown): unknown {
  return typeof value === 'string' && /^ [0-9]/.test(value) ? `+${value.slice(1)}` : value;
}

const otpLength: Raise = ({ param }) => new ApiError('parameter_invalid_string', `Invalid otp: it must be 1 to ${OTP_MAX_LENGTH} characters long.`, param);

/** The URL rules of urls.ts: it must read the same to every parser. */
const returnUrl = () => Joi.string().maxCodePoints(RETURN_URL_MAX_LENGTH).webUrl();

export const PAYMENT_INTENT_CONFIRM = bodySchema(
  {
    operator: catalogOperator(),
    phone_number: phoneNumber().required(),
    otp: Joi.string().maxCodePoints(OTP_MAX_LENGTH),
    return_url: returnUrl(),
  },
  {
    operator: CATALOG_OPERATOR_ERRORS,
    phone_number: PHONE_NUMBER_ERRORS,
    otp: { 'string.empty': otpLength, 'string.maxCodePoints': otpLength },
    return_url: urlErrors('return_url', RETURN_URL_MAX_LENGTH),
  },
);

export const PAYMENT_INTENT_CANCEL = bodySchema(
  { cancellation_reason: Joi.string().valid(...CANCELLATION_REASONS).allow(null) },
  { cancellation_reason: oneOfErrors(CANCELLATION_REASONS) },
);

export const PAYMENT_INTENT_UPDATE = bodySchema(
  {
    amount: amount(),
    currency: currency(),
    description: description(),
    metadata: Joi.metadata(),
    allowed_operators: allowedOperators(),
    selected_operator: catalogOperator().allow(null),
    automatic_operator: automaticOperator(),
    expires_at: expiresAt(),
  },
  {
    amount: AMOUNT_ERRORS,
    currency: CURRENCY_ERRORS,
    allowed_operators: ALLOWED_OPERATORS_ERRORS,
    selected_operator: CATALOG_OPERATOR_ERRORS,
    automatic_operator: AUTOMATIC_OPERATOR_ERRORS,
    expires_at: EXPIRES_AT_ERRORS,
  },
);

export const PAYMENT_INTENT_CONFIRM_FIELDS = PAYMENT_INTENT_CONFIRM.fields;
export const PAYMENT_INTENT_CANCEL_FIELDS = PAYMENT_INTENT_CANCEL.fields;
export const PAYMENT_INTENT_UPDATE_FIELDS = PAYMENT_INTENT_UPDATE.fields;

export function parseConfirm(raw: Record<string, unknown>, ctx: LifecycleContext): ConfirmInput {
  const encoding = ctx.encoding ?? 'json';
  const given = encoding === 'form' && Object.hasOwn(raw, 'phone_number') ? Object.assign(Object.create(null) as Record<string, unknown>, raw, { phone_number: restoreFormPlus(raw.phone_number) }) : raw;
  const body = checkBody(PAYMENT_INTENT_CONFIRM, given, encoding, { operators: ctx.operators });
  return {
    operator: (body.operator ?? null) as string | null,
    phone_number: body.phone_number as string,
    otp: (body.otp ?? null) as string | null,
    return_url: (body.return_url ?? null) as string | null,
  };
}

export function parseCancel(raw: Record<string, unknown>, ctx: { encoding?: BodyEncoding }): CancelInput {
  const body = checkBody(PAYMENT_INTENT_CANCEL, raw, ctx.encoding ?? 'json');
  return { cancellation_reason: (body.cancellation_reason ?? null) as CancellationReason | null };
}

/** Only the fields given; which of them the intent's status allows is the worker's decision. */
export function parseUpdate(raw: Record<string, unknown>, ctx: LifecycleContext): PaymentIntentUpdateInput {
  const body = checkBody(PAYMENT_INTENT_UPDATE, raw, ctx.encoding ?? 'json', intentVars(ctx));
  const input: PaymentIntentUpdateInput = {};
  if (body.amount !== undefined) input.amount = body.amount as number;
  if (body.currency !== undefined) input.currency = (body.currency as string).toLowerCase();
  if (body.description !== undefined) input.description = body.description as string | null;
  if (body.metadata !== undefined) input.metadata = toPairs(body.metadata as Record<string, string>);
  if (body.allowed_operators !== undefined) input.allowed_operators = [...(body.allowed_operators as string[])];
  if (body.selected_operator !== undefined) input.selected_operator = body.selected_operator as string | null;
  if (body.automatic_operator !== undefined) input.automatic_operator = body.automatic_operator as boolean;
  if (body.expires_at !== undefined) input.expires_at = body.expires_at as number;
  return input;
}
