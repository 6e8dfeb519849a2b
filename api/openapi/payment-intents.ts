/** `/v1/payment_intents`: create, list, retrieve. */
import type { presentPaymentIntent } from '../../common/presenters.js';
import { DESCRIPTION_MAX_LENGTH } from '../schemas/validate.js';
import {
  EXPIRES_DEFAULT_SECONDS,
  EXPIRES_MAX_SECONDS,
  EXPIRES_MIN_SECONDS,
  MAX_AMOUNT,
  MIN_AMOUNT,
  PAYMENT_INTENT_CREATE_FIELDS,
} from '../schemas/payment-intents.js';
import { errorResponses, IDEMPOTENCY_PARAMETER, idParameter, LIST_PARAMETERS, listSchema, okResponse } from './components.js';
import { closedObject, nullable, ref, requestBody, type DocumentPart, type Schema } from './schema.js';

type PaymentIntentField = keyof ReturnType<typeof presentPaymentIntent>;

export const PAYMENT_INTENT_ID = '^pi_[0-9A-Za-z]+$';

/** Shown by Redoc beside the create operation. */
const CREATE_SAMPLES = [
  {
    lang: 'Shell',
    label: 'curl (form)',
    source: `curl -X POST http://localhost:3000/v1/payment_intents -H "Authorization: Bearer $KEY" \\
  -H 'Idempotency-Key: order-1042' -d amount=5000 -d currency=xof \\
  -d 'allowed_operators[]=wave' -d 'allowed_operators[]=orange_money' -d 'metadata[order]=1042'`,
  },
  {
    lang: 'Shell',
    label: 'curl (JSON)',
    source: `curl -X POST http://localhost:3000/v1/payment_intents -H "Authorization: Bearer $KEY" \\
  -H 'Content-Type: application/json' -H 'Idempotency-Key: order-1042' \\
  -d '{"amount": 5000, "currency": "xof", "allowed_operators": ["wave", "orange_money"], "metadata": {"order": "1042"}}'`,
  },
  {
    lang: 'JavaScript',
    label: 'Stripe SDK',
    source: `import Stripe from 'stripe';
const payments = new Stripe(process.env.KEY, { host: '127.0.0.1', port: 3000, protocol: 'http' });
const intent = await payments.paymentIntents.create(
  { amount: 5000, currency: 'xof', allowed_operators: ['wave'], metadata: { order: '1042' } },
  { idempotencyKey: 'order-1042' },
);`,
  },
];

export function paymentIntentsPart(options: { operators: string[]; defaultCurrency: string }): DocumentPart {
  const operator: Schema = { type: 'string', enum: options.operators };
  const operators: Schema = { type: 'array', items: operator, minItems: 1, uniqueItems: true };
  const description: Schema = { type: 'string', maxLength: DESCRIPTION_MAX_LENGTH, description: `At most ${DESCRIPTION_MAX_LENGTH} characters, no NUL.` };

  const create = requestBody('PaymentIntentCreate', PAYMENT_INTENT_CREATE_FIELDS, {
    amount: { minimum: MIN_AMOUNT, maximum: MAX_AMOUNT, description: 'In the smallest currency unit.', examples: [5000] },
    currency: { pattern: '^[A-Za-z]{3}$', description: `ISO 4217, any case. Default \`${options.defaultCurrency}\`.`, examples: ['xof'] },
    description,
    metadata: {},
    allowed_operators: { ...operators, description: 'Distinct operators from the catalog. Default: the whole catalog, in catalog order.' },
    selected_operator: { ...operator, description: 'One of `allowed_operators`. Default null.' },
    automatic_operator: { description: 'Default `true` without a `selected_operator`, else `false`; `true` with one is a `parameter_conflict`.' },
    expires_at: {
      description: `Unix seconds, from now + ${EXPIRES_MIN_SECONDS} s to now + ${EXPIRES_MAX_SECONDS / 86_400} days. Default now + ${EXPIRES_DEFAULT_SECONDS / 3600} h.`,
    },
  });

  const object = closedObject(
    {
      id: { type: 'string', pattern: PAYMENT_INTENT_ID },
      object: { const: 'payment_intent' },
      amount: { type: 'integer', minimum: MIN_AMOUNT, maximum: MAX_AMOUNT },
      currency: { type: 'string', pattern: '^[a-z]{3}$' },
      description: nullable(description),
      status: { type: 'string', enum: ['new'] },
      client_secret: { type: 'string', description: '`pi_…_secret_…`: for the payer\'s side of a payment. Never log it.' },
      automatic_operator: { type: 'boolean' },
      allowed_operators: operators,
      selected_operator: nullable(operator),
      next_action: { type: 'null', description: 'What the payer must do next; null when nothing is required, as at status `new`.' },
      metadata: ref('Metadata'),
      livemode: { type: 'boolean' },
      created: { type: 'integer', description: 'Unix seconds.' },
      expires_at: { type: 'integer', description: 'Unix seconds.' },
    } satisfies Record<PaymentIntentField, Schema>,
    { description: 'A payment to collect from a payer through a mobile money operator.' },
  );

  const url = '/v1/payment_intents';
  const tags = ['Payment intents'];
  return {
    tag: { name: tags[0] as string, description: 'Payments to collect. Creates go through a queue; the answer is the created object.' },
    schemas: {
      PaymentIntentCreate: create.schema,
      PaymentIntent: object,
      PaymentIntentList: listSchema('PaymentIntent', { const: url }, 'A page of payment intents, newest first.'),
    },
    paths: {
      [url]: {
        post: {
          operationId: 'createPaymentIntent',
          summary: 'Create a payment intent',
          tags,
          'x-codeSamples': CREATE_SAMPLES,
          parameters: [IDEMPOTENCY_PARAMETER],
          requestBody: create.body,
          responses: { ...okResponse('The created payment intent.', ref('PaymentIntent'), { replayable: true }), ...errorResponses([400, 409, 413, 415]) },
        },
        get: {
          operationId: 'listPaymentIntents',
          summary: 'List payment intents',
          tags,
          parameters: LIST_PARAMETERS,
          responses: { ...okResponse('A page of payment intents.', ref('PaymentIntentList')), ...errorResponses([400]) },
        },
      },
      [`${url}/{id}`]: {
        get: {
          operationId: 'retrievePaymentIntent',
          summary: 'Retrieve a payment intent',
          tags,
          parameters: [idParameter('The payment intent\'s id.', 'pi_00VbYV85n9aIzXB1ggNYQfQ')],
          responses: { ...okResponse('The payment intent.', ref('PaymentIntent')), ...errorResponses([400, 404]) },
        },
      },
    },
  };
}
