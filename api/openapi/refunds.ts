/** `/v1/refunds`: create, list (with a `payment_intent` filter), retrieve, update. */
import { REFUND_REASONS, REFUND_STATUSES, SERVICE_REFUND_REASONS } from '../../common/documents.js';
import { DECLINE_CODES } from '../../common/lifecycle.js';
import type { presentRefund } from '../../common/presenters.js';
import { MAX_AMOUNT, MIN_AMOUNT } from '../schemas/payment-intents.js';
import { REFUND_CREATE, REFUND_LIST_QUERY, REFUND_UPDATE } from '../schemas/refunds.js';
import { DESCRIPTION_MAX_LENGTH } from '../schemas/validate.js';
import { errorResponses, IDEMPOTENCY_PARAMETER, idParameter, LIST_PARAMETERS, listSchema, okResponse, SHARED_LIST_PARAMETERS } from './components.js';
import { PAYMENT_INTENT_ID, sdkClientOptions } from './payment-intents.js';
import { closedObject, nullable, queryParameters, ref, requestBody, type DocumentPart, type Schema } from './schema.js';

type RefundField = keyof ReturnType<typeof presentRefund>;

export const REFUND_ID = '^re_[0-9A-Za-z]+$';

/** Beside the create operation, with the service's own base URL, as the payment intents' samples (createSamples). */
function createRefundSamples(baseUrl: string): Array<{ lang: string; label: string; source: string }> {
  const base = baseUrl.replace(/\/+$/, '');
  return [
    {
      lang: 'Shell',
      label: 'curl',
      source: `curl -X POST ${base}/v1/refunds -H "Authorization: Bearer $KEY" \\
  -H 'Idempotency-Key: refund-1042-1' -d payment_intent=pi_00VbYV85n9aIzXB1ggNYQfQ -d amount=1000 -d reason=requested_by_customer`,
    },
    {
      lang: 'JavaScript',
      label: 'Stripe SDK',
      source: `import Stripe from 'stripe';
const payments = new Stripe(process.env.KEY, ${sdkClientOptions(base)});
const refund = await payments.refunds.create({ payment_intent: 'pi_00VbYV85n9aIzXB1ggNYQfQ', amount: 1000 }, { idempotencyKey: 'refund-1042-1' });`,
    },
  ];
}

export function refundsPart(options: { operators: string[]; baseUrl: string }): DocumentPart {
  const description: Schema = { type: 'string', maxLength: DESCRIPTION_MAX_LENGTH, description: `At most ${DESCRIPTION_MAX_LENGTH} characters, no NUL.` };
  const create = requestBody('RefundCreate', REFUND_CREATE, {
    payment_intent: { pattern: PAYMENT_INTENT_ID, description: 'The succeeded payment intent to refund (404 `resource_missing` when it is not in your scope).' },
    amount: {
      minimum: MIN_AMOUNT,
      maximum: MAX_AMOUNT,
      description: 'In the smallest currency unit; at most what remains refundable (the intent\'s amount minus its succeeded and pending refunds). Default: all that remains.',
    },
    reason: { enum: [...REFUND_REASONS, null] },
    description,
    metadata: {},
  });
  const update = requestBody('RefundUpdate', REFUND_UPDATE, {
    description,
    metadata: { description: 'Merged into the stored metadata; a key set to "" is removed.' },
  });
  const object = closedObject(
    {
      id: { type: 'string', pattern: REFUND_ID },
      object: { const: 'refund' },
      amount: { type: 'integer', minimum: MIN_AMOUNT, maximum: MAX_AMOUNT },
      currency: { type: 'string', pattern: '^[a-z]{3}$', description: "The payment's." },
      payment_intent: { type: 'string', pattern: PAYMENT_INTENT_ID },
      status: { type: 'string', enum: [...REFUND_STATUSES], description: '`pending` until the operator answers, then `succeeded` or `failed` (its amount released).' },
      reason: nullable({ type: 'string', enum: [...REFUND_REASONS, ...SERVICE_REFUND_REASONS], description: '`late_payment` is set by the service only: a payment the operator took after the intent could no longer take it, given back (docs/reconciliation.md).' }),
      failure_reason: nullable({ type: 'string', enum: Object.keys(DECLINE_CODES), description: 'Why the operator refused it (`failed` only).' }),
      description: nullable(description),
      metadata: ref('Metadata'),
      operator: { type: 'string', enum: [...options.operators, 'unknown'], description: "The payment's operator, which pays the refund." },
      created: { type: 'integer', description: 'Unix seconds.' },
      livemode: { type: 'boolean' },
    } satisfies Record<RefundField, Schema>,
    { description: 'Money given back from a succeeded payment, in whole or in part.' },
  );
  const url = '/v1/refunds';
  const tags = ['Refunds'];
  const idParam = idParameter("The refund's id.", 're_00VbYV85n9aIzXB1ggNYQfQ');
  return {
    tag: { name: tags[0] as string, description: 'Money back from succeeded payments, wholly or in parts. Creates go through the queue, like every change.' },
    schemas: {
      RefundCreate: create.schema,
      RefundUpdate: update.schema,
      Refund: object,
      RefundList: listSchema('Refund', { const: url }, 'A page of refunds, newest first.'),
    },
    paths: {
      [url]: {
        post: {
          operationId: 'createRefund',
          summary: 'Create a refund',
          tags,
          'x-codeSamples': createRefundSamples(options.baseUrl),
          parameters: [IDEMPOTENCY_PARAMETER],
          requestBody: create.body,
          responses: {
            ...okResponse('The refund, `pending`: its outcome arrives as `refund.succeeded` or `refund.failed`.', ref('Refund'), { replayable: true }),
            ...errorResponses([400, 404, 409, 413, 415]),
          },
        },
        get: {
          operationId: 'listRefunds',
          summary: 'List refunds',
          tags,
          parameters: [
            ...LIST_PARAMETERS,
            ...queryParameters(REFUND_LIST_QUERY, { payment_intent: { description: 'Only the refunds of this payment intent.' } }, SHARED_LIST_PARAMETERS),
          ],
          responses: { ...okResponse('A page of refunds.', ref('RefundList')), ...errorResponses([400]) },
        },
      },
      [`${url}/{id}`]: {
        get: {
          operationId: 'retrieveRefund',
          summary: 'Retrieve a refund',
          tags,
          parameters: [idParam],
          responses: { ...okResponse('The refund.', ref('Refund')), ...errorResponses([400, 404]) },
        },
        post: {
          operationId: 'updateRefund',
          summary: 'Update a refund',
          tags,
          parameters: [idParam, IDEMPOTENCY_PARAMETER],
          requestBody: update.body,
          responses: { ...okResponse('The refund with its new description or metadata.', ref('Refund'), { replayable: true }), ...errorResponses([400, 404, 409, 413, 415]) },
        },
      },
    },
  };
}
