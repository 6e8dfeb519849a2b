import Joi from 'joi';

import { ApiError } from '../../common/errors.js';
import type { PaymentIntentInput } from '../../common/jobs.js';
import { checkField, describeValue, fieldOf, parseDescription, parseMetadata, rejectUnknownFields } from './validate.js';

export const MIN_AMOUNT = 1;
export const MAX_AMOUNT = 999_999_999_999;
/** `expires_at` bounds and default, in seconds from now. */
export const EXPIRES_MIN_SECONDS = 60;
export const EXPIRES_MAX_SECONDS = 30 * 86_400;
export const EXPIRES_DEFAULT_SECONDS = 86_400;

const FIELDS = [
  'amount',
  'currency',
  'description',
  'metadata',
  'allowed_operators',
  'selected_operator',
  'automatic_operator',
  'expires_at',
] as const;

/** ISO 4217 codes as the runtime knows them, lowercase. */
const CURRENCIES = new Set(Intl.supportedValuesOf('currency').map((code) => code.toLowerCase()));

// `unsafe()` lets integers beyond 2^53 reach the range rules (amount_too_large)
// instead of failing as "unsafe" numbers.
const amountSchema = Joi.number().unsafe().integer().min(MIN_AMOUNT).max(MAX_AMOUNT).required();
const amountMapping = {
  codes: { 'number.min': 'amount_too_small', 'number.max': 'amount_too_large' },
  messages: {
    'number.min': `Invalid amount: it must be at least ${MIN_AMOUNT} (amounts are in the smallest currency unit).`,
    'number.max': `Invalid amount: it must be at most ${MAX_AMOUNT}.`,
  },
} as const;
const stringSchema = Joi.string().allow('');
const stringOrNullSchema = Joi.string().allow('', null);
const booleanSchema = Joi.boolean();

export interface PaymentIntentContext {
  /** The operator catalog, in catalog order. */
  operators: string[];
  defaultCurrency: string;
  /** Unix seconds. */
  now: number;
}

function parseCurrency(value: unknown, fallback: string): string {
  if (value === undefined) return fallback;
  const currency = checkField(stringSchema, value, 'currency');
  const lower = currency.toLowerCase();
  if (!CURRENCIES.has(lower)) {
    throw new ApiError(
      'currency_invalid',
      `Invalid currency: ${describeValue(value)}. Use a three-letter ISO 4217 code, such as "usd".`,
      'currency',
    );
  }
  return lower;
}

function parseAllowedOperators(value: unknown, catalog: readonly string[]): string[] {
  if (value === undefined) return [...catalog];
  if (!Array.isArray(value)) {
    throw new ApiError(
      'parameter_invalid',
      `Invalid array: ${describeValue(value)}. The allowed_operators parameter must be an array of operator names.`,
      'allowed_operators',
    );
  }
  if (value.length === 0) {
    throw new ApiError(
      'parameter_invalid_empty',
      'Invalid allowed_operators: the array must name at least one operator. Omit it to allow the whole catalog.',
      'allowed_operators',
    );
  }
  const seen = new Set<string>();
  value.forEach((item: unknown, i) => {
    const param = `allowed_operators[${i}]`;
    if (typeof item !== 'string') {
      throw new ApiError('parameter_invalid_string', `Invalid string: ${describeValue(item)}. Operator names are strings.`, param);
    }
    if (!catalog.includes(item)) {
      throw new ApiError(
        'operator_invalid',
        `Invalid ${param}: ${describeValue(item)} is not an operator of the catalog (${catalog.join(', ')}).`,
        param,
      );
    }
    if (seen.has(item)) {
      throw new ApiError('parameter_invalid', `Invalid ${param}: ${describeValue(item)} is listed twice.`, param);
    }
    seen.add(item);
  });
  return [...seen];
}

function parseSelectedOperator(value: unknown, allowed: readonly string[]): string | null {
  if (value === undefined) return null;
  const selected = checkField<string | null>(stringOrNullSchema, value, 'selected_operator');
  if (selected !== null && !allowed.includes(selected)) {
    throw new ApiError(
      'operator_invalid',
      `Invalid selected_operator: ${describeValue(selected)} is not one of the allowed operators (${allowed.join(', ')}).`,
      'selected_operator',
    );
  }
  return selected;
}

function parseAutomaticOperator(value: unknown, selected: string | null): boolean {
  if (value === undefined) return selected === null;
  const automatic = checkField(booleanSchema, value, 'automatic_operator');
  if (automatic && selected !== null) {
    throw new ApiError(
      'parameter_conflict',
      'automatic_operator cannot be true when a selected_operator is given: choose one or the other.',
      'automatic_operator',
    );
  }
  return automatic;
}

function parseExpiresAt(value: unknown, now: number): number {
  if (value === undefined) return now + EXPIRES_DEFAULT_SECONDS;
  const min = now + EXPIRES_MIN_SECONDS;
  const max = now + EXPIRES_MAX_SECONDS;
  const outOfRange = `Invalid expires_at: it must be a unix timestamp between 60 seconds and 30 days from now (${min} to ${max}).`;
  return checkField(Joi.number().unsafe().integer().min(min).max(max), value, 'expires_at', {
    messages: { 'number.min': outOfRange, 'number.max': outOfRange },
  });
}

/**
 * Validates a create body (already a plain JSON object) and fills in the defaults.
 * Unknown fields are reported first, then the fields in contract order; the first
 * problem is thrown as an ApiError.
 */
export function parsePaymentIntentCreate(body: Record<string, unknown>, ctx: PaymentIntentContext): PaymentIntentInput {
  rejectUnknownFields(body, FIELDS);
  const amount = checkField(amountSchema, fieldOf(body, 'amount'), 'amount', amountMapping);
  const currency = parseCurrency(fieldOf(body, 'currency'), ctx.defaultCurrency);
  const description = parseDescription(fieldOf(body, 'description'));
  const metadata = parseMetadata(fieldOf(body, 'metadata'));
  const allowedOperators = parseAllowedOperators(fieldOf(body, 'allowed_operators'), ctx.operators);
  const selectedOperator = parseSelectedOperator(fieldOf(body, 'selected_operator'), allowedOperators);
  const automaticOperator = parseAutomaticOperator(fieldOf(body, 'automatic_operator'), selectedOperator);
  const expiresAt = parseExpiresAt(fieldOf(body, 'expires_at'), ctx.now);
  return {
    amount,
    currency,
    description,
    metadata,
    allowed_operators: allowedOperators,
    selected_operator: selectedOperator,
    automatic_operator: automaticOperator,
    expires_at: expiresAt,
  };
}
