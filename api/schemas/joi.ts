/**
 * The joi that request bodies and queries are written in: joi itself, with the two
 * things the contract needs and joi lacks. String lengths are counted in Unicode
 * code points (joi counts UTF-16 units), and `metadata` is a type of its own,
 * because joi's object clone drops a `__proto__` key, which metadata takes as data.
 * Each addition says how it reads in JSON Schema, so the OpenAPI document
 * (api/openapi/) is generated from the same schemas by joi's own converter.
 */
import BaseJoi, { type AnySchema, type CustomHelpers, type ErrorReport, type StringSchema } from 'joi';

import { METADATA_MAX_KEYS } from '../../common/metadata.js';
import { describeValue } from './joi-errors.js';
import { urlProblem, type UrlRules } from './urls.js';

export const METADATA_KEY_MAX_LENGTH = 40;
export const METADATA_VALUE_MAX_LENGTH = 500;

/** The contract counts lengths in Unicode code points, not UTF-16 units. */
export function codePointLength(s: string): number {
  return [...s].length;
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

export interface ContractString extends StringSchema {
  /** At most `limit` code points (`string.maxCodePoints`, context `limit`). */
  maxCodePoints(limit: number): this;
  /** Text the stores keep as it is: no NUL character (`string.nul`), no lone surrogate (`string.surrogate`). */
  storable(): this;
  /**
   * An absolute http(s) URL that reads the same to every parser (urls.ts); with
   * `target`, one this service sends requests to, under the rules of the context's
   * `livemode` and `allowPrivateTargets`. Each problem is a `url.*` error type.
   */
  webUrl(target?: 'target'): this;
  /**
   * A whole number from `min` to `max` in plain decimal digits, kept a string (a
   * query's values are strings): `string.integerBetween` otherwise. In JSON Schema an
   * integer, so the document shows the parameter as one.
   */
  integerBetween(min: number, max: number): this;
}

export interface ContractJoi extends Omit<BaseJoi.Root, 'string'> {
  string(): ContractString;
  /**
   * A plain object of string values; `metadata.invalid` with context `member` (the
   * key at fault, if one is) and `why`.
   */
  metadata(): AnySchema;
}

type Schema = Record<string, unknown>;

/**
 * A UTF-16 surrogate without its pair: JSON can carry it (`"\\ud800"`), but UTF-8,
 * and so BSON, cannot; the store would keep U+FFFD in its place, and a read would
 * not give back what the create answered.
 */
export function hasLoneSurrogate(value: string): boolean {
  return /\p{Cs}/u.test(value);
}

function metadataProblem(value: unknown): { member?: string; why: string } | null {
  if (!isPlainObject(value)) return { why: `expected an object of string values, got ${describeValue(value)}` };
  const keys = Object.keys(value);
  if (keys.length > METADATA_MAX_KEYS) return { why: `it has ${keys.length} keys, and at most ${METADATA_MAX_KEYS} are allowed` };
  for (const key of keys) {
    const keyLength = codePointLength(key);
    if (keyLength < 1 || keyLength > METADATA_KEY_MAX_LENGTH) return { member: key, why: `keys must be 1 to ${METADATA_KEY_MAX_LENGTH} characters long` };
    if (key.includes('\u0000')) return { member: key, why: 'keys must not contain NUL characters' };
    if (hasLoneSurrogate(key)) return { member: key, why: 'keys must be valid Unicode text (no lone surrogate)' };
    const item = value[key];
    if (typeof item !== 'string') return { member: key, why: `values must be strings, got ${describeValue(item)}` };
    if (codePointLength(item) > METADATA_VALUE_MAX_LENGTH) return { member: key, why: `values must be at most ${METADATA_VALUE_MAX_LENGTH} characters long` };
    if (item.includes('\u0000')) return { member: key, why: 'values must not contain NUL characters' };
    if (hasLoneSurrogate(item)) return { member: key, why: 'values must be valid Unicode text (no lone surrogate)' };
  }
  return null;
}

export const Joi = BaseJoi.extend(
  (joi: BaseJoi.Root) => ({
    type: 'string',
    base: joi.string(),
    rules: {
      maxCodePoints: {
        method(this: StringSchema, limit: number) {
          return this.$_addRule({ name: 'maxCodePoints', args: { limit } });
        },
        args: [{ name: 'limit', assert: (v: unknown) => typeof v === 'number', message: 'must be a number' }],
        validate(value: string, helpers: CustomHelpers, args: { limit: number }): string | ErrorReport {
          // Never fewer code points than UTF-16 units, so the count is needed only past the limit.
          return value.length <= args.limit || codePointLength(value) <= args.limit ? value : helpers.error('string.maxCodePoints', { limit: args.limit });
        },
        // JSON Schema counts characters as code points already.
        jsonSchema: (rule: { args: { limit: number } }, schema: Schema) => ({ ...schema, maxLength: rule.args.limit }),
      },
      webUrl: {
        method(this: StringSchema, target?: 'target') {
          return this.$_addRule({ name: 'webUrl', args: { target: target === 'target' } });
        },
        validate(value: string, helpers: CustomHelpers, args: { target: boolean }): string | ErrorReport {
          const rules = args.target ? (helpers.prefs.context as unknown as UrlRules) : null;
          const problem = urlProblem(value, rules);
          return problem === null ? value : helpers.error(problem);
        },
      },
      integerBetween: {
        method(this: StringSchema, min: number, max: number) {
          return this.$_addRule({ name: 'integerBetween', args: { min, max } });
        },
        args: [
          { name: 'min', assert: (v: unknown) => typeof v === 'number', message: 'must be a number' },
          { name: 'max', assert: (v: unknown) => typeof v === 'number', message: 'must be a number' },
        ],
        validate(value: string, helpers: CustomHelpers, args: { min: number; max: number }): string | ErrorReport {
          return /^[0-9]+$/.test(value) && Number(value) >= args.min && Number(value) <= args.max ? value : helpers.error('string.integerBetween', args);
        },
        jsonSchema: (rule: { args: { min: number; max: number } }, schema: Schema) => {
          const { minLength: _string, ...rest } = schema;
          return { ...rest, type: 'integer', minimum: rule.args.min, maximum: rule.args.max };
        },
      },
      storable: {
        method(this: StringSchema) {
          return this.$_addRule('storable');
        },
        validate(value: string, helpers: CustomHelpers): string | ErrorReport {
          if (value.includes('\u0000')) return helpers.error('string.nul');
          return hasLoneSurrogate(value) ? helpers.error('string.surrogate') : value;
        },
      },
    },
  }),
  // joi's typings do not know an extension's `jsonSchema` yet; joi reads it.
  ({
    type: 'metadata',
    validate(value: unknown, helpers: CustomHelpers) {
      const problem = metadataProblem(value);
      if (problem === null) return { value };
      return { value, errors: helpers.error('metadata.invalid', problem) };
    },
    jsonSchema: () => ({ $ref: '#/components/schemas/Metadata' }),
  }) as BaseJoi.Extension,
) as ContractJoi;
