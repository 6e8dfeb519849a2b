/**
 * The OpenAPI document passes a real linter (Redocly's, recommended-strict rules),
 * and agrees with the code it describes: the parsers' field tables, the presenters'
 * output, the error catalogue, the event catalog. ajv judges the samples against it.
 */
import test from 'ava';
import { createConfig, lintFromString } from '@redocly/openapi-core';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

import { buildOpenApiDocument } from '../../../api/openapi/document.js';
import type { BodySchema } from '../../../api/schemas/body.js';
import { PAYMENT_INTENT_CANCEL, PAYMENT_INTENT_CONFIRM, PAYMENT_INTENT_UPDATE } from '../../../api/schemas/payment-intent-lifecycle.js';
import { parsePaymentIntentCreate, PAYMENT_INTENT_CREATE, PAYMENT_INTENT_CREATE_FIELDS } from '../../../api/schemas/payment-intents.js';
import { REFUND_CREATE, REFUND_UPDATE } from '../../../api/schemas/refunds.js';
import {
  parseWebhookEndpointCreate,
  WEBHOOK_ENDPOINT_CREATE,
  WEBHOOK_ENDPOINT_CREATE_FIELDS,
  WEBHOOK_ENDPOINT_RECOVER,
  WEBHOOK_ENDPOINT_RESEND,
  WEBHOOK_ENDPOINT_ROTATE,
  WEBHOOK_ENDPOINT_UPDATE,
} from '../../../api/schemas/webhook-endpoints.js';
import type { BodyFields } from '../../../api/schemas/fields.js';
import type { PaymentIntentDoc, WebhookAttemptDoc, WebhookEndpointDoc } from '../../../common/documents.js';
import { ERROR_CODES, errorBody, type ErrorCode } from '../../../common/errors.js';
import { ALL_EVENTS, createdEventJson, EVENT_TYPES } from '../../../common/events.js';
import { toPairs } from '../../../common/metadata.js';
import { listEnvelopeJson, presentPaymentIntent, presentWebhookAttempt, presentWebhookEndpoint } from '../../../common/presenters.js';

const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- a JSON document walked by key

const OPERATORS = ['mtn_momo', 'orange_money', 'wave', 'mpesa'];
const doc = buildOpenApiDocument({ operators: OPERATORS, defaultCurrency: 'xof' }, 'https://pay.acme.test') as Json;
const schemas = doc.components.schemas as Json;

const ajv = new Ajv2020({ allErrors: true, strict: true });
addFormats(ajv);
ajv.addVocabulary(['openapi', 'info', 'servers', 'security', 'tags', 'paths', 'components']);
ajv.addSchema(doc, 'openapi.json');
const validator = (name: string) => ajv.getSchema(`openapi.json#/components/schemas/${name}`)!;

function valid(name: string, value: unknown): string | null {
  const validate = validator(name);
  return validate(value) ? null : ajv.errorsText(validate.errors);
}

test('passes Redocly\'s linter with the recommended-strict rules, without a warning', async (t) => {
  const config = await createConfig({ extends: ['recommended-strict'] });
  const problems = await lintFromString({ source: JSON.stringify(doc, null, 2), absoluteRef: 'openapi.json', config });
  t.deepEqual(
    problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`),
    [],
  );
  t.is(doc.openapi, '3.1.0');
});

const BODIES: Array<[string, BodyFields]> = [
  ['PaymentIntentCreate', PAYMENT_INTENT_CREATE_FIELDS],
  ['WebhookEndpointCreate', WEBHOOK_ENDPOINT_CREATE_FIELDS],
];

const JSON_TYPES = { integer: 'integer', string: 'string', boolean: 'boolean', string_array: 'array' } as const;

for (const [name, fields] of BODIES) {
  test(`${name} has exactly the fields the parser accepts, with their types and required ones`, (t) => {
    const schema = schemas[name];
    t.deepEqual(Object.keys(schema.properties), Object.keys(fields));
    t.deepEqual(schema.required, Object.keys(fields).filter((f) => fields[f]?.required));
    t.false(schema.additionalProperties);
    for (const [field, spec] of Object.entries(fields)) {
      const property = schema.properties[field];
      if (spec.type === 'metadata') {
        t.is(property.$ref, '#/components/schemas/Metadata', field);
        continue;
      }
      const type = Array.isArray(property.type) ? property.type : [property.type];
      t.is(type[0], JSON_TYPES[spec.type], field);
      t.is(type.includes('null'), spec.nullable === true, `${field} is nullable in both or neither`);
    }
  });
}

const JOI_BODIES: Array<[string, BodySchema]> = [
  ['PaymentIntentCreate', PAYMENT_INTENT_CREATE],
  ['PaymentIntentUpdate', PAYMENT_INTENT_UPDATE],
  ['PaymentIntentConfirm', PAYMENT_INTENT_CONFIRM],
  ['PaymentIntentCancel', PAYMENT_INTENT_CANCEL],
  ['WebhookEndpointCreate', WEBHOOK_ENDPOINT_CREATE],
  ['WebhookEndpointUpdate', WEBHOOK_ENDPOINT_UPDATE],
  ['WebhookEndpointRotateSecret', WEBHOOK_ENDPOINT_ROTATE],
  ['WebhookEndpointResend', WEBHOOK_ENDPOINT_RESEND],
  ['WebhookEndpointRecover', WEBHOOK_ENDPOINT_RECOVER],
  ['RefundCreate', REFUND_CREATE],
  ['RefundUpdate', REFUND_UPDATE],
];

for (const [name, body] of JOI_BODIES) {
  test(`${name} is generated from the parser's joi schema: its fields, required ones and every bound`, (t) => {
    const generated = body.schema['~standard'].jsonSchema.input({ target: 'draft-2020-12' }) as Json;
    const schema = schemas[name];
    t.deepEqual(Object.keys(schema.properties), Object.keys(generated.properties));
    t.deepEqual(schema.required, generated.required ?? []);
    for (const [field, property] of Object.entries(generated.properties as Json)) {
      for (const keyword of ['minimum', 'maximum', 'minLength', 'maxLength', 'minItems', 'pattern', '$ref']) {
        if (property[keyword] !== undefined) t.is(schema.properties[field][keyword], property[keyword], `${name}.${field} ${keyword}`);
      }
      for (const value of (property.enum ?? []) as unknown[]) t.true(schema.properties[field].enum.includes(value), `${name}.${field} enum`);
    }
  });
}

