/**
 * The fields a request body takes and the type of each, read from the body's joi
 * schema (body.ts): the names are the only fields accepted (anything else is
 * `parameter_unknown`), and the types coerce a form body's strings.
 */
import type { Description, ObjectSchema } from 'joi';

/** How the body arrived: a JSON object, or a form in Stripe's bracket notation. */
export type BodyEncoding = 'json' | 'form';

export type FieldType = 'integer' | 'string' | 'boolean' | 'string_array' | 'metadata';

export interface FieldSpec {
  type: FieldType;
  /** `null` is a value of the field. (In a form, the empty string is null, but for a list or a map that is not nullable.) */
  nullable?: boolean;
  required?: boolean;
}

export type BodyFields = Readonly<Record<string, FieldSpec>>;

const TYPES: Readonly<Record<string, FieldType>> = {
  number: 'integer',
  string: 'string',
  boolean: 'boolean',
  array: 'string_array',
  metadata: 'metadata',
};

/** The table of an object schema's keys, from its description. */
export function fieldTable(schema: ObjectSchema): BodyFields {
  const keys = (schema.describe().keys ?? {}) as Record<string, Description>;
  const table: Record<string, FieldSpec> = {};
  for (const [name, described] of Object.entries(keys)) {
    const type = TYPES[described.type ?? ''];
    if (type === undefined) throw new Error(`body field ${name}: no form coercion for joi type ${String(described.type)}`);
    const flags = (described.flags ?? {}) as { presence?: string };
    table[name] = {
      type,
      ...(Array.isArray(described.allow) && described.allow.includes(null) ? { nullable: true } : {}),
      ...(flags.presence === 'required' ? { required: true } : {}),
    };
  }
  return table;
}

/** A whole number in plain decimal: no sign but `-`, no exponent, no point, no spaces. */
const DECIMAL_INTEGER = /^-?[0-9]+$/;

function coerceField(value: unknown, spec: FieldSpec): unknown {
  if (typeof value !== 'string') return value;
  if (value === '') {
    // Stripe's way of saying "none": an empty list or map, which the field's check then judges.
    if (spec.type === 'string_array' && !spec.nullable) return [];
    if (spec.type === 'metadata' && !spec.nullable) return Object.create(null) as Record<string, never>;
    // Null, the field's value or the error a JSON null gets (DESIGN.md section 8).
    return null;
  }
  if (spec.type === 'integer' && DECIMAL_INTEGER.test(value)) return Number(value);
  if (spec.type === 'boolean' && (value === 'true' || value === 'false')) return value === 'true';
  return value;
}

/**
 * A form body's values are strings; this gives each known field the type its check
 * expects, when the string is an unambiguous spelling of one: an integer from plain
 * decimal digits only (`"5e3"`, `"5000.0"`, `"abc"` stay strings and are refused as
 * integers), a boolean from `true` or `false`, null from the empty string (`[]` or
 * `{}` for a list or map that null is not a value of). Anything else is left as it is,
 * so the field's check gives the error a JSON body with that value would get.
 * Unknown fields are left for `checkBody`. joi's own conversion is not used: it
 * reads `"5e3"`, `" 5 "` and `"5.0"` as 5000 and 5, and `"TRUE"` as true.
 */
export function coerceFormBody(body: Record<string, unknown>, fields: BodyFields): Record<string, unknown> {
  const out = Object.create(null) as Record<string, unknown>;
  for (const name of Object.keys(body)) {
    const spec = Object.hasOwn(fields, name) ? fields[name] : undefined;
    out[name] = spec ? coerceField(body[name], spec) : body[name];
  }
  return out;
}

/** The body as the checks read it: JSON as it is (strict), a form coerced by field type. */
export function typedBody(body: Record<string, unknown>, encoding: BodyEncoding, fields: BodyFields): Record<string, unknown> {
  return encoding === 'form' ? coerceFormBody(body, fields) : body;
}
