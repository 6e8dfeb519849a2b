/**
 * What every operation shares: bearer security, the headers, the list parameters
 * and envelope, and the error envelope with every code of the catalogue
 * (common/errors.ts), grouped by HTTP status.
 */
import { DECLINE_CODES } from '../../common/lifecycle.js';
import { ERROR_CODES, type ErrorCode } from '../../common/errors.js';
import { IDEMPOTENCY_KEY_MAX_LENGTH } from '../schemas/idempotency-key.js';
import { DEFAULT_LIMIT, LIST_QUERY } from '../schemas/lists.js';
import { closedObject, queryParameters, ref, type Schema } from './schema.js';

export const SECURITY_SCHEMES: Record<string, Schema> = {
  secretKey: {
    type: 'http',
    scheme: 'bearer',
    description: 'A secret API key, `sk_test_…` or `sk_live_…`: its project and mode scope every read and write.',
  },
  basicKey: {
    type: 'http',
    scheme: 'basic',
    description: 'The same secret key as the HTTP Basic user name, with an empty password, as Stripe\'s docs call the API: `curl -u sk_test_…:`.',
  },
};

export const HEADERS: Record<string, Schema> = {
  RequestId: {
    description: 'The id of this request (`req_…`); error bodies carry it as `request_id`.',
    required: true,
    schema: { type: 'string', pattern: '^req_[0-9A-Za-z]+$' },
  },
  IdempotentReplayed: {
    description: '`true` when this is the recorded answer of an earlier request with the same `Idempotency-Key`, byte for byte.',
    schema: { type: 'string', enum: ['true'] },
  },
  RetryAfter: {
    description: 'Seconds to wait before retrying.',
    required: true,
    schema: { type: 'string', pattern: '^[0-9]+$' },
  },
  Allow: {
    description: 'The methods the path takes.',
    required: true,
    schema: { type: 'string', examples: ['GET, HEAD, POST'] },
  },
  StripeShouldRetry: {
    description: 'Whether a retry (with the same `Idempotency-Key`) can succeed: `true` on 409 `idempotency_in_flight` and 503, `false` on other 4xx. Stripe SDKs obey it.',
    required: true,
    schema: { type: 'string', enum: ['true', 'false'] },
  },
};

const header = (name: string): Schema => ({ $ref: `#/components/headers/${name}` });
const parameter = (name: string): Schema => ({ $ref: `#/components/parameters/${name}` });

/** The components of the parameters every list takes, by name. */
const LIST_PARAMETER_NAMES: Readonly<Record<string, string>> = { limit: 'Limit', starting_after: 'StartingAfter', ending_before: 'EndingBefore' };
/** What a list's own parameters are not: those it shares with every list (`LIST_PARAMETERS`). */
export const SHARED_LIST_PARAMETERS = Object.keys(LIST_PARAMETER_NAMES);

export const PARAMETERS: Record<string, Schema> = {
  IdempotencyKey: {
    name: 'Idempotency-Key',
    in: 'header',
    required: false,
    description:
      'Makes the request safe to retry: the same key with the same request (method, path, parsed body) gets the first answer again, for 48 hours. ' +
      'Keys are scoped to the API key\'s project and mode.',
    schema: { type: 'string', minLength: 1, maxLength: IDEMPOTENCY_KEY_MAX_LENGTH, pattern: '^[\\x20-\\x7e]+$' },
  },
  // Every list's parameters, from its joi schema (api/schemas/lists.ts).
  ...Object.fromEntries(
    queryParameters(LIST_QUERY, {
      limit: { description: 'How many objects to return.', schema: { default: DEFAULT_LIMIT } },
      starting_after: { description: 'A cursor: the objects just older than this id (the last id of the previous page).' },
      ending_before: {
        description: 'A cursor: the objects just newer than this id (the first id of the previous page), still listed newest first. Not with `starting_after`.',
      },
    }).map((parameter) => [LIST_PARAMETER_NAMES[parameter.name as string], parameter]),
  ),
};

export const LIST_PARAMETERS = [parameter('Limit'), parameter('StartingAfter'), parameter('EndingBefore')];
export const IDEMPOTENCY_PARAMETER = parameter('IdempotencyKey');

/** Any string is taken: an id of another shape names nothing, and gets 404 like an unknown one. */
export function idParameter(description: string, example: string): Schema {
  return { name: 'id', in: 'path', required: true, description, schema: { type: 'string', examples: [example] } };
}

/** The list envelope around items of one schema. */
export function listSchema(item: string, url: Schema, description: string): Schema {
  return closedObject(
    {
      object: { const: 'list' },
      url,
      has_more: { type: 'boolean', description: 'Whether more objects remain in the direction of the page.' },
      data: { type: 'array', items: ref(item) },
    },
    { description },
  );
}

