/** Fields that several bodies share, as joi schemas with their contract errors. */
import type { ArraySchema } from 'joi';

import { ApiError } from '../../common/errors.js';
import { describeValue, type Raise } from './joi-errors.js';
import { Joi } from './joi.js';

export { METADATA_KEY_MAX_LENGTH, METADATA_VALUE_MAX_LENGTH } from './joi.js';
export { METADATA_MAX_KEYS } from '../../common/metadata.js';

export const DESCRIPTION_MAX_LENGTH = 1000;

/** A whole number, JSON's or a form's digits; beyond 2^53 too, so that a huge one is out of range rather than unsafe. */
export const integer = () => Joi.number().integer().unsafe();

/** `description`: at most 1000 code points without NUL or lone surrogate, empty, or null. */
export const description = () => Joi.string().allow(null, '').maxCodePoints(DESCRIPTION_MAX_LENGTH).storable();

/**
 * A non-empty array of distinct names from a catalog (`allowed_operators`,
 * `enabled_events`), checked item by item in order: a string, in the catalog,
 * not listed before. `catalog` reads the validation's vars.
 */
export function distinctNames(catalog: (vars: Record<string, unknown>) => readonly string[]): ArraySchema {
  const item = Joi.string().custom((value: string, helpers) => {
    if (!catalog(helpers.prefs.context ?? {}).includes(value)) return helpers.error('names.unknown');
    const list = helpers.state.ancestors[0] as unknown[];
    if (list.indexOf(value) < (helpers.state.path?.at(-1) as number)) return helpers.error('names.duplicate');
    return value;
  });
  return Joi.array().min(1).items(item);
}

function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** The errors of a `distinctNames` field. */
export function distinctNamesErrors(options: {
  /** What one item is: "operator name", "event type". */
  noun: string;
  /** The message of `parameter_invalid_empty`. */
  emptyMessage: string;
  notInCatalog: Raise;
}): Record<string, Raise> {
  const { noun } = options;
  return {
    'array.base': ({ param, value }) => new ApiError('parameter_invalid', `Invalid array: ${describeValue(value)}. The ${param} parameter must be an array of ${noun}s.`, param),
    'array.min': ({ param }) => new ApiError('parameter_invalid_empty', options.emptyMessage, param),
    'string.base': ({ param, value }) => new ApiError('parameter_invalid_string', `Invalid string: ${describeValue(value)}. ${capitalize(noun)}s are strings.`, param),
    'string.empty': options.notInCatalog,
    'names.unknown': options.notInCatalog,
    'names.duplicate': ({ param, value }) => new ApiError('parameter_invalid', `Invalid ${param}: ${describeValue(value)} is listed twice.`, param),
  };
}

/** `Invalid allowed_operators[1]: "paypal" is not an operator of the catalog (mtn_momo, wave).` */
export const notAnOperator: Raise = ({ param, value, vars }) =>
  new ApiError('operator_invalid', `Invalid ${param}: ${describeValue(value)} is not an operator of the catalog (${(vars.operators as string[]).join(', ')}).`, param);

/** The operator catalog of a validation's vars. */
export const operatorsOf = (vars: Record<string, unknown>): readonly string[] => vars.operators as string[];

/**
 * The errors of `Joi.string().valid(...names).allow(null)`: joi checks the allowed
 * values before the type, so a value that is no string is told so here.
 */
export function oneOfErrors(names: readonly string[]): Record<string, Raise> {
  return {
    'any.only': ({ param, value }) =>
      typeof value === 'string'
        ? new ApiError('parameter_invalid', `Invalid ${param}: ${describeValue(value)}; use one of ${names.join(', ')}.`, param)
        : new ApiError('parameter_invalid_string', `Invalid string: ${describeValue(value)}. The ${param} parameter must be a string.`, param),
  };
}
