import { bodySchema } from './body.js';
import { PHONE_NUMBER_ERRORS, phoneNumber, restoreFormPlus } from './payment-intent-lifecycle.js';
import { checkQuery } from './query.js';

const RESOLVE_QUERY = bodySchema({ phone_number: phoneNumber().required() }, { phone_number: PHONE_NUMBER_ERRORS });

/**
 * `GET /v1/operators/resolve?phone_number=…`. A `+` written as is reads as a space,
 * and is taken as the `+` it was meant to be, as in a confirm's form body
 * (`restoreFormPlus`); `%2B` works too.
 */
export function parseResolveQuery(querystring: string): string {
  const query = new URLSearchParams(querystring);
  const given = query.getAll('phone_number');
  if (given.length === 1) query.set('phone_number', restoreFormPlus(given[0]) as string);
  return checkQuery(RESOLVE_QUERY, query).phone_number as string;
}
