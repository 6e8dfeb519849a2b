import { errors } from '../../common/errors.js';
import { parsePhoneNumber } from './payment-intent-lifecycle.js';
import { checkQueryNames } from './query.js';

/**
 * `GET /v1/operators/resolve?phone_number=…`. A `+` written as is in a query string
 * reads as a space (form encoding), so a number that arrives as a space and digits
 * is taken as the `+` it was meant to be; `%2B` works too.
 */
export function parseResolveQuery(querystring: string): string {
  const query = new URLSearchParams(querystring);
  checkQueryNames(query, ['phone_number']);
  const raw = query.get('phone_number');
  if (raw === null) throw errors.parameterMissing('phone_number');
  return parsePhoneNumber(/^ [0-9]/.test(raw) ? `+${raw.slice(1)}` : raw);
}
