/** `/v1/webhook_endpoints`: create, list, retrieve, and the attempts of one endpoint. */
import { ALL_EVENTS, EVENT_TYPES } from '../../common/events.js';
import type { presentWebhookAttempt, presentWebhookEndpoint } from '../../common/presenters.js';
import { DESCRIPTION_MAX_LENGTH } from '../schemas/validate.js';
import { URL_MAX_LENGTH, WEBHOOK_ENDPOINT_CREATE_FIELDS } from '../schemas/webhook-endpoints.js';
import { errorResponses, IDEMPOTENCY_PARAMETER, idParameter, LIST_PARAMETERS, listSchema, okResponse } from './components.js';
import { closedObject, nullable, ref, requestBody, type DocumentPart, type Schema } from './schema.js';
import { EVENT_ID } from './events.js';

type EndpointField = keyof ReturnType<typeof presentWebhookEndpoint>;
type AttemptField = keyof ReturnType<typeof presentWebhookAttempt>;

const ENDPOINT_ID = '^we_[0-9A-Za-z]+$';

export function webhookEndpointsPart(): DocumentPart {
  const events: Schema = {
    type: 'array',
    items: { type: 'string', enum: [...EVENT_TYPES, ALL_EVENTS] },
    minItems: 1,
    uniqueItems: true,
  };
  const description: Schema = { type: 'string', maxLength: DESCRIPTION_MAX_LENGTH };
  const url: Schema = { type: 'string', maxLength: URL_MAX_LENGTH, format: 'uri' };

  const create = requestBody('WebhookEndpointCreate', WEBHOOK_ENDPOINT_CREATE_FIELDS, {
    url: {
      ...url,
      description:
        'Absolute `http(s)` URL without credentials; `https` only in live mode, where local, private, link-local and multicast addresses are refused.',
      examples: ['https://example.com/hooks'],
    },
    enabled_events: { ...events, description: `Event types to receive, or \`${ALL_EVENTS}\` for all. Default \`["${ALL_EVENTS}"]\`.` },
    description,
    metadata: {},
  });

  const endpoint = closedObject(
    {
      id: { type: 'string', pattern: ENDPOINT_ID },
      object: { const: 'webhook_endpoint' },
      url,
      enabled_events: events,
      description: nullable(description),
      metadata: ref('Metadata'),
      status: { type: 'string', enum: ['enabled', 'disabled'] },
      livemode: { type: 'boolean' },
      created: { type: 'integer', description: 'Unix seconds.' },
      secret: {
        type: 'string',
        pattern: '^whsec_[A-Za-z0-9+/]+=*$',
        description: 'The signing secret: in the create response (and its replays) only.',
      },
    } satisfies Record<EndpointField, Schema>,
    { optional: ['secret'], description: 'Where events are delivered, signed (Standard Webhooks).' },
  );

  const attempt = closedObject(
    {
      id: { type: 'string', pattern: '^wha_[0-9A-Za-z]+$' },
      object: { const: 'webhook_attempt' },
      webhook_endpoint: { type: 'string', pattern: ENDPOINT_ID },
      event: { type: 'string', pattern: EVENT_ID },
      attempt: { type: 'integer', minimum: 1 },
      created: { type: 'integer', description: 'Unix seconds.' },
      duration_ms: { type: 'number', minimum: 0 },
      succeeded: { type: 'boolean' },
      http_status: { type: ['integer', 'null'], description: 'The receiver\'s status, when it answered.' },
      error: {
        type: ['string', 'null'],
        description: 'null on a 2xx; else `http_error`, `timeout`, `connection_error`, `address_refused` or `redirect`.',
      },
      response_body: { type: ['string', 'null'], description: 'The first 1 KiB of the receiver\'s answer.' },
      livemode: { type: 'boolean' },
    } satisfies Record<AttemptField, Schema>,
    { description: 'One delivery attempt of one event to one endpoint.' },
  );

  const base = '/v1/webhook_endpoints';
  const tags = ['Webhook endpoints'];
  const id = idParameter('The webhook endpoint\'s id.', 'we_00VbYV85n9aIzXB1ggNYQfQ');
  return {
    tag: { name: tags[0] as string, description: 'Endpoints that receive events, and their delivery attempts.' },
    schemas: {
      WebhookEndpointCreate: create.schema,
      WebhookEndpoint: endpoint,
      WebhookEndpointList: listSchema('WebhookEndpoint', { const: base }, 'A page of webhook endpoints, newest first.'),
      WebhookAttempt: attempt,
      WebhookAttemptList: listSchema(
        'WebhookAttempt',
        { type: 'string', pattern: `^${base}/we_[0-9A-Za-z]+/attempts$` },
        'A page of delivery attempts, newest first.',
      ),
    },
    paths: {
      [base]: {
        post: {
          operationId: 'createWebhookEndpoint',
          summary: 'Create a webhook endpoint',
          tags,
          parameters: [IDEMPOTENCY_PARAMETER],
          requestBody: create.body,
          responses: {
            ...okResponse('The created endpoint, with its signing `secret`.', ref('WebhookEndpoint'), { replayable: true }),
            ...errorResponses([400, 409, 413, 415]),
          },
        },
        get: {
          operationId: 'listWebhookEndpoints',
          summary: 'List webhook endpoints',
          tags,
          parameters: LIST_PARAMETERS,
          responses: { ...okResponse('A page of endpoints (without secrets).', ref('WebhookEndpointList')), ...errorResponses([400]) },
        },
      },
      [`${base}/{id}`]: {
        get: {
          operationId: 'retrieveWebhookEndpoint',
          summary: 'Retrieve a webhook endpoint',
          tags,
          parameters: [id],
          responses: { ...okResponse('The endpoint (without its secret).', ref('WebhookEndpoint')), ...errorResponses([400, 404]) },
        },
      },
      [`${base}/{id}/attempts`]: {
        get: {
          operationId: 'listWebhookAttempts',
          summary: 'List the delivery attempts of an endpoint',
          tags,
          parameters: [id, ...LIST_PARAMETERS],
          responses: { ...okResponse('A page of attempts.', ref('WebhookAttemptList')), ...errorResponses([400, 404]) },
        },
      },
    },
  };
}
