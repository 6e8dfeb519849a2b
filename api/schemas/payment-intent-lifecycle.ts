/**
 * Bodies of confirm, cancel and update (DESIGN.md section 7). What depends on the
 * intent itself (its status, its allowed operators) is decided by the worker, on
 * the stored intent; these check the request alone.
 */
import { ApiError } from '../../common/errors.js';
import { CANCELLATION_REASONS, E164, type CancellationReason } from '../../common/lifecycle.js';
import type { CancelInput, ConfirmInput, PaymentIntentUpdateInput } from '../../common/jobs.js';
import { typedBody, type BodyEncoding, type BodyFields } from './fields.js';
import { parseAllowedOperators, parseAmount, parseCurrency, parseExpiresAt } from './payment-intents.js';
import {
  checkBoolean,
  checkString,
  checkStringOrNull,
  codePointLength,
  describeValue,
  fieldOf,
  parseDescription,
  parseMetadata,
  rejectUnknownFields,
  required,
} from './validate.js';

export const RETURN_URL_MAX_LENGTH = 2048;
const OTP_MAX_LENGTH = 16;

export const PAYMENT_INTENT_CONFIRM_FIELDS = {
  operator: { type: 'string' },
  phone_number: { type: 'string', required: true },
  otp: { type: 'string' },
  return_url: { type: 'string' },
} as const satisfies BodyFields;

export const PAYMENT_INTENT_CANCEL_FIELDS = {
  cancellation_reason: { type: 'string', nullable: true },
} as const satisfies BodyFields;

export const PAYMENT_INTENT_UPDATE_FIELDS = {
  amount: { type: 'integer' },
  currency: { type: 'string' },
  description: { type: 'string', nullable: true },
  metadata: { type: 'metadata' },
  allowed_operators: { type: 'string_array' },
  selected_operator: { type: 'string', nullable: true },
  automatic_operator: { type: 'boolean' },
  expires_at: { type: 'integer' },
} as const satisfies BodyFields;

export interface LifecycleContext {
  operators: string[];
  /** Unix seconds. */
  now: number;
  encoding?: BodyEncoding;
}

function parseOperator(value: unknown, catalog: readonly string[]): string | null {
  if (value === undefined) return null;
  const operator = checkString(value, 'operator');
  if (!catalog.includes(operator)) {
    throw new ApiError('operator_invalid', `Invalid operator: ${describeValue(operator)} is not an operator of the catalog (${catalog.join(', ')}).`, 'operator');
  }
  return operator;
}

export function parsePhoneNumber(value: unknown): string {
  const phone = checkString(required(value, 'phone_number'), 'phone_number');
  if (!E164.test(phone)) {
    throw new ApiError('phone_number_invalid', 'Invalid phone_number: use E.164, a "+" then the country code and number, 8 to 15 digits (for example "+2250700000000").', 'phone_number');
  }
  return phone;
}

function parseOtp(value: unknown): string | null {
  if (value === undefined) return null;
  const otp = checkString(value, 'otp');
  if (otp === '' || codePointLength(otp) > OTP_MAX_LENGTH) {
    throw new ApiError('parameter_invalid_string', `Invalid otp: it must be 1 to ${OTP_MAX_LENGTH} characters long.`, 'otp');
  }
  return otp;
}

