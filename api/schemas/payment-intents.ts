import { ApiError } from '../../common/errors.js';
import type { PaymentIntentInput } from '../../common/jobs.js';
import { toPairs } from '../../common/metadata.js';
import { currencyExponent, formatAmount, isCurrency } from '../../common/money.js';
import { bodySchema, checkBody } from './body.js';
import type { BodyEncoding } from './fields.js';
import { describeValue, integerInvalid, type Failure, type Raise } from './joi-errors.js';
import { Joi } from './joi.js';
import { description, distinctNames, distinctNamesErrors, integer, notAnOperator, operatorsOf } from './validate.js';

export const MIN_AMOUNT = 1;
export const MAX_AMOUNT = 999_999_999_999;
/** `expires_at` bounds and default, in seconds from now. */
export const EXPIRES_MIN_SECONDS = 60;
export const EXPIRES_MAX_SECONDS = 30 * 86_400;
export const EXPIRES_DEFAULT_SECONDS = 86_400;

/** ISO 4217 codes as the runtime knows them, lowercase. */

export interface PaymentIntentContext {
  /** The operator catalog, in catalog order. */
  operators: string[];
  defaultCurrency: string;
  /** Unix seconds. */
  now: number;
  /** A form body's strings are coerced by field type; JSON is taken as it is. Default `json`. */
  encoding?: BodyEncoding;
}

/** The vars a payment intent body is checked with. `defaultCurrency`: a create's, for the amount's error. */
export function intentVars(ctx: { operators: string[]; now: number; defaultCurrency?: string }): Record<string, unknown> {
  return { operators: ctx.operators, expiresMin: ctx.now + EXPIRES_MIN_SECONDS, expiresMax: ctx.now + EXPIRES_MAX_SECONDS, defaultCurrency: ctx.defaultCurrency };
}

// Fields shared by create and update: joi schemas and their contract errors.

/** An amount written in major units, `50.00` or `50.5` (a form's text, or JSON's number as written). */
const MAJOR_UNITS = /^([0-9]+)\.([0-9]+)$/;

/**
 * `"50.00"` for an amount: it is refused, with what to send instead, by the
 * exponent of the body's currency (else the default): `5000` for 50.00 KES, `50` for
 * 50 XOF. An update without a currency does not know the intent's: both examples.
 */
function amountInMajorUnits(failure: Failure): ApiError {
  const { param, value, vars, input } = failure;
  const written = typeof value === 'number' ? String(value) : value;
  const major = typeof written === 'string' ? MAJOR_UNITS.exec(written) : null;
  if (major === null) return integerInvalid(failure);
  const given = typeof input.currency === 'string' && isCurrency(input.currency) ? input.currency : vars.defaultCurrency;
  const lead = `Invalid amount: ${written as string} is not an integer. Amounts are integers in the currency's minor unit`;
  if (typeof given !== 'string') return new ApiError('parameter_invalid_integer', `${lead}: 5000 is 50.00 KES, and 5 000 XOF (XOF has none).`, param);
  const exponent = currencyExponent(given);
  const minor = Number(`${major[1] as string}${((major[2] as string) + '0'.repeat(exponent)).slice(0, exponent)}`) || 10 ** exponent;
  const none = exponent === 0 ? `, and ${given.toUpperCase()} has none` : '';
  return new ApiError('parameter_invalid_integer', `${lead}${none}: for ${formatAmount(minor, given)} send ${minor}.`, param);
}

export const amount = () => integer().min(MIN_AMOUNT).max(MAX_AMOUNT);
export const AMOUNT_ERRORS: Record<string, Raise> = {
  'number.base': amountInMajorUnits,
  'number.integer': amountInMajorUnits,
  'number.min': ({ param }) => new ApiError('amount_too_small', `Invalid amount: it must be at least ${MIN_AMOUNT} (amounts are in the smallest currency unit).`, param),
  'number.max': ({ param }) => new ApiError('amount_too_large', `Invalid amount: it must be at most ${MAX_AMOUNT}.`, param),
};

export const currency = () => Joi.string().custom((value: string, helpers) => (isCurrency(value) ? value : helpers.error('currency.unknown')));
const currencyInvalid: Raise = ({ param, value }) =>
  new ApiError('currency_invalid', `Invalid currency: ${describeValue(value)}. Use a three-letter ISO 4217 code, such as "xof".`, param);
export const CURRENCY_ERRORS: Record<string, Raise> = { 'currency.unknown': currencyInvalid, 'string.empty': currencyInvalid };

