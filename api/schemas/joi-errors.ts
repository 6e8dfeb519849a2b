/**
 * The one translator from joi's error details to the contract's errors (DESIGN.md
 * section 4): a code, a `param` in bracket notation and a message for people. joi's
 * own messages are never rendered. What most fields share is here; a schema adds
 * its own codes and messages as a table by field and joi error type.
 */
import { ApiError, errors } from '../../common/errors.js';

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

/** What a joi error detail carries (the message is not read). */
export interface JoiDetail {
  type: string;
  path: ReadonlyArray<string | number>;
  context?: { value?: unknown; limit?: unknown; [key: string]: unknown };
}

export interface Failure {
  /** The input at fault, in bracket notation. */
  param: string;
  /** The value at fault. */
  value: unknown;
  context: Record<string, unknown>;
  /** What the validation was given: the operator catalog, the time bounds… */
  vars: Record<string, unknown>;
  /** The whole body (or query), as validated. */
  input: Record<string, unknown>;
}

export type Raise = (failure: Failure) => ApiError;

/** By top-level field, by joi error type: the contract's error where it is not the shared one. */
export type ErrorTable = Readonly<Record<string, Readonly<Partial<Record<string, Raise>>>>>;

const SHARED: Readonly<Record<string, Raise>> = {
  'object.unknown': ({ param }) => errors.parameterUnknown(param),
  'any.required': ({ param }) => errors.parameterMissing(param),
  'number.base': integerInvalid,
  'number.integer': integerInvalid,
  'number.infinity': integerInvalid,
  'number.min': ({ param, value, context }) =>
    new ApiError('parameter_out_of_range', `Invalid ${param}: ${describeValue(value)} is below the minimum of ${String(context.limit)}.`, param),
  'number.max': ({ param, value, context }) =>
    new ApiError('parameter_out_of_range', `Invalid ${param}: ${describeValue(value)} is above the maximum of ${String(context.limit)}.`, param),
  'string.base': ({ param, value }) =>
    new ApiError('parameter_invalid_string', `Invalid string: ${describeValue(value)}. The ${param} parameter must be a string.`, param),
  'string.maxCodePoints': ({ param, context }) =>
    new ApiError('parameter_invalid_string', `Invalid ${param}: it must be at most ${String(context.limit)} characters long.`, param),
  'string.nul': ({ param }) => new ApiError('parameter_invalid_string', `Invalid ${param}: it must not contain NUL characters.`, param),
  'string.surrogate': ({ param }) => new ApiError('parameter_invalid_string', `Invalid ${param}: it must be valid Unicode text (it has a lone surrogate).`, param),
  'boolean.base': ({ param, value }) =>
    new ApiError('parameter_invalid_boolean', `Invalid boolean: ${describeValue(value)}. The ${param} parameter must be true or false.`, param),
  'metadata.invalid': ({ param, context }) => {
    const at = typeof context.member === 'string' ? `${param}[${context.member}]` : param;
    return new ApiError('metadata_invalid', `Invalid ${at}: ${String(context.why)}.`, at);
  },
};

export function integerInvalid({ param, value }: Failure): ApiError {
  return new ApiError(
    'parameter_invalid_integer',
    `Invalid integer: ${describeValue(value)}. The ${param} parameter must be a whole number: in JSON a number without quotes or decimals, in a form plain digits.`,
    param,
  );
}

/**
 * The contract's error for joi's first error detail. A detail no table knows is a
 * schema written without its message: a plain Error (500), never joi's wording.
 */
export function toApiError(detail: JoiDetail, table: ErrorTable = {}, vars: Record<string, unknown> = {}, input: Record<string, unknown> = {}): ApiError {
  const context = detail.context ?? {};
  const failure: Failure = { param: formatParam(detail.path), value: context.value, context, vars, input };
  const field = String(detail.path[0] ?? '');
  const raise = (Object.hasOwn(table, field) ? table[field]?.[detail.type] : undefined) ?? SHARED[detail.type];
  if (raise === undefined) throw new Error(`no contract error for joi's "${detail.type}" at ${failure.param}`);
  return raise(failure);
}