function parseReturnUrl(value: unknown): string | null {
  if (value === undefined) return null;
  const url = checkString(value, 'return_url');
  const invalid = (why: string) => new ApiError('url_invalid', `Invalid return_url: ${why}.`, 'return_url');
  if (codePointLength(url) > RETURN_URL_MAX_LENGTH) throw invalid(`it must be at most ${RETURN_URL_MAX_LENGTH} characters long`);
  if (/[\u0000-\u0020\u007f]/.test(url) || !/^https?:\/\//i.test(url)) throw invalid('it must be an absolute http:// or https:// URL');
  try {
    new URL(url);
  } catch {
    throw invalid(`${describeValue(url)} is not a valid URL`);
  }
  return url;
}

export function parseConfirm(raw: Record<string, unknown>, ctx: LifecycleContext): ConfirmInput {
  const body = typedBody(raw, ctx.encoding ?? 'json', PAYMENT_INTENT_CONFIRM_FIELDS);
  rejectUnknownFields(body, Object.keys(PAYMENT_INTENT_CONFIRM_FIELDS));
  const operator = parseOperator(fieldOf(body, 'operator'), ctx.operators);
  const phoneNumber = parsePhoneNumber(fieldOf(body, 'phone_number'));
  const otp = parseOtp(fieldOf(body, 'otp'));
  const returnUrl = parseReturnUrl(fieldOf(body, 'return_url'));
  return { operator, phone_number: phoneNumber, otp, return_url: returnUrl };
}

export function parseCancel(raw: Record<string, unknown>, ctx: { encoding?: BodyEncoding }): CancelInput {
  const body = typedBody(raw, ctx.encoding ?? 'json', PAYMENT_INTENT_CANCEL_FIELDS);
  rejectUnknownFields(body, Object.keys(PAYMENT_INTENT_CANCEL_FIELDS));
  const value = fieldOf(body, 'cancellation_reason');
  if (value === undefined) return { cancellation_reason: null };
  const reason = checkStringOrNull(value, 'cancellation_reason');
  if (reason !== null && !(CANCELLATION_REASONS as readonly string[]).includes(reason)) {
    throw new ApiError(
      'parameter_invalid',
      `Invalid cancellation_reason: ${describeValue(reason)}; use one of ${CANCELLATION_REASONS.join(', ')}.`,
      'cancellation_reason',
    );
  }
  return { cancellation_reason: reason as CancellationReason | null };
}

/** Only the fields given; which of them the intent's status allows is the worker's decision. */
export function parseUpdate(raw: Record<string, unknown>, ctx: LifecycleContext): PaymentIntentUpdateInput {
  const body = typedBody(raw, ctx.encoding ?? 'json', PAYMENT_INTENT_UPDATE_FIELDS);
  rejectUnknownFields(body, Object.keys(PAYMENT_INTENT_UPDATE_FIELDS));
  const input: PaymentIntentUpdateInput = {};
  const amount = fieldOf(body, 'amount');
  if (amount !== undefined) input.amount = parseAmount(amount);
  const currency = fieldOf(body, 'currency');
  if (currency !== undefined) input.currency = parseCurrency(currency, '');
  const description = fieldOf(body, 'description');
  if (description !== undefined) input.description = parseDescription(description);
  const metadata = fieldOf(body, 'metadata');
  if (metadata !== undefined) input.metadata = parseMetadata(metadata);
  const allowed = fieldOf(body, 'allowed_operators');
  if (allowed !== undefined) input.allowed_operators = parseAllowedOperators(allowed, ctx.operators);
  const selected = fieldOf(body, 'selected_operator');
  if (selected !== undefined) {
    const name = checkStringOrNull(selected, 'selected_operator');
    if (name !== null && !ctx.operators.includes(name)) {
      throw new ApiError('operator_invalid', `Invalid selected_operator: ${describeValue(name)} is not an operator of the catalog (${ctx.operators.join(', ')}).`, 'selected_operator');
    }
    input.selected_operator = name;
  }
  const automatic = fieldOf(body, 'automatic_operator');
  if (automatic !== undefined) input.automatic_operator = checkBoolean(automatic, 'automatic_operator');
  if (input.automatic_operator === true && typeof input.selected_operator === 'string') {
    throw new ApiError('parameter_conflict', 'automatic_operator cannot be true when a selected_operator is given: choose one or the other.', 'automatic_operator');
  }
  const expiresAt = fieldOf(body, 'expires_at');
  if (expiresAt !== undefined) input.expires_at = parseExpiresAt(expiresAt, ctx.now);
  return input;
}
