import { ApiError } from '../../common/errors.js';
import type { PaymentIntentInput } from '../../common/jobs.js';
import { typedBody, type BodyEncoding, type BodyFields } from './fields.js';
import {
  checkBoolean,
  checkInteger,
  checkString,
  checkStringOrNull,
  describeValue,
  fieldOf,
  parseDescription,
  parseDistinctNames,
  parseMetadata,
  rejectUnknownFields,
  required,
} from './validate.js';

export const MIN_AMOUNT = 1;
export const MAX_AMOUNT = 999_999_999_999;
/** `expires_at` bounds and default, in seconds from now. */
export const EXPIRES_MIN_SECONDS = 60;
export const EXPIRES_MAX_SECONDS = 30 * 86_400;
export const EXPIRES_DEFAULT_SECONDS = 86_400;

/** The create body's fields, in contract order (see fields.ts). */
export const PAYMENT_INTENT_CREATE_FIELDS = {
  amount: { type: 'integer', required: true },
  currency: { type: 'string' },
  description: { type: 'string', nullable: true },
  metadata: { type: 'metadata' },
  allowed_operators: { type: 'string_array' },
  selected_operator: { type: 'string', nullable: true },
  automatic_operator: { type: 'boolean' },
  expires_at: { type: 'integer' },
} as const satisfies BodyFields;

const FIELDS = Object.keys(PAYMENT_INTENT_CREATE_FIELDS);

/** ISO 4217 codes as the runtime knows them, lowercase. */
const CURRENCIES = new Set(Intl.supportedValuesOf('currency').map((code) => code.toLowerCase()));

export interface PaymentIntentContext {
  /** The operator catalog, in catalog order. */
  operators: string[];
  defaultCurrency: string;
  /** Unix seconds. */
  now: number;
  /** A form body's strings are coerced by field type; JSON is taken as it is. Default `json`. */
  encoding?: BodyEncoding;
}

export function parseCurrency(value: unknown, fallback: string): string {
  if (value === undefined) return fallback;
  const currency = checkString(value, 'currency');
  const lower = currency.toLowerCase();
  if (!CURRENCIES.has(lower)) {
    throw new ApiError(
      'currency_invalid',
      `Invalid currency: ${describeValue(value)}. Use a three-letter ISO 4217 code, such as "xof".`,
      'currency',
    );
  }
  return lower;
}

export function parseAllowedOperators(value: unknown, catalog: readonly string[]): string[] {
  return parseDistinctNames(value, 'allowed_operators', {
    catalog,
    fallback: [...catalog],
    noun: 'operator name',
    emptyMessage: 'Invalid allowed_operators: the array must name at least one operator. Omit it to allow the whole catalog.',
    notInCatalog: (param, item) =>
      new ApiError('operator_invalid', `Invalid ${param}: ${describeValue(item)} is not an operator of the catalog (${catalog.join(', ')}).`, param),
  });
}

function parseSelectedOperator(value: unknown, allowed: readonly string[]): string | null {
  if (value === undefined) return null;
  const selected = checkStringOrNull(value, 'selected_operator');
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
  const automatic = checkBoolean(value, 'automatic_operator');
  if (automatic && selected !== null) {
    throw new ApiError(
      'parameter_conflict',
      'automatic_operator cannot be true when a selected_operator is given: choose one or the other.',
      'automatic_operator',
    );
  }
  return automatic;
}

export function parseExpiresAt(value: unknown, now: number): number {
  if (value === undefined) return now + EXPIRES_DEFAULT_SECONDS;
  const min = now + EXPIRES_MIN_SECONDS;
  const max = now + EXPIRES_MAX_SECONDS;
  const outOfRange = `Invalid expires_at: it must be a unix timestamp between 60 seconds and 30 days from now (${min} to ${max}).`;
  return checkInteger(value, 'expires_at', { min, max, outOfRange });
}

export function parseAmount(value: unknown): number {
  return checkInteger(value, 'amount', {
    min: MIN_AMOUNT,
    max: MAX_AMOUNT,
    tooSmall: () => new ApiError('amount_too_small', `Invalid amount: it must be at least ${MIN_AMOUNT} (amounts are in the smallest currency unit).`, 'amount'),
    tooLarge: () => new ApiError('amount_too_large', `Invalid amount: it must be at most ${MAX_AMOUNT}.`, 'amount'),
  });
}

/**
 * Validates a create body (a parsed JSON object or form) and fills in the defaults.
 * Unknown fields are reported first, then the fields in contract order; the first
 * problem is thrown as an ApiError.
 */
export function parsePaymentIntentCreate(raw: Record<string, unknown>, ctx: PaymentIntentContext): PaymentIntentInput {
  const body = typedBody(raw, ctx.encoding ?? 'json', PAYMENT_INTENT_CREATE_FIELDS);
  rejectUnknownFields(body, FIELDS);
  const amount = parseAmount(required(fieldOf(body, 'amount'), 'amount'));
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
