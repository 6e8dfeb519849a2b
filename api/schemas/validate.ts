import { ApiError, errors } from '../../common/errors.js';
import { toPairs, type MetadataPairs } from '../../common/metadata.js';

export const DESCRIPTION_MAX_LENGTH = 1000;
export { METADATA_MAX_KEYS } from '../../common/metadata.js';
import { METADATA_MAX_KEYS } from '../../common/metadata.js';
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

/**
 * Field checks on the `errors` factories: each takes a client's value and its
 * `param`, and returns the typed value or throws the contract's error. Nothing is
 * coerced here: `"12"` is not an integer and `"true"` is not a boolean. A form
 * body's strings are typed before (fields.ts `typedBody`).
 */
export function checkInteger(
  value: unknown,
  param: string,
  range: { min: number; max: number; tooSmall?: () => ApiError; tooLarge?: () => ApiError; outOfRange?: string },
): number {
  if (typeof value !== 'number' || !Number.isInteger(value)) {
    throw new ApiError(
      'parameter_invalid_integer',
      `Invalid integer: ${describeValue(value)}. The ${param} parameter must be a whole number: in JSON a number without quotes or decimals, in a form plain digits.`,
      param,
    );
  }
  if (value < range.min) {
    throw range.tooSmall?.() ?? new ApiError('parameter_out_of_range', range.outOfRange ?? `Invalid ${param}: ${describeValue(value)} is below the minimum of ${range.min}.`, param);
  }
  if (value > range.max) {
    throw range.tooLarge?.() ?? new ApiError('parameter_out_of_range', range.outOfRange ?? `Invalid ${param}: ${describeValue(value)} is above the maximum of ${range.max}.`, param);
  }
  return value;
}

export function checkString(value: unknown, param: string): string {
  if (typeof value !== 'string') {
    throw new ApiError('parameter_invalid_string', `Invalid string: ${describeValue(value)}. The ${param} parameter must be a string.`, param);
  }
  return value;
}

export function checkStringOrNull(value: unknown, param: string): string | null {
  return value === null ? null : checkString(value, param);
}

export function checkBoolean(value: unknown, param: string): boolean {
  if (typeof value !== 'boolean') {
    throw new ApiError('parameter_invalid_boolean', `Invalid boolean: ${describeValue(value)}. The ${param} parameter must be true or false.`, param);
  }
  return value;
}

/** A required field: absent is `parameter_missing`. */
export function required(value: unknown, param: string): unknown {
  if (value === undefined) throw errors.parameterMissing(param);
  return value;
}

/**
 * A non-empty array of distinct names from `catalog` (`allowed_operators`,
 * `enabled_events`). `extra` names are accepted too (`*`). Absent → `fallback`.
 */
export function parseDistinctNames(
  value: unknown,
  param: string,
  options: {
    catalog: readonly string[];
    extra?: readonly string[];
    fallback: string[];
    /** What one item is, for messages: "operator name", "event type". */
    noun: string;
    /** The message of `parameter_invalid_empty`. */
    emptyMessage: string;
    notInCatalog: (itemParam: string, item: string) => ApiError;
  },
): string[] {
  if (value === undefined) return options.fallback;
  if (!Array.isArray(value)) {
    throw new ApiError('parameter_invalid', `Invalid array: ${describeValue(value)}. The ${param} parameter must be an array of ${options.noun}s.`, param);
  }
  if (value.length === 0) {
    throw new ApiError('parameter_invalid_empty', options.emptyMessage, param);
  }
  const seen = new Set<string>();
  value.forEach((item: unknown, i) => {
    const itemParam = `${param}[${i}]`;
    if (typeof item !== 'string') {
      throw new ApiError('parameter_invalid_string', `Invalid string: ${describeValue(item)}. ${capitalize(options.noun)}s are strings.`, itemParam);
    }
    if (!options.catalog.includes(item) && !options.extra?.includes(item)) throw options.notInCatalog(itemParam, item);
    if (seen.has(item)) throw new ApiError('parameter_invalid', `Invalid ${itemParam}: ${describeValue(item)} is listed twice.`, itemParam);
    seen.add(item);
  });
  return [...seen];
}

function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** `description`: a string of at most 1000 code points without NUL, or null; absent → null. */
export function parseDescription(value: unknown): string | null {
  if (value === undefined) return null;
  const description = checkStringOrNull(value, 'description');
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