test('lengths the parser counts in code points are maxLength in the document (JSON Schema counts code points too)', (t) => {
  t.is(schemas.PaymentIntentConfirm.properties.otp.maxLength, 16);
  t.is(schemas.PaymentIntentCreate.properties.description.maxLength, 1000);
  t.is(schemas.WebhookEndpointCreate.properties.url.maxLength, 2048);
});

test('both request media types share one schema; lists and maps are deepObject in a form', (t) => {
  const content = doc.paths['/v1/payment_intents'].post.requestBody.content;
  t.deepEqual(Object.keys(content), ['application/json', 'application/x-www-form-urlencoded']);
  t.deepEqual(content['application/json'].schema, content['application/x-www-form-urlencoded'].schema);
  t.deepEqual(Object.keys(content['application/x-www-form-urlencoded'].encoding), ['metadata', 'allowed_operators']);
});

const NOW = Math.floor(Date.now() / 1000);
const piContext = { operators: OPERATORS, defaultCurrency: 'xof', now: NOW };

test('what the parser accepts the document accepts, and what the document bounds the parser refuses', (t) => {
  const accepted: Array<Record<string, unknown>> = [
    { amount: 1 },
    { amount: 999999999999, currency: 'XOF', description: null, metadata: JSON.parse('{"a.b":"1","$x":"2","__proto__":"3"}'), allowed_operators: ['wave'], selected_operator: 'wave', automatic_operator: false, expires_at: NOW + 3600 },
    { amount: 5, description: 'x'.repeat(1000), metadata: Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`${'k'.repeat(38)}${i}`, 'v'.repeat(500)])) },
  ];
  for (const body of accepted) {
    t.notThrows(() => parsePaymentIntentCreate(body, piContext));
    t.is(valid('PaymentIntentCreate', body), null);
  }
  const refused: Array<Record<string, unknown>> = [
    { amount: 0 },
    { amount: 1_000_000_000_000 },
    { amount: '5' },
    { amount: 5, colour: 'red' },
    { amount: 5, description: 'x'.repeat(1001) },
    { amount: 5, metadata: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, 'v'])) },
    { amount: 5, metadata: { ['k'.repeat(41)]: 'v' } },
    { amount: 5, metadata: { k: 'v'.repeat(501) } },
    { amount: 5, metadata: { '': 'v' } },
    { amount: 5, allowed_operators: [] },
    { amount: 5, allowed_operators: ['wave', 'wave'] },
    { amount: 5, allowed_operators: ['paypal'] },
    { amount: 5, automatic_operator: 'true' },
  ];
  for (const body of refused) {
    t.throws(() => parsePaymentIntentCreate(body, piContext), undefined, JSON.stringify(body).slice(0, 80));
    t.not(valid('PaymentIntentCreate', body), null, JSON.stringify(body).slice(0, 80));
  }
  for (const body of [{ url: 'https://example.com/h', enabled_events: [ALL_EVENTS] }, { url: 'http://127.0.0.1:9/h', enabled_events: [...EVENT_TYPES], description: null }]) {
    // As npm test runs it: test mode may name a local receiver (WEBHOOK_ALLOW_PRIVATE_TARGETS).
    t.notThrows(() => parseWebhookEndpointCreate(body, { livemode: false, allowPrivateTargets: true }));
    t.is(valid('WebhookEndpointCreate', body), null);
  }
  for (const body of [{}, { url: 'https://example.com/h', enabled_events: [] }, { url: 'https://example.com/h', enabled_events: ['nope'] }, { url: `https://example.com/${'x'.repeat(2048)}` }]) {
    t.throws(() => parseWebhookEndpointCreate(body, { livemode: false }));
    t.not(valid('WebhookEndpointCreate', body), null, JSON.stringify(body).slice(0, 80));
  }
});

