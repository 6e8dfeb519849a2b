/** `/v1/webhook_endpoints`: create, list, retrieve, and the attempts of one endpoint. */
import { ALL_EVENTS, EVENT_TYPES } from '../../common/events.js';
import type { presentWebhookAttempt, presentWebhookEndpoint } from '../../common/presenters.js';
import { DESCRIPTION_MAX_LENGTH } from '../schemas/validate.js';
import {
  EXPIRE_PREVIOUS_MAX_SECONDS,
  URL_MAX_LENGTH,
  WEBHOOK_ENDPOINT_CREATE,
  WEBHOOK_ENDPOINT_RECOVER,
  WEBHOOK_ENDPOINT_RESEND,
  WEBHOOK_ENDPOINT_ROTATE,
  WEBHOOK_ENDPOINT_UPDATE,
} from '../schemas/webhook-endpoints.js';
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

  const create = requestBody('WebhookEndpointCreate', WEBHOOK_ENDPOINT_CREATE, {
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

  const update = requestBody('WebhookEndpointUpdate', WEBHOOK_ENDPOINT_UPDATE, {
    url: { ...url, description: 'The rules of create. Applies to the next attempt of every delivery, retries included.' },
    enabled_events: { ...events, description: 'The rules of create.' },
    description,
    metadata: { description: 'Merged into the stored metadata; a key set to "" is removed.' },
    disabled: { description: '`true`: status `disabled`, nothing is sent; `false`: `enabled` again, its failure run cleared.' },
  });
  const rotate = requestBody('WebhookEndpointRotateSecret', WEBHOOK_ENDPOINT_ROTATE, {
    expire_previous_in: {
      minimum: 0,
      maximum: EXPIRE_PREVIOUS_MAX_SECONDS,
      description: `Seconds the previous secret keeps signing every delivery beside the new one (\`webhook-signature: v1,NEW v1,OLD\`). 0 cuts over at once. Default ${EXPIRE_PREVIOUS_MAX_SECONDS}.`,
    },
  });
  const resend = requestBody('WebhookEndpointResend', WEBHOOK_ENDPOINT_RESEND, {
    event: { pattern: EVENT_ID, description: 'A past event of the same project and mode, delivered again with the same `webhook-id`.' },
  });
  const recover = requestBody('WebhookEndpointRecover', WEBHOOK_ENDPOINT_RECOVER, {
    since: { description: 'Unix seconds, at most 7 days back: every subscribed event since then without a successful attempt on this endpoint is delivered again.' },
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
        description: 'The signing secret: in the create and rotate_secret responses (and their replays) only.',
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
  const change = (operationId: string, summary: string, body: Schema | null, answer: string, schema: Schema, statuses = [400, 404, 409, 413, 415]) => ({
    operationId,
    summary,
    tags,
    parameters: [id, IDEMPOTENCY_PARAMETER],
    ...(body ? { requestBody: body } : {}),
    responses: { ...okResponse(answer, schema, { replayable: true }), ...errorResponses(statuses) },
  });
  const deleted = closedObject({ id: { type: 'string', pattern: ENDPOINT_ID }, object: { const: 'webhook_endpoint' }, deleted: { const: true } });
  const recovery = closedObject({
    object: { const: 'recovery' },
    queued: { type: 'integer', minimum: 0, description: 'Delivery chains this recovery queued: events already pending for the endpoint are not queued again.' },
    has_more: { type: 'boolean', description: 'Events were left out: the recovery cap (`WEBHOOK_RECOVER_MAX`) or the endpoint\'s room for redeliveries was reached. Recover again later.' },
  });
  const resent = closedObject({
    object: { const: 'resend' },
    event: { type: 'string', pattern: EVENT_ID },
    webhook_endpoint: { type: 'string', pattern: ENDPOINT_ID },
    queued: { const: 1 },
  });
  return {
    tag: { name: tags[0] as string, description: 'Endpoints that receive events, and their delivery attempts.' },
    schemas: {
      WebhookEndpointCreate: create.schema,
      WebhookEndpointUpdate: update.schema,
      WebhookEndpointRotateSecret: rotate.schema,
      WebhookEndpointResend: resend.schema,
      WebhookEndpointRecover: recover.schema,
      DeletedWebhookEndpoint: deleted,
      WebhookRecovery: recovery,
      WebhookResend: resent,
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
        post: change('updateWebhookEndpoint', 'Update a webhook endpoint', update.body, 'The endpoint, without its secret. Only the fields given change.', ref('WebhookEndpoint')),
        delete: change(
          'deleteWebhookEndpoint',
          'Delete a webhook endpoint',
          null,
          'The endpoint is gone: no further attempts, its id is 404 from now on, and its attempts are deleted with it.',
          ref('DeletedWebhookEndpoint'),
        ),
      },
      [`${base}/{id}/rotate_secret`]: {
        post: change('rotateWebhookEndpointSecret', 'Rotate the signing secret', rotate.body, 'The endpoint with its new `secret`.', ref('WebhookEndpoint')),
      },
      [`${base}/{id}/resend`]: {
        post: change('resendWebhookEvent', 'Deliver one past event again', resend.body, 'The event is queued for this endpoint, as a new attempt chain.', ref('WebhookResend')),
      },
      [`${base}/{id}/recover`]: {
        post: change('recoverWebhookEvents', 'Deliver again what failed since a time', recover.body, 'How many events were queued, and whether some were left out. One recovery per endpoint at a time (409 `webhook_recovery_in_progress`); 400 `webhook_redelivery_limit` when the endpoint has no room for more redeliveries.', ref('WebhookRecovery')),
      },
      [`${base}/{id}/test`]: {
        post: change(
          'testWebhookEndpoint',
          'Send a test event',
          null,
          'The attempt: a `webhook_endpoint.test` event (data: the endpoint, without its secret) sent to this endpoint only. Never listed, never matched by `*`.',
          ref('WebhookAttempt'),
        ),
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
