/** `/v1/payment_intents`: create, list, retrieve. */
import type { presentPaymentIntent } from '../../common/presenters.js';
import { DESCRIPTION_MAX_LENGTH } from '../schemas/validate.js';
import {
  EXPIRES_DEFAULT_SECONDS,
  EXPIRES_MAX_SECONDS,
  EXPIRES_MIN_SECONDS,
  MAX_AMOUNT,
  MIN_AMOUNT,
  PAYMENT_INTENT_CREATE,
} from '../schemas/payment-intents.js';
import { errorResponses, IDEMPOTENCY_PARAMETER, idParameter, LIST_PARAMETERS, listSchema, okResponse } from './components.js';
import { closedObject, nullable, ref, requestBody, type DocumentPart, type Schema } from './schema.js';
import { CANCELLATION_REASONS, DECLINE_CODES, PAYMENT_INTENT_STATUSES } from '../../common/lifecycle.js';
import {
  PAYMENT_INTENT_CANCEL,
  PAYMENT_INTENT_CONFIRM,
  PAYMENT_INTENT_UPDATE,
  RETURN_URL_MAX_LENGTH,
} from '../schemas/payment-intent-lifecycle.js';

type PaymentIntentField = keyof ReturnType<typeof presentPaymentIntent>;

export const PAYMENT_INTENT_ID = '^pi_[0-9A-Za-z]+$';

/** The Stripe SDK's options that point it at `baseUrl`: `{ host: '…', port: …, protocol: '…' }`. */
export function sdkClientOptions(baseUrl: string): string {
  try {
    const url = new URL(baseUrl);
    const protocol = url.protocol === 'https:' ? 'https' : 'http';
    const port = url.port === '' ? (protocol === 'https' ? 443 : 80) : Number(url.port);
    return `{ host: '${url.hostname}', port: ${port}, protocol: '${protocol}' }`;
  } catch {
    // A Host header that is no host: a placeholder.
    return `{ host: 'localhost', port: 3000, protocol: 'http' }`;
  }
}

/**
 * Shown by Redoc beside the create operation, with the service's own base URL
 * (`PUBLIC_BASE_URL`, else the origin the reference was asked on): pasted as they
 * are, they call this service.
 */
export function createSamples(baseUrl: string): Array<{ lang: string; label: string; source: string }> {
  const base = baseUrl.replace(/\/+$/, '');
  const client = sdkClientOptions(base);
  return [
    {
      lang: 'Shell',
      label: 'curl (form)',
      source: `curl ${base}/v1/payment_intents -u "$KEY:" \\
  -H 'Idempotency-Key: order-1042' -d amount=5000 -d currency=xof \\
  -d 'allowed_operators[]=wave' -d 'allowed_operators[]=orange_money' -d 'metadata[order]=1042'`,
    },
    {
      lang: 'Shell',
      label: 'curl (JSON)',
      source: `curl ${base}/v1/payment_intents -H "Authorization: Bearer $KEY" \\
  -H 'Content-Type: application/json' -H 'Idempotency-Key: order-1042' \\
  -d '{"amount": 5000, "currency": "xof", "allowed_operators": ["wave", "orange_money"], "metadata": {"order": "1042"}}'`,
    },
    {
      lang: 'JavaScript',
      label: 'Stripe SDK',
      source: `import Stripe from 'stripe';
const payments = new Stripe(process.env.KEY, ${client});
const intent = await payments.paymentIntents.create(
  { amount: 5000, currency: 'xof', allowed_operators: ['wave'], metadata: { order: '1042' } },
  { idempotencyKey: 'order-1042' },
);`,
    },
  ];
}

