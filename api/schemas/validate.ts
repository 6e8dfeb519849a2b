import Joi from 'joi';

import { ApiError, errors, type ErrorCode } from '../../common/errors.js';
import { toPairs, type MetadataPairs } from '../../common/metadata.js';

/** Nothing is coerced: `"12"` is not an integer and `"true"` is not a boolean. */
export const JOI_OPTIONS: Joi.ValidationOptions = { convert: false, abortEarly: true };

export const DESCRIPTION_MAX_LENGTH = 1000;
export const METADATA_MAX_KEYS = 50;
export const METADATA_KEY_MAX_LENGTH = 40;
export const METADATA_VALUE_MAX_LENGTH = 500;

/** The contract counts lengths in Unicode code points, not UTF-16 units. */
export function codePointLength(s: string): number {
  return [...s].length;
}

/** `['allowed_operators', 2]` → `allowed_operators[2]`; `['metadata', 'color']` → `metadata[color]`. */
export function formatParam(path: ReadonlyArray<string | number>): string {
  const [first, ...rest] = path;
  return String(first ?? '') + rest.map((segment) => `[${segment}]`).join('');
}

/** A short rendering of a client's value for an error message; long strings are cut. */
export function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  if (typeof value === 'string') {
    const points = [...value];
    return points.length > 40 ? `${JSON.stringify(points.slice(0, 40).join(''))}…` : JSON.stringify(value);
  }
  return String(value);
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

/** The value of an own field, or `undefined` when absent (never one inherited from a prototype). */
export function fieldOf(body: Record<string, unknown>, name: string): unknown {
  return Object.hasOwn(body, name) ? body[name] : undefined;
}

/** Throws `parameter_unknown` for the first field of `body` not in `allowed`. */
export function rejectUnknownFields(body: Record<string, unknown>, allowed: readonly string[]): void {
  for (const name of Object.keys(body)) {
    if (!allowed.includes(name)) throw errors.parameterUnknown(name);
  }
}

export interface JoiMapping {
  /** Contract code per joi error type (e.g. `'number.min': 'amount_too_small'`), over the defaults. */
  codes?: Partial<Record<string, ErrorCode>>;
  /** Message per joi error type, over the generated one. */
  messages?: Partial<Record<string, string>>;
}

const DEFAULT_CODES: Record<string, ErrorCode> = {
  'any.required': 'parameter_missing',
  'object.unknown': 'parameter_unknown',
  'object.base': 'parameter_invalid',
  'number.base': 'parameter_invalid_integer',
  'number.integer': 'parameter_invalid_integer',
  'number.unsafe': 'parameter_invalid_integer',
  'number.infinity': 'parameter_invalid_integer',
  'number.min': 'parameter_out_of_range',
  'number.max': 'parameter_out_of_range',
  'number.greater': 'parameter_out_of_range',
  'number.less': 'parameter_out_of_range',
  'string.base': 'parameter_invalid_string',
  'string.empty': 'parameter_invalid_empty',
  'string.min': 'parameter_invalid_string',
  'string.max': 'parameter_invalid_string',
  'string.length': 'parameter_invalid_string',
  'string.pattern.base': 'parameter_invalid_string',
  'string.pattern.name': 'parameter_invalid_string',
  'boolean.base': 'parameter_invalid_boolean',
  'array.base': 'parameter_invalid',
  'array.unique': 'parameter_invalid',
};

function defaultMessage(detail: Joi.ValidationErrorItem, param: string): string {
  const context = detail.context ?? {};
  const shown = describeValue(context.value);
  switch (detail.type) {
    case 'any.required':
      return `Missing required param: ${param}.`;
    case 'object.unknown':
      return `Received unknown parameter: ${param}.`;
    case 'number.base':
    case 'number.integer':
    case 'number.unsafe':
    case 'number.infinity':
      return `Invalid integer: ${shown}. The ${param} parameter must be a JSON integer (no quotes, no decimals).`;
    case 'number.min':
      return `Invalid ${param}: ${shown} is below the minimum of ${String(context.limit)}.`;
    case 'number.max':
      return `Invalid ${param}: ${shown} is above the maximum of ${String(context.limit)}.`;
    case 'number.greater':
      return `Invalid ${param}: ${shown} must be greater than ${String(context.limit)}.`;
    case 'number.less':
      return `Invalid ${param}: ${shown} must be less than ${String(context.limit)}.`;
    case 'string.base':
      return `Invalid string: ${shown}. The ${param} parameter must be a JSON string.`;
    case 'string.empty':
      return `Invalid ${param}: the string must not be empty.`;
    case 'string.max':
      return `Invalid ${param}: the string must be at most ${String(context.limit)} characters long.`;
    case 'string.min':
      return `Invalid ${param}: the string must be at least ${String(context.limit)} characters long.`;
    case 'boolean.base':
      return `Invalid boolean: ${shown}. The ${param} parameter must be true or false.`;
    case 'array.base':
      return `Invalid array: ${shown}. The ${param} parameter must be a JSON array.`;
    case 'array.min':
      return `Invalid ${param}: the array must have at least ${String(context.limit)} item(s).`;
    case 'object.base':
      return `Invalid object: ${shown}. The ${param} parameter must be a JSON object.`;
    default:
      return `Invalid ${param}: ${shown}.`;
  }
}