const piDoc: PaymentIntentDoc = {
  _id: 'pi_00VbYV85n9aIzXB1ggNYQfQ', project: 'acme', livemode: false, amount: 100, currency: 'xof', description: null,
  status: 'new', client_secret: 'pi_00VbYV85n9aIzXB1ggNYQfQ_secret_abc', automatic_operator: true,
  allowed_operators: ['wave'], selected_operator: null, metadata: toPairs(JSON.parse('{"a.b":"1","$c":"2","__proto__":"3"}')),
  created: 1, expires_at: 2, idem: 'x', idem_fp: 'y', idem_expires_at: 3,
};
const endpointDoc: WebhookEndpointDoc = {
  _id: 'we_00VbYV85n9aIzXB1ggNYQfQ', project: 'acme', livemode: false, url: 'https://example.com/h', enabled_events: ['*'],
  description: 'x', metadata: [], status: 'enabled', secret: 'whsec_c2VjcmV0', created: 1, failing_since: null, disabled_reason: null,
};
const attemptDoc: WebhookAttemptDoc = {
  _id: 'wha_00VbYV85n9aIzXB1ggNYQfQ', project: 'acme', livemode: false, endpoint_id: endpointDoc._id, event_id: 'evt_00VbYV85n9aIzXB1ggNYQfQ',
  attempt: 1, created: 1, duration_ms: 12.5, http_status: null, error: 'timeout', succeeded: false, response_body: null,
};

test('the presenters\' objects match the document exactly: every field described, none missing', (t) => {
  const pi = presentPaymentIntent(piDoc);
  t.is(valid('PaymentIntent', JSON.parse(JSON.stringify(pi))), null);
  t.deepEqual(Object.keys(schemas.PaymentIntent.properties), Object.keys(pi));
  t.not(valid('PaymentIntent', { ...pi, project: 'acme' }), null, 'a field the document does not describe fails');
  const { client_secret: _secret, ...withoutSecret } = pi;
  t.not(valid('PaymentIntent', withoutSecret), null, 'client_secret is required on every read');

  const endpoint = presentWebhookEndpoint(endpointDoc, { withSecret: true });
  t.is(valid('WebhookEndpoint', JSON.parse(JSON.stringify(endpoint))), null);
  t.is(valid('WebhookEndpoint', JSON.parse(JSON.stringify(presentWebhookEndpoint(endpointDoc, { withSecret: false })))), null);
  t.deepEqual(Object.keys(schemas.WebhookEndpoint.properties), Object.keys(endpoint));

  const attempt = presentWebhookAttempt(attemptDoc);
  t.is(valid('WebhookAttempt', attempt), null);
  t.deepEqual(Object.keys(schemas.WebhookAttempt.properties), Object.keys(attempt));
});

test('events and list envelopes match the document', (t) => {
  const event = JSON.parse(createdEventJson(piDoc));
  t.is(valid('Event', event), null);
  t.deepEqual(schemas.Event.properties.type.enum, [...EVENT_TYPES]);
  const list = JSON.parse(listEnvelopeJson('/v1/payment_intents', [JSON.stringify(presentPaymentIntent(piDoc))], true));
  t.is(valid('PaymentIntentList', list), null);
  t.not(valid('PaymentIntentList', { ...list, url: '/v1/events' }), null);
  t.is(valid('EventList', JSON.parse(listEnvelopeJson('/v1/events', [createdEventJson(piDoc)], false))), null);
  const attempts = JSON.parse(listEnvelopeJson(`/v1/webhook_endpoints/${endpointDoc._id}/attempts`, [JSON.stringify(presentWebhookAttempt(attemptDoc))], false));
  t.is(valid('WebhookAttemptList', attempts), null);
});