/** Codes only the operators' dashboard answers: not part of the public API this document describes. */
const DASHBOARD_ONLY: readonly ErrorCode[] = ['dashboard_action_forbidden'];

/** Codes answered with each status. A cursor naming nothing is `resource_missing` with 400. */
function codesByStatus(): Map<number, ErrorCode[]> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const [code, info] of Object.entries(ERROR_CODES) as Array<[ErrorCode, (typeof ERROR_CODES)[ErrorCode]]>) {
    if (DASHBOARD_ONLY.includes(code)) continue;
    byStatus.set(info.status, [...(byStatus.get(info.status) ?? []), code]);
  }
  byStatus.get(400)?.push('resource_missing');
  return byStatus;
}

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad request',
  401: 'Unauthorized',
  402: 'Payment required',
  404: 'Not found',
  405: 'Method not allowed',
  409: 'Conflict',
  413: 'Body too large',
  415: 'Unsupported media type',
  429: 'Too many requests',
  500: 'Internal error',
  503: 'Unavailable',
};

/** The headers of an error answer with this status. */
function errorHeaders(status: number): Schema {
  const headers: Schema = { 'Request-Id': header('RequestId') };
  if (status === 409 || status === 429 || status === 503) headers['Retry-After'] = header('RetryAfter');
  if ((status >= 400 && status < 500) || status === 503) headers['Stripe-Should-Retry'] = header('StripeShouldRetry');
  if (status === 405) headers.Allow = header('Allow');
  return headers;
}

/** `Error400`, `Error401`, …: one schema and one response per status, each with its codes. */
export function errorComponents(): { schemas: Record<string, Schema>; responses: Record<string, Schema> } {
  const schemas: Record<string, Schema> = {};
  const responses: Record<string, Schema> = {};
  for (const [status, codes] of codesByStatus()) {
    const types = [...new Set(codes.map((code) => ERROR_CODES[code].type))];
    // A decline (402) also says why, and carries the intent as the decline left it.
    const declined: Record<string, Schema> =
      status === 402
        ? {
            operator_decline_code: { type: 'string', enum: Object.keys(DECLINE_CODES), description: "The operator's reason, normalised (see `/docs/errors`)." },
            payment_intent: ref('PaymentIntent'),
          }
        : {};
    schemas[`Error${status}`] = closedObject(
      {
        error: closedObject(
          {
            type: { type: 'string', enum: types },
            code: { type: 'string', enum: codes, description: 'What went wrong; see `doc_url`.' },
            message: { type: 'string', description: 'For people; may change. Branch on `code`.' },
            param: { type: 'string', description: 'The input at fault, e.g. `amount`, `allowed_operators[2]`, `metadata[color]`.' },
            ...declined,
            request_id: { type: 'string', pattern: '^req_[0-9A-Za-z]+$', description: 'The request that got this answer (of the first one, in a replay).' },
            doc_url: { type: 'string', format: 'uri', description: 'This code on the error reference page, `/docs/errors#CODE`.' },
          },
          { optional: ['param'] },
        ),
      },
      { description: `The error envelope for status ${status}.` },
    );
    responses[`Error${status}`] = {
      description: `${STATUS_TEXT[status] ?? `Status ${status}`}: ${codes.map((code) => `\`${code}\``).join(', ')}.`,
      headers: errorHeaders(status),
      content: { 'application/json': { schema: ref(`Error${status}`) } },
    };
  }
  return { schemas, responses };
}

/** Error answers every `/v1` operation can give, whatever it does. */
const COMMON_ERRORS = [401, 429, 500, 503];

/** These statuses' error answers; with `keyed` (the default), those of every `/v1` operation too. */
export function errorResponses(statuses: number[], options: { keyed?: boolean } = {}): Record<string, Schema> {
  const all = [...new Set([...statuses, ...(options.keyed === false ? [] : COMMON_ERRORS)])].sort((a, b) => a - b);
  return Object.fromEntries(all.map((status) => [String(status), { $ref: `#/components/responses/Error${status}` }]));
}

/** A 200 answer with a JSON body; creates also say when it is a replay. */
export function okResponse(description: string, schema: Schema, options: { replayable?: boolean } = {}): Record<string, Schema> {
  const headers: Schema = { 'Request-Id': header('RequestId') };
  if (options.replayable) headers['Idempotent-Replayed'] = header('IdempotentReplayed');
  return { '200': { description, headers, content: { 'application/json': { schema } } } };
}

export const METADATA_SCHEMA_NAME = 'Metadata';