export function paymentIntentsPart(options: { operators: string[]; defaultCurrency: string; baseUrl: string }): DocumentPart {
  const operator: Schema = { type: 'string', enum: options.operators };
  const operators: Schema = { type: 'array', items: operator, minItems: 1, uniqueItems: true };
  const description: Schema = { type: 'string', maxLength: DESCRIPTION_MAX_LENGTH, description: `At most ${DESCRIPTION_MAX_LENGTH} characters, no NUL.` };

  const create = requestBody('PaymentIntentCreate', PAYMENT_INTENT_CREATE, {
    amount: { minimum: MIN_AMOUNT, maximum: MAX_AMOUNT, description: 'In the smallest currency unit of ISO 4217: 5000 is 5 000 XOF (no minor unit), 50.00 KES (two decimals). At confirm it must be within the operator\'s bounds (`GET /v1/operators`).', examples: [5000] },
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
      amount_received: { type: 'integer', minimum: 0, description: 'Its amount once `succeeded`, else 0.' },
      amount_refunded: { type: 'integer', minimum: 0, description: 'The sum of its succeeded refunds.' },
      currency: { type: 'string', pattern: '^[a-z]{3}$' },
      description: nullable(description),
      status: {
        type: 'string',
        enum: [...PAYMENT_INTENT_STATUSES],
        description: '`new` → `requires_action` → `processing` → `succeeded`; a decline returns to `new`; `canceled` and `expired` from `new` or `requires_action`. `succeeded`, `canceled` and `expired` are final.',
      },
      client_secret: { type: 'string', description: '`pi_…_secret_…`: for the payer\'s side of a payment. Never log it.' },
      automatic_operator: { type: 'boolean' },
      allowed_operators: operators,
      selected_operator: nullable(operator),
      next_action: nullable(ref('NextAction')),
      last_payment_error: nullable(ref('PaymentError')),
      payment_details: nullable(
        closedObject(
          { operator, phone_number: { type: 'string', description: 'Masked: the country code and the last three digits.' } },
          { description: 'The attempt in flight, or the last one made.' },
        ),
      ),
      canceled_at: nullable({ type: 'integer', description: 'Unix seconds.' }),
      cancellation_reason: nullable({ type: 'string', enum: [...CANCELLATION_REASONS] }),
      metadata: ref('Metadata'),
      livemode: { type: 'boolean' },
      created: { type: 'integer', description: 'Unix seconds.' },
      expires_at: { type: 'integer', description: 'Unix seconds.' },
    } satisfies Record<PaymentIntentField, Schema>,
    { description: 'A payment to collect from a payer through a mobile money operator.' },
  );

  const update = requestBody('PaymentIntentUpdate', PAYMENT_INTENT_UPDATE, {
    amount: { minimum: MIN_AMOUNT, maximum: MAX_AMOUNT, description: 'Only while `new`.' },
    currency: { pattern: '^[A-Za-z]{3}$', description: 'Only while `new`.' },
    description: { ...description, description: 'In any status but a final one.' },
    metadata: { description: 'Merged into the stored metadata; a key set to "" is removed. In any status but a final one.' },
    allowed_operators: { ...operators, description: 'Only while `new`.' },
    selected_operator: { ...operator, description: 'Only while `new`; one of `allowed_operators`.' },
    automatic_operator: { description: 'Only while `new`.' },
    expires_at: { description: 'Only while `new`; the same bounds as at create.' },
  });
  const confirm = requestBody('PaymentIntentConfirm', PAYMENT_INTENT_CONFIRM, {
    operator: { ...operator, description: 'One of `allowed_operators`. Default `selected_operator`; with `automatic_operator`, the first allowed operator that may hold a wallet on the number, predicted from its prefix (its country when the prefix is unknown; `GET /v1/operators/resolve`). The operator must serve the number\'s country (else `phone_number_invalid`), take the intent\'s currency there (else `currency_not_supported`) and accept its amount (else `amount_too_small` / `amount_too_large`).' },
    phone_number: { pattern: '^\\+[1-9][0-9]{7,14}$', description: 'E.164. In a form body write `+` as `%2B` (`curl --data-urlencode`); a bare `+` reads as a space, and is taken as `+`. In test mode its last three digits choose the outcome (see docs/payments.md, Test numbers).', examples: ['+2250700000000'] },
    otp: { description: 'Orange Money: the one-time code the payer got by USSD (`123456` in test mode).' },
    return_url: { maxLength: RETURN_URL_MAX_LENGTH, format: 'uri', description: 'Redirect flow (wave): where the payer returns after the checkout page.' },
  });
  const cancel = requestBody('PaymentIntentCancel', PAYMENT_INTENT_CANCEL, {});
  const nextAction: Schema = {
    description: 'What the payer must do; `type` names the member that says how.',
    oneOf: [
      closedObject({
        type: { const: 'await_phone_approval' },
        await_phone_approval: closedObject({
          operator,
          phone_number: { type: 'string', description: 'Masked.' },
          display_message: { type: 'string' },
          expires_at: { type: 'integer', description: 'Unix seconds: when the request on the phone lapses.' },
        }),
      }),
      closedObject({
        type: { const: 'redirect_to_url' },
        redirect_to_url: closedObject({ url: { type: 'string', format: 'uri' }, return_url: nullable({ type: 'string', format: 'uri' }) }),
      }),
      closedObject({
        type: { const: 'otp_required' },
        otp_required: closedObject({ display_message: { type: 'string' }, ussd_code: { type: 'string' }, otp_length: { type: 'integer' } }),
      }),
    ],
  };
  const paymentError = closedObject(
    {
      code: { const: 'payment_declined' },
      operator: { type: 'string' },
      operator_decline_code: { type: 'string', enum: Object.keys(DECLINE_CODES) },
      message: { type: 'string' },
    },
    { description: 'Why the last attempt failed.' },
  );
  const idParam = idParameter("The payment intent's id.", 'pi_00VbYV85n9aIzXB1ggNYQfQ');
  const mutation = (operationId: string, summary: string, body: Schema, answer: string, statuses: number[]) => ({
    post: {
      operationId,
      summary,
      tags,
      parameters: [idParam, IDEMPOTENCY_PARAMETER],
      requestBody: body,
      responses: { ...okResponse(answer, ref('PaymentIntent'), { replayable: true }), ...errorResponses(statuses) },
    },
  });

  const url = '/v1/payment_intents';
  const tags = ['Payment intents'];
  return {
    tag: { name: tags[0] as string, description: 'Payments to collect. Creates go through a queue; the answer is the created object.' },
    schemas: {
      PaymentIntentCreate: create.schema,
      PaymentIntentUpdate: update.schema,
      PaymentIntentConfirm: confirm.schema,
      PaymentIntentCancel: cancel.schema,
      NextAction: nextAction,
      PaymentError: paymentError,
      PaymentIntent: object,
      PaymentIntentList: listSchema('PaymentIntent', { const: url }, 'A page of payment intents, newest first.'),
      PaymentIntentSearchResult: closedObject(
        {
          object: { const: 'search_result' },
          url: { const: `${url}/search` },
          has_more: { type: 'boolean', description: 'Whether more matches remain: ask again with `page` set to `next_page`.' },
          data: { type: 'array', items: ref('PaymentIntent') },
          next_page: nullable({ type: 'string', description: 'The `page` of the next result, or null on the last.' }),
        },
        { description: 'A page of the payment intents a search matched, newest first.' },
      ),
    },
    paths: {
      [url]: {
        post: {
          operationId: 'createPaymentIntent',
          summary: 'Create a payment intent',
          tags,
          'x-codeSamples': createSamples(options.baseUrl),
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
      [`${url}/search`]: {
        get: {
          operationId: 'searchPaymentIntents',
          summary: 'Search payment intents',
          description:
            "Stripe's search query language, in part: clauses joined by `AND`, each `field:'value'` or, for numbers, `field>n`, `<`, `>=`, `<=`. " +
            "Fields: `status`, `currency`, `amount`, `created`, `metadata['key']`, and `phone_last4` (the last four digits of the confirm's phone number). " +
            'Unlike Stripe, results are up to date at once: a payment is found by the next search after its write.',
          tags,
          parameters: [
            {
              name: 'query',
              in: 'query',
              required: true,
              description: "E.g. `status:'succeeded' AND metadata['order_id']:'A-77' AND created>1700000000`.",
              schema: { type: 'string', maxLength: 1000 },
            },
            LIST_PARAMETERS[0] as Schema,
            { name: 'page', in: 'query', required: false, description: 'The `next_page` of the previous result.', schema: { type: 'string' } },
          ],
          responses: { ...okResponse('The matching payment intents, newest first.', ref('PaymentIntentSearchResult')), ...errorResponses([400]) },
        },
      },
      [`${url}/{id}`]: {
        get: {
          operationId: 'retrievePaymentIntent',
          summary: 'Retrieve a payment intent',
          tags,
          parameters: [idParam],
          responses: { ...okResponse('The payment intent.', ref('PaymentIntent')), ...errorResponses([400, 404]) },
        },
        ...mutation(
          'updatePaymentIntent',
          'Update a payment intent',
          update.body,
          'The updated payment intent. Only the fields given change; `description` and `metadata` in any status but a final one, the others only while `new`.',
          [400, 404, 409, 413, 415],
        ),
      },
      [`${url}/{id}/confirm`]: mutation(
        'confirmPaymentIntent',
        'Confirm a payment intent',
        confirm.body,
        'The intent after the confirm: usually `requires_action`, with `next_action`. From `new`, or from `requires_action` to give an `otp`.',
        [400, 402, 404, 409, 413, 415],
      ),
      [`${url}/{id}/cancel`]: mutation(
        'cancelPaymentIntent',
        'Cancel a payment intent',
        cancel.body,
        'The canceled intent (from `new` or `requires_action`).',
        [400, 404, 409, 413, 415],
      ),
    },
  };
}
