/**
 * Pieces of an OpenAPI 3.1 document as plain JSON (its schemas are JSON Schema
 * 2020-12), and the joi schemas of api/schemas turned into request bodies by joi's
 * own JSON Schema converter (its Standard Schema interface).
 */
import type { BodySchema } from '../schemas/body.js';

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
    if (Array.isArray(schema.enum) && !schema.enum.includes(null)) out.enum = [...(schema.enum as unknown[]), null];
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

/** What joi's converter makes of a body: an object schema with a property per field. */
interface ObjectJsonSchema {
  properties?: Record<string, Schema>;
  required?: string[];
}

/** What the document says of a query parameter that joi does not: its description, examples, a default. */
export interface ParameterDetails {
  description: string;
  schema?: Schema;
}

/**
 * The query parameters of a query's joi schema (api/schemas/query.ts), in its order,
 * as joi's converter describes them, with the document's details laid over each;
 * `skip` leaves out those described elsewhere (a list's cursors and limit, shared).
 */
export function queryParameters(def: BodySchema, details: Readonly<Record<string, ParameterDetails>>, skip: readonly string[] = []): Schema[] {
  const generated = def.schema['~standard'].jsonSchema.input({ target: 'draft-2020-12' }) as ObjectJsonSchema;
  const required = generated.required ?? [];
  return Object.keys(def.fields)
    .filter((name) => !skip.includes(name))
    .map((name) => {
      const given = details[name];
      if (given === undefined) throw new Error(`query parameter ${name}: no description for the document`);
      return { name, in: 'query', required: required.includes(name), description: given.description, schema: { ...generated.properties?.[name], ...given.schema } };
    });
}

/**
 * A property as joi describes it, with the document's details (descriptions,
 * examples, the configured operator catalog) laid over its non-null part; a
 * nullable field stays nullable.
 */
function fieldSchema(generated: Schema, details: Schema): Schema {
  const types = Array.isArray(generated.type) ? (generated.type as string[]) : null;
  const isNullable = types?.includes('null') ?? false;
  const base: Schema = { ...generated };
  if (types && isNullable) {
    const rest = types.filter((t) => t !== 'null');
    base.type = rest.length === 1 ? rest[0] : rest;
  }
  const merged = { ...base, ...details };
  return isNullable ? nullable(merged) : merged;
}

const FORM_NOTE =
  'As `application/x-www-form-urlencoded`, lists and maps use brackets (`metadata[order]=1042`, `allowed_operators[0]=wave` or `allowed_operators[]=wave`) ' +
  'and every value is a string, read by the field\'s type: an integer from plain decimal digits only, a boolean from `true` or `false`, ' +
  'and the empty string means null (an empty list or map for those). A JSON body is strict: `"5000"` is not an integer.';

/**
 * A request body from its joi schema (the names, types, bounds and required fields
 * the parser checks) and each field's documentation: both media types, one schema.
 */
export function requestBody(name: string, def: BodySchema, details: { [field: string]: Schema }): { schema: Schema; body: Schema } {
  const generated = def.schema['~standard'].jsonSchema.input({ target: 'draft-2020-12' }) as ObjectJsonSchema;
  const properties: Record<string, Schema> = {};
  const encoding: Record<string, Schema> = {};
  for (const [field, spec] of Object.entries(def.fields)) {
    properties[field] = fieldSchema(generated.properties?.[field] ?? {}, details[field] ?? {});
    if (spec.type === 'string_array' || spec.type === 'metadata') encoding[field] = { style: 'deepObject', explode: true };
  }
  const required = generated.required ?? [];
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