test('every code of the catalogue is documented with its status, and its rendered envelope validates', (t) => {
  for (const [code, info] of Object.entries(ERROR_CODES) as Array<[ErrorCode, (typeof ERROR_CODES)[ErrorCode]]>) {
    // The operators' dashboard's own answer, not the public API's.
    if (code === 'dashboard_action_forbidden') {
      t.is(schemas[`Error${info.status}`], undefined);
      continue;
    }
    const schema = schemas[`Error${info.status}`];
    t.truthy(schema, `Error${info.status}`);
    t.true(schema.properties.error.properties.code.enum.includes(code), code);
    // A decline also carries its reason and the intent (only a 402 does).
    const declined = info.status === 402 ? { operator_decline_code: 'insufficient_funds', payment_intent: presentPaymentIntent(piDoc) } : {};
    const body = JSON.parse(errorBody({ code, message: 'm', param: 'amount', ...declined }, 'req_00VbYV85n9aIzXB1ggNYQfQ', 'http://127.0.0.1:3000'));
    t.is(valid(`Error${info.status}`, body), null, code);
    t.true((doc.components.responses[`Error${info.status}`].description as string).includes(`\`${code}\``));
  }
  t.true(schemas.Error400.properties.error.properties.code.enum.includes('resource_missing'), 'a cursor naming nothing is a 400');
  t.not(valid('Error400', { error: { type: 'api_error', code: 'internal_error', message: 'm', request_id: 'req_1', doc_url: 'http://x/docs/errors' } }), null);
});

test('the operator catalog comes from the configuration', (t) => {
  const other = buildOpenApiDocument({ operators: ['wave'], defaultCurrency: 'usd' }, 'https://pay.acme.test') as Json;
  t.deepEqual(other.components.schemas.PaymentIntent.properties.allowed_operators.items.enum, ['wave']);
  t.deepEqual(schemas.PaymentIntent.properties.allowed_operators.items.enum, OPERATORS);
});

test('every public operation has an id, a 200 and the key security, Bearer or Basic (or none, for the reference pages)', (t) => {
  const ids = new Set<string>();
  for (const [path, item] of Object.entries(doc.paths as Json)) {
    for (const [method, op] of Object.entries(item as Json)) {
      t.truthy(op.operationId, `${method} ${path}`);
      ids.add(op.operationId);
      t.truthy(op.responses['200'], `${method} ${path}`);
      if (path.startsWith('/v1/')) t.is(op.security, undefined, 'inherits the document\'s bearer security');
      else t.deepEqual(op.security, []);
    }
  }
  t.deepEqual(doc.security, [{ secretKey: [] }, { basicKey: [] }]);
  t.true(ids.has('createPaymentIntent'));
});

test('servers and the create samples carry the base URL given, never a hard-coded localhost:3000', (t) => {
  t.deepEqual(doc.servers, [{ url: 'https://pay.acme.test', description: 'This service' }]);
  const samples = doc.paths['/v1/payment_intents'].post['x-codeSamples'] as Array<{ label: string; source: string }>;
  t.is(samples.length, 3);
  for (const sample of samples) t.false(sample.source.includes('localhost:3000'), sample.label);
  t.true(samples[0]!.source.startsWith('curl https://pay.acme.test/v1/payment_intents -u "$KEY:"'));
  t.true(samples[1]!.source.startsWith('curl https://pay.acme.test/v1/payment_intents -H "Authorization: Bearer $KEY"'));
  t.true(samples[2]!.source.includes("{ host: 'pay.acme.test', port: 443, protocol: 'https' }"));
  const local = buildOpenApiDocument({ operators: OPERATORS, defaultCurrency: 'xof' }, 'http://127.0.0.1:4010/') as Json;
  t.deepEqual(local.servers, [{ url: 'http://127.0.0.1:4010', description: 'This service' }]);
  t.true(local.paths['/v1/payment_intents'].post['x-codeSamples'][2].source.includes("{ host: '127.0.0.1', port: 4010, protocol: 'http' }"));
  // The refunds' samples too.
  const refunds = doc.paths['/v1/refunds'].post['x-codeSamples'] as Array<{ label: string; source: string }>;
  for (const sample of refunds) t.false(sample.source.includes('localhost:3000'), sample.label);
  t.true(refunds[0]!.source.startsWith('curl -X POST https://pay.acme.test/v1/refunds'));
  t.true(refunds[1]!.source.includes("{ host: 'pay.acme.test', port: 443, protocol: 'https' }"));
});

test('every code sample of the document carries the base URL given, the refunds\' too', (t) => {
  const samples = Object.entries(doc.paths as Record<string, Record<string, { 'x-codeSamples'?: Array<{ label: string; source: string }> }>>).flatMap(([path, item]) =>
    Object.entries(item).flatMap(([method, op]) => (op['x-codeSamples'] ?? []).map((sample) => ({ at: `${method} ${path} ${sample.label}`, source: sample.source }))),
  );
  t.true(samples.some((s) => s.at.startsWith('post /v1/refunds')), 'the refunds have samples');
  for (const { at, source } of samples) {
    t.false(source.includes('localhost'), at);
    t.true(source.includes('https://pay.acme.test/') || source.includes("{ host: 'pay.acme.test', port: 443, protocol: 'https' }"), at);
  }
});
