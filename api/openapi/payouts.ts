/** `/v1/payouts` and `/v1/payout_batches` (DESIGN.md section 17). */
import { PAYOUT_FAILURES, PAYOUT_STATUSES, type presentPayout, type presentPayoutBatch } from '../../common/payouts.js';
import { MAX_AMOUNT, MIN_AMOUNT } from '../schemas/payment-intents.js';
import { BATCH_MAX_ITEMS, PAYOUT_BATCH_ITEM, PAYOUT_CREATE, REFERENCE_MAX_LENGTH } from '../schemas/payouts.js';
import { DESCRIPTION_MAX_LENGTH } from '../schemas/validate.js';
import { errorResponses, IDEMPOTENCY_PARAMETER, idParameter, LIST_PARAMETERS, listSchema, okResponse } from './components.js';
import { closedObject, nullable, ref, requestBody, type DocumentPart, type Schema } from './schema.js';

type PayoutField = keyof ReturnType<typeof presentPayout>;
type BatchField = keyof ReturnType<typeof presentPayoutBatch>;

export const PAYOUT_ID = '^po_[0-9A-Za-z]+$';
export const PAYOUT_BATCH_ID = '^pob_[0-9A-Za-z]+$';

const TEST_NUMBERS =
  'Test mode: the number\'s last three digits decide: `000` (and any other) paid, `005` recipient_not_found, `006` recipient_limit_exceeded, ' +
  '`007` recipient_account_blocked, `008` stays `enqueued` 30 s then paid, `009` generic_failure.';

