import { errors } from '../../common/errors.js';

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

/** Retrieve and create routes take no query parameters. */
export function rejectQuery(querystring: string): void {
  checkQueryNames(new URLSearchParams(querystring), []);
}
