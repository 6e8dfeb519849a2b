// The list query parameters in the OpenAPI document come from the same joi schemas
// that check them (api/schemas/lists.ts, refunds.ts), as the request bodies do.
import test from 'ava';
import { buildOpenApiDocument } from '../../../api/openapi/document.js';
import { queryParameters } from '../../../api/openapi/schema.js';
import { DEFAULT_LIMIT, EVENT_LIST_QUERY, LIST_QUERY, MAX_LIMIT } from '../../../api/schemas/lists.js';
import { REFUND_LIST_QUERY } from '../../../api/schemas/refunds.js';
import { EVENT_TYPES } from '../../../common/events.js';

type Json = Record<string, unknown>;
const doc = buildOpenApiDocument({ operators: [], defaultCurrency: 'xof' }, 'http://api.test') as { paths: Record<string, Record<string, Json>>; components: { parameters: Record<string, Json> } };

/** The query parameters of an operation, `$ref`s resolved. */
function queryOf(path: string): Json[] {
  const parameters = (doc.paths[path]?.get?.parameters ?? []) as Json[];
  return parameters
    .map((p) => (typeof p.$ref === 'string' ? (doc.components.parameters[p.$ref.split('/').pop() as string] as Json) : p))
    .filter((p) => p.in === 'query');
}

test('every list names exactly the parameters its joi schema takes, in its order', (t) => {
  const lists: Array<[path: string, fields: string[]]> = [
    ['/v1/payment_intents', Object.keys(LIST_QUERY.fields)],
    ['/v1/webhook_endpoints', Object.keys(LIST_QUERY.fields)],
    ['/v1/events', Object.keys(EVENT_LIST_QUERY.fields)],
    ['/v1/refunds', Object.keys(REFUND_LIST_QUERY.fields)],
  ];
  for (const [path, fields] of lists) t.deepEqual(queryOf(path).map((p) => p.name), fields, path);
});

test("limit is an integer from 1 to 100 by the schema's own rule, and an event type one of the catalog", (t) => {
  t.deepEqual(doc.components.parameters.Limit?.schema, { type: 'integer', minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT });
  t.deepEqual((queryOf('/v1/events').find((p) => p.name === 'type')?.schema as Json).enum, [...EVENT_TYPES]);
  t.throws(() => queryParameters(REFUND_LIST_QUERY, {}), { message: /no description/ }, 'a parameter the document does not describe is a build error');
});