export function payoutsPart(options: { operators: string[] }): DocumentPart {
  const description: Schema = { type: 'string', maxLength: DESCRIPTION_MAX_LENGTH, description: `At most ${DESCRIPTION_MAX_LENGTH} characters, no NUL.` };
  const fields: Record<string, Schema> = {
    amount: { minimum: MIN_AMOUNT, maximum: MAX_AMOUNT, description: "In the smallest currency unit, within the operator's bounds for one payment in the number's country; held from the available balance." },
    currency: { description: 'ISO 4217, case-insensitive; one the operator takes in the number\'s country.' },
    operator: { enum: options.operators, description: 'Default: predicted from the number\'s prefix.' },
    phone_number: { description: `The destination wallet, E.164. ${TEST_NUMBERS}` },
    description,
    metadata: {},
  };
  const create = requestBody('PayoutCreate', PAYOUT_CREATE, fields);
  const item = requestBody('PayoutBatchItem', PAYOUT_BATCH_ITEM, {
    ...fields,
    reference: { maxLength: REFERENCE_MAX_LENGTH, description: 'Your own reference of the item, distinct within the batch; shown on its payout.' },
  });
  const batchCreate: Schema = closedObject({ payouts: { type: 'array', minItems: 1, maxItems: BATCH_MAX_ITEMS, items: ref('PayoutBatchItem') } });
  const status: Schema = { type: 'string', enum: [...PAYOUT_STATUSES] };
  const payout = closedObject(
    {
      id: { type: 'string', pattern: PAYOUT_ID },
      object: { const: 'payout' },
      amount: { type: 'integer', minimum: MIN_AMOUNT, maximum: MAX_AMOUNT },
      currency: { type: 'string', pattern: '^[a-z]{3}$' },
      operator: { type: 'string', enum: options.operators },
      destination: closedObject({ phone_number: { type: 'string', description: 'Masked.' }, name: { type: 'string' } }, { optional: ['name'] }),
      status: { ...status, description: '`pending`, `enqueued` (its operator account unavailable), `in_transit`, then `paid`, `failed` or `canceled`.' },
      failure_code: nullable({ type: 'string', enum: Object.keys(PAYOUT_FAILURES) }),
      failure_message: nullable({ type: 'string' }),
      description: nullable(description),
      metadata: ref('Metadata'),
      batch: nullable({ type: 'string', pattern: PAYOUT_BATCH_ID }),
      reference: nullable({ type: 'string', description: "A batch item's reference." }),
      created: { type: 'integer', description: 'Unix seconds.' },
      arrival_date: nullable({ type: 'integer', description: 'Unix seconds when it was paid.' }),
      livemode: { type: 'boolean' },
    } satisfies Record<PayoutField, Schema>,
    { description: 'Money sent from your balance to a mobile-money wallet.' },
  );
  const count = { type: 'integer', minimum: 0 };
  const batch = closedObject(
    {
      id: { type: 'string', pattern: PAYOUT_BATCH_ID },
      object: { const: 'payout_batch' },
      status: { type: 'string', enum: ['processing', 'completed'], description: '`completed` once every payout of it is final.' },
      counts: closedObject(Object.fromEntries(['total', ...PAYOUT_STATUSES].map((name) => [name, count]))),
      created: { type: 'integer', description: 'Unix seconds.' },
      completed_at: nullable({ type: 'integer', description: 'Unix seconds.' }),
      livemode: { type: 'boolean' },
    } satisfies Record<BatchField, Schema>,
    { description: 'Up to 1,000 payouts accepted together; each is a payout of its own.' },
  );
  const tags = ['Payouts'];
  const payoutId = idParameter("The payout's id.", 'po_00VbYV85n9aIzXB1ggNYQfQ');
  const batchId = idParameter("The batch's id.", 'pob_00VbYV85n9aIzXB1ggNYQfQ');
  return {
    tag: { name: tags[0] as string, description: `Money out to mobile-money wallets, one at a time or in batches. ${TEST_NUMBERS}` },
    schemas: {
      PayoutCreate: create.schema,
      PayoutBatchItem: item.schema,
      PayoutBatchCreate: batchCreate,
      Payout: payout,
      PayoutList: listSchema('Payout', { const: '/v1/payouts' }, 'A page of payouts, newest first.'),
      PayoutBatch: batch,
      PayoutBatchList: listSchema('PayoutBatch', { const: '/v1/payout_batches' }, 'A page of payout batches, newest first.'),
    },
    paths: {
      '/v1/payouts': {
        post: {
          operationId: 'createPayout',
          summary: 'Create a payout',
          tags,
          parameters: [IDEMPOTENCY_PARAMETER],
          requestBody: create.body,
          responses: {
            ...okResponse('The payout, `pending`: its end arrives as `payout.paid`, `payout.failed` or `payout.canceled`.', ref('Payout'), { replayable: true }),
            ...errorResponses([400, 409, 413, 415]),
          },
        },
        get: {
          operationId: 'listPayouts',
          summary: 'List payouts',
          tags,
          parameters: [
            ...LIST_PARAMETERS,
            { name: 'status', in: 'query', required: false, description: 'Only payouts in this status.', schema: status },
            { name: 'batch', in: 'query', required: false, description: 'Only the payouts of this batch.', schema: { type: 'string' } },
          ],
          responses: { ...okResponse('A page of payouts.', ref('PayoutList')), ...errorResponses([400]) },
        },
      },
      '/v1/payouts/{id}': {
        get: {
          operationId: 'retrievePayout',
          summary: 'Retrieve a payout',
          tags,
          parameters: [payoutId],
          responses: { ...okResponse('The payout.', ref('Payout')), ...errorResponses([400, 404]) },
        },
      },
      '/v1/payouts/{id}/cancel': {
        post: {
          operationId: 'cancelPayout',
          summary: 'Cancel a payout',
          description: 'Only a `pending` or `enqueued` payout (else 400 `payout_unexpected_state`); its hold is released.',
          tags,
          parameters: [payoutId, IDEMPOTENCY_PARAMETER],
          responses: { ...okResponse('The payout, `canceled`.', ref('Payout'), { replayable: true }), ...errorResponses([400, 404, 409, 413, 415]) },
        },
      },
      '/v1/payout_batches': {
        post: {
          operationId: 'createPayoutBatch',
          summary: 'Create a batch of payouts',
          description: 'Up to 1,000 payouts; this route takes bodies up to 1 MiB. Accepted at once; each item becomes a payout with its own events, holding its amount when it is sent (`balance_insufficient` then fails that item alone).',
          tags,
          parameters: [IDEMPOTENCY_PARAMETER],
          requestBody: { required: true, description: 'A JSON object.', content: { 'application/json': { schema: ref('PayoutBatchCreate') } } },
          responses: { ...okResponse('The batch, `processing`.', ref('PayoutBatch'), { replayable: true }), ...errorResponses([400, 409, 413, 415]) },
        },
        get: {
          operationId: 'listPayoutBatches',
          summary: 'List payout batches',
          tags,
          parameters: [...LIST_PARAMETERS],
          responses: { ...okResponse('A page of batches.', ref('PayoutBatchList')), ...errorResponses([400]) },
        },
      },
      '/v1/payout_batches/{id}': {
        get: {
          operationId: 'retrievePayoutBatch',
          summary: 'Retrieve a payout batch',
          tags,
          parameters: [batchId],
          responses: { ...okResponse('The batch with its counts by status.', ref('PayoutBatch')), ...errorResponses([400, 404]) },
        },
      },
    },
  };
}
