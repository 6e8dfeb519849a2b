/**
 * Pieces of an OpenAPI 3.1 document as plain JSON (its schemas are JSON Schema
 * 2020-12), and the field tables of api/schemas turned into request bodies.
 */
import type { BodyFields, FieldSpec, FieldType } from '../schemas/fields.js';

/** A JSON Schema, or any other object of the document. */
export type Schema = { [keyword: string]: unknown };

/** What each resource module adds to the document. */
export interface DocumentPart {
  paths: Record<string, Schema>;
  schemas: Record<string, Schema>;
  tag: { name: string; description: string };
}

export const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });

/** `{type: T}` → `{type: [T, 'null']}`; a `$ref` or an `enum` gets `null` added alongside. */
export function nullable(schema: Schema): Schema {
  if (typeof schema.type === 'string') {
    const out: Schema = { ...schema, type: [schema.type, 'null'] };
    if (Array.isArray(schema.enum)) out.enum = [...(schema.enum as unknown[]), null];
    return out;
  }
  return { anyOf: [schema, { type: 'null' }] };
}

/** An object whose members are exactly these, all present, in this order. */
export function closedObject(properties: Record<string, Schema>, options: { optional?: string[]; description?: string } = {}): Schema {
  return {
    type: 'object',
    ...(options.description ? { description: options.description } : {}),
    additionalProperties: false,
    required: Object.keys(properties).filter((name) => !options.optional?.includes(name)),
    properties,
  };
}

const TYPE_SCHEMAS: Record<FieldType, Schema> = {
  integer: { type: 'integer' },
  string: { type: 'string' },
  boolean: { type: 'boolean' },
  string_array: { type: 'array', items: { type: 'string' } },
  metadata: ref('Metadata'),
};

function fieldSchema(spec: FieldSpec, details: Schema): Schema {
  const base = { ...TYPE_SCHEMAS[spec.type], ...details };
  return spec.nullable ? nullable(base) : base;
}

const FORM_NOTE =
  'As `application/x-www-form-urlencoded`, lists and maps use brackets (`metadata[order]=1042`, `allowed_operators[0]=wave` or `allowed_operators[]=wave`) ' +
  'and every value is a string, read by the field\'s type: an integer from plain decimal digits only, a boolean from `true` or `false`, ' +
  'and the empty string means null (an empty list or map for those). A JSON body is strict: `"5000"` is not an integer.';

/**
 * A create body from its field table (the names and types the parser accepts) and
 * each field's documentation: both media types, one schema.
 */
export function requestBody<F extends BodyFields>(
  name: string,
  fields: F,
  details: { [K in keyof F]: Schema },
): { schema: Schema; body: Schema } {
  const properties: Record<string, Schema> = {};
  const encoding: Record<string, Schema> = {};
  for (const [field, spec] of Object.entries(fields)) {
    properties[field] = fieldSchema(spec, details[field] as Schema);
    if (spec.type === 'string_array' || spec.type === 'metadata') encoding[field] = { style: 'deepObject', explode: true };
  }
  const required = Object.entries(fields).filter(([, spec]) => spec.required).map(([field]) => field);
  const schema: Schema = { type: 'object', additionalProperties: false, required, properties };
  return {
    schema,
    body: {
      required: required.length > 0,
      description: `A JSON object, or the same fields form-encoded. ${FORM_NOTE}`,
      content: {
        'application/json': { schema: ref(name) },
        'application/x-www-form-urlencoded': { schema: ref(name), encoding },
      },
    },
  };
}
