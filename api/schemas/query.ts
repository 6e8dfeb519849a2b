import { errors } from '../../common/errors.js';
import type { BodySchema } from './body.js';
import { toApiError } from './joi-errors.js';

/**
 * Checks a query string against the parameters a route takes: an unknown one is
 * 400 `parameter_unknown`, a repeated one 400 `parameter_invalid`.
 */
export function checkQueryNames(query: URLSearchParams, allowed: readonly string[]): void {
  const seen = new Set<string>();
  for (const name of query.keys()) if (!allowed.includes(name)) throw errors.parameterUnknown(name);
  for (const name of query.keys()) {
    if (seen.has(name)) throw errors.parameterInvalid(name, 'the parameter is given more than once; give it once');
    seen.add(name);
  }
}

/**
 * A query string against its joi schema (written with `bodySchema`; every value a
 * string): names first, then joi, whose first error is translated. Returns the
 * parameters given, by name.
 */
export function checkQuery(def: BodySchema, query: URLSearchParams, vars: Record<string, unknown> = {}): Record<string, string> {
  checkQueryNames(query, Object.keys(def.fields));
  const params = Object.assign(Object.create(null) as Record<string, string>, Object.fromEntries(query));
  const { error } = def.schema.validate(params, { context: vars });
  const first = error?.details[0];
  if (first !== undefined) throw toApiError(first, def.errors, vars, params);
  return params;
}

/** Retrieve and create routes take no query parameters. */
export function rejectQuery(querystring: string): void {
  checkQueryNames(new URLSearchParams(querystring), []);
}