/**
 * Maps one joi error detail to the contract's error: the most specific code for
 * the joi error type, and `param` from the detail's path (`field`, `field[2]`,
 * `metadata[key]`).
 */
export function fromJoiDetail(detail: Joi.ValidationErrorItem, mapping: JoiMapping = {}): ApiError {
  const param = formatParam(detail.path);
  let code = mapping.codes?.[detail.type] ?? DEFAULT_CODES[detail.type] ?? 'parameter_invalid';
  if (detail.type === 'array.min' && mapping.codes?.['array.min'] === undefined) {
    const value = detail.context?.value as unknown;
    code = Array.isArray(value) && value.length === 0 ? 'parameter_invalid_empty' : 'parameter_invalid';
  }
  const message = mapping.messages?.[detail.type] ?? defaultMessage(detail, param);
  return new ApiError(code, message, param);
}

/** Validates one field's value with `schema` and returns it, or throws the mapped ApiError. */
export function checkField<T>(schema: Joi.Schema<T>, value: unknown, param: string, mapping?: JoiMapping): T {
  const { error, value: checked } = schema.validate(value, JOI_OPTIONS);
  const detail = error?.details[0];
  if (detail) throw fromJoiDetail({ ...detail, path: [param, ...detail.path] }, mapping);
  return checked as T;
}

const stringOrNull = Joi.string().allow('', null);

/** `description`: a string of at most 1000 code points without NUL, or null; absent → null. */
export function parseDescription(value: unknown): string | null {
  if (value === undefined) return null;
  const description = checkField<string | null>(stringOrNull, value, 'description');
  if (description === null) return null;
  if (codePointLength(description) > DESCRIPTION_MAX_LENGTH) {
    throw new ApiError(
      'parameter_invalid_string',
      `Invalid description: it must be at most ${DESCRIPTION_MAX_LENGTH} characters long.`,
      'description',
    );
  }
  if (description.includes('\u0000')) {
    throw new ApiError('parameter_invalid_string', 'Invalid description: it must not contain NUL characters.', 'description');
  }
  return description;
}

function metadataInvalid(param: string, why: string): ApiError {
  return new ApiError('metadata_invalid', `Invalid ${param}: ${why}.`, param);
}

/**
 * `metadata`: a plain object of at most 50 string values; keys of 1…40 code points,
 * values of at most 500, no NUL in either. Any other key is fine (`.`, `$`,
 * `__proto__`): JSON.parse makes `__proto__` an own property, so the keys are read
 * with Object.keys and never assigned into an ordinary object. Absent → [].
 */
export function parseMetadata(value: unknown): MetadataPairs {
  if (value === undefined) return [];
  if (!isPlainObject(value)) {
    throw metadataInvalid('metadata', `expected an object of string values, got ${describeValue(value)}`);
  }
  const keys = Object.keys(value);
  if (keys.length > METADATA_MAX_KEYS) {
    throw metadataInvalid('metadata', `it has ${keys.length} keys, and at most ${METADATA_MAX_KEYS} are allowed`);
  }
  for (const key of keys) {
    const param = `metadata[${key}]`;
    const keyLength = codePointLength(key);
    if (keyLength < 1 || keyLength > METADATA_KEY_MAX_LENGTH) {
      throw metadataInvalid(param, `keys must be 1 to ${METADATA_KEY_MAX_LENGTH} characters long`);
    }
    if (key.includes('\u0000')) throw metadataInvalid(param, 'keys must not contain NUL characters');
    const item = value[key];
    if (typeof item !== 'string') {
      throw metadataInvalid(param, `values must be strings, got ${describeValue(item)}`);
    }
    if (codePointLength(item) > METADATA_VALUE_MAX_LENGTH) {
      throw metadataInvalid(param, `values must be at most ${METADATA_VALUE_MAX_LENGTH} characters long`);
    }
    if (item.includes('\u0000')) throw metadataInvalid(param, 'values must not contain NUL characters');
  }
  return toPairs(value as Record<string, string>);
}
