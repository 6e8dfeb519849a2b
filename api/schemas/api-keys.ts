/**
 * Bodies and query of the admin API's keys (`/admin/v1/api_keys`, docs/api.md "API
 * keys"), on the same joi schemas, form coercion and translator as `/v1`.
 */
import { PROJECT_PATTERN } from '../../common/api-keys.js';
import { errors } from '../../common/errors.js';
import { bodySchema, checkBody } from './body.js';
import type { BodyEncoding } from './fields.js';
import { Joi } from './joi.js';
import { checkQuery } from './query.js';

const projectInvalid = ({ param }: { param: string }) =>
  errors.parameterInvalid(param, 'use 1 to 63 characters from a-z, 0-9, "_" and "-", starting with a letter or digit');

const PROJECT_ERRORS = { 'string.empty': projectInvalid, 'string.pattern.base': projectInvalid };

export const API_KEY_CREATE = bodySchema(
  {
    project: Joi.string().required().pattern(PROJECT_PATTERN),
    livemode: Joi.boolean(),
  },
  { project: PROJECT_ERRORS },
);

const API_KEY_LIST_QUERY = bodySchema({ project: Joi.string().pattern(PROJECT_PATTERN) }, { project: PROJECT_ERRORS });

export function parseApiKeyCreate(raw: Record<string, unknown>, encoding: BodyEncoding = 'json'): { project: string; livemode: boolean } {
  const body = checkBody(API_KEY_CREATE, raw, encoding);
  return { project: body.project as string, livemode: (body.livemode ?? false) as boolean };
}

/** The list's query: an optional `project`. */
export function parseApiKeyListQuery(query: URLSearchParams): { project: string | null } {
  return { project: checkQuery(API_KEY_LIST_QUERY, query).project ?? null };
}
