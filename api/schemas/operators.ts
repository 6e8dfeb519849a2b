import { bodySchema } from './body.js';
import { PHONE_NUMBER_ERRORS, phoneNumber } from './payment-intent-lifecycle.js';
import { checkQuery } from './query.js';

const RESOLVE_QUERY = bodySchema({ phone_number: phoneNumber().required() }, { phone_number: PHONE_NUMBER_ERRORS });

/**
 * `GET /v1/operators/resolve?phone_number=…`. A `+` written as is in a query string
 * reads as a space (form encoding), so a number that arrives as a space and digits
 * is taken as the `+` it was meant to be; `%2B` works too.
 */
export function parseResolveQuery(querystring: string): string {
  const query = new URLSearchParams(querystring);
  const given = query.getAll('phone_number');
  if (given.length === 1 && /^ [0-9]/.test(given[0] as string)) query.set('phone_number', `+${(given[0] as string).slice(1)}`);
  return checkQuery(RESOLVE_QUERY, query).phone_number as string;
}