export const allowedOperators = () => distinctNames(operatorsOf);
export const ALLOWED_OPERATORS_ERRORS = distinctNamesErrors({
  noun: 'operator name',
  emptyMessage: 'Invalid allowed_operators: the array must name at least one operator. Omit it to allow the whole catalog.',
  notInCatalog: notAnOperator,
});

/** `automatic_operator: true` beside a `selected_operator` is a conflict. */
export const automaticOperator = () =>
  Joi.boolean().custom((value: boolean, helpers) =>
    value && typeof (helpers.state.ancestors[0] as Record<string, unknown>).selected_operator === 'string' ? helpers.error('operator.conflict') : value,
  );
export const AUTOMATIC_OPERATOR_ERRORS: Record<string, Raise> = {
  'operator.conflict': ({ param }) =>
    new ApiError('parameter_conflict', 'automatic_operator cannot be true when a selected_operator is given: choose one or the other.', param),
};

export const expiresAt = () => integer().min(Joi.ref('$expiresMin')).max(Joi.ref('$expiresMax'));
const expiresOutOfRange: Raise = ({ param, vars }) =>
  new ApiError(
    'parameter_out_of_range',
    `Invalid expires_at: it must be a unix timestamp between 60 seconds and 30 days from now (${String(vars.expiresMin)} to ${String(vars.expiresMax)}).`,
    param,
  );
export const EXPIRES_AT_ERRORS: Record<string, Raise> = { 'number.min': expiresOutOfRange, 'number.max': expiresOutOfRange };

/** At create, the selected operator must be one of the allowed ones (the catalog when none are given). */
const allowedOf = (body: Record<string, unknown>, vars: Record<string, unknown>) =>
  (Object.hasOwn(body, 'allowed_operators') ? body.allowed_operators : vars.operators) as string[];
const notAllowed: Raise = ({ param, value, vars, input }) =>
  new ApiError('operator_invalid', `Invalid selected_operator: ${describeValue(value)} is not one of the allowed operators (${allowedOf(input, vars).join(', ')}).`, param);

/** The create body, in contract order: unknown fields first, then the fields in this order. */
export const PAYMENT_INTENT_CREATE = bodySchema(
  {
    amount: amount().required(),
    currency: currency(),
    description: description(),
    metadata: Joi.metadata(),
    allowed_operators: allowedOperators(),
    selected_operator: Joi.string()
      .allow(null)
      .custom((value: string, helpers) =>
        allowedOf(helpers.state.ancestors[0] as Record<string, unknown>, helpers.prefs.context ?? {}).includes(value) ? value : helpers.error('operator.notAllowed'),
      ),
    automatic_operator: automaticOperator(),
    expires_at: expiresAt(),
  },
  {
    amount: AMOUNT_ERRORS,
    currency: CURRENCY_ERRORS,
    allowed_operators: ALLOWED_OPERATORS_ERRORS,
    selected_operator: { 'operator.notAllowed': notAllowed, 'string.empty': notAllowed },
    automatic_operator: AUTOMATIC_OPERATOR_ERRORS,
    expires_at: EXPIRES_AT_ERRORS,
  },
);

export const PAYMENT_INTENT_CREATE_FIELDS = PAYMENT_INTENT_CREATE.fields;

/**
 * Validates a create body (a parsed JSON object or form) and fills in the defaults.
 * Unknown fields are reported first, then the fields in contract order; the first
 * problem is thrown as an ApiError.
 */
export function parsePaymentIntentCreate(raw: Record<string, unknown>, ctx: PaymentIntentContext): PaymentIntentInput {
  const body = checkBody(PAYMENT_INTENT_CREATE, raw, ctx.encoding ?? 'json', intentVars(ctx));
  const selected = (body.selected_operator ?? null) as string | null;
  return {
    amount: body.amount as number,
    currency: body.currency === undefined ? ctx.defaultCurrency : (body.currency as string).toLowerCase(),
    description: (body.description ?? null) as string | null,
    metadata: body.metadata === undefined ? [] : toPairs(body.metadata as Record<string, string>),
    allowed_operators: body.allowed_operators === undefined ? [...ctx.operators] : [...(body.allowed_operators as string[])],
    selected_operator: selected,
    automatic_operator: body.automatic_operator === undefined ? selected === null : (body.automatic_operator as boolean),
    expires_at: body.expires_at === undefined ? ctx.now + EXPIRES_DEFAULT_SECONDS : (body.expires_at as number),
  };
}
