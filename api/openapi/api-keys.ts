/** `/v1/api_keys`: a project's own keys (list, create, roll), managed with one of its secret keys. */
import { errorResponses, idParameter, LIST_PARAMETERS, listSchema, okResponse } from './components.js';
import { closedObject, nullable, ref, type DocumentPart, type Schema } from './schema.js';
import type { presentApiKey } from '../../common/presenters.js';

type ApiKeyField = keyof ReturnType<typeof presentApiKey>;

export function apiKeysPart(): DocumentPart {
  const object = closedObject(
    {
      id: { type: 'string', pattern: '^key_[0-9A-Za-z]+$' },
      object: { const: 'api_key' },
      project: { type: 'string' },
      livemode: { type: 'boolean', description: 'The mode of the key: a key sees and makes keys of its own mode only.' },
      created: { type: 'integer', description: 'Unix seconds.' },
      last4: { type: 'string', description: 'The last four characters of the secret.' },
      revoked_at: nullable({ type: 'integer', description: 'Unix seconds; a revoked key gets 401 everywhere.' }),
      secret: { type: 'string', pattern: '^sk_(test|live)_[0-9A-Za-z]+$', description: 'In the answer of a create or a roll only: it is stored as a hash and never shown again.' },
    } satisfies Record<ApiKeyField, Schema>,
    { description: 'A secret key of the project and mode.', optional: ['secret'] },
  );
  const url = '/v1/api_keys';
  const tags = ['API keys'];
  const empty = { required: false, content: { 'application/json': { schema: closedObject({}) }, 'application/x-www-form-urlencoded': { schema: closedObject({}) } } };
  return {
    tag: { name: tags[0] as string, description: "The project's secret keys, of the caller's mode. Not in Stripe's API. `Idempotency-Key` is not replayed here: no record keeps a secret." },
    schemas: {
      ApiKey: object,
      ApiKeyList: listSchema('ApiKey', { const: url }, 'A page of keys, newest first, revoked ones included.'),
    },
    paths: {
      [url]: {
        get: {
          operationId: 'listApiKeys',
          summary: 'List API keys',
          tags,
          parameters: LIST_PARAMETERS,
          responses: { ...okResponse('A page of keys.', ref('ApiKeyList')), ...errorResponses([400]) },
        },
        post: {
          operationId: 'createApiKey',
          summary: 'Create an API key',
          tags,
          requestBody: empty,
          responses: { ...okResponse('The new key, with its secret (shown once).', ref('ApiKey')), ...errorResponses([400, 413, 415]) },
        },
      },
      [`${url}/{id}/roll`]: {
        post: {
          operationId: 'rollApiKey',
          summary: 'Roll an API key',
          description: 'Makes a new key and revokes this one at once.',
          tags,
          parameters: [idParameter("The key's id.", 'key_00VbYV85n9aIzXB1ggNYQfQ')],
          requestBody: empty,
          responses: { ...okResponse('The new key, with its secret (shown once).', ref('ApiKey')), ...errorResponses([400, 404, 413, 415]) },
        },
      },
    },
  };
}
