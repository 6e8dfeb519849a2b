/**
 * Bodies of `POST /v1/refunds` and `POST /v1/refunds/{id}`, and the list's query
 * (DESIGN.md section 11). What depends on the intent (its status, what remains
 * refundable, its operator) is the worker's decision; these check the request alone.
 */
import { ApiError, errors } from '../../common/errors.js';
import { isId } from '../../common/ids.js';
import { REFUND_REASONS, type RefundReason } from '../../common/documents.js';
import type { RefundInput, RefundUpdateInput } from '../../common/jobs.js';
import { toPairs } from '../../common/metadata.js';
import { bodySchema, checkBody } from './body.js';
import type { BodyEncoding } from './fields.js';
import { Joi } from './joi.js';
import { listOf, listQuerySchema, type ListQuery } from './lists.js';
import { amount, AMOUNT_ERRORS } from './payment-intents.js';
import { checkQuery } from './query.js';
import { description, oneOfErrors } from './validate.js';

const paymentIntentEmpty = (param: string) =>
  new ApiError('parameter_invalid_empty', 'Invalid payment_intent: it must be the id of a payment intent, not empty.', param);

export const REFUND_CREATE = bodySchema(
  {
    // A payment intent id of the wrong shape names nothing: 404, as an unknown one.
    payment_intent: Joi.string()
      .required()
      .custom((value: string, helpers) => (isId('payment_intent', value) ? value : helpers.error('payment_intent.unknown'))),
    amount: amount(),
    reason: Joi.string().valid(...REFUND_REASONS).allow(null),
    description: description(),
    metadata: Joi.metadata(),
  },
  {
    payment_intent: {
      'string.empty': ({ param }) => paymentIntentEmpty(param),
      'payment_intent.unknown': ({ param, value }) => errors.resourceMissing('payment_intent', value as string, param),
    },
    amount: AMOUNT_ERRORS,
    reason: oneOfErrors(REFUND_REASONS),
  },
);
export const REFUND_CREATE_FIELDS = REFUND_CREATE.fields;

export const REFUND_UPDATE = bodySchema({ description: description(), metadata: Joi.metadata() });
export const REFUND_UPDATE_FIELDS = REFUND_UPDATE.fields;

export function parseRefundCreate(raw: Record<string, unknown>, encoding: BodyEncoding = 'json'): RefundInput {
  const body = checkBody(REFUND_CREATE, raw, encoding);
  return {
    payment_intent: body.payment_intent as string,
    amount: (body.amount ?? null) as number | null,
    reason: (body.reason ?? null) as RefundReason | null,
    description: (body.description ?? null) as string | null,
    metadata: body.metadata === undefined ? [] : toPairs(body.metadata as Record<string, string>),
  };
}

export function parseRefundUpdate(raw: Record<string, unknown>, encoding: BodyEncoding = 'json'): RefundUpdateInput {
  const body = checkBody(REFUND_UPDATE, raw, encoding);
  const input: RefundUpdateInput = {};
  if (body.description !== undefined) input.description = body.description as string | null;
  if (body.metadata !== undefined) input.metadata = toPairs(body.metadata as Record<string, string>);
  return input;
}

export const REFUND_LIST_QUERY = listQuerySchema(
  { payment_intent: Joi.string() },
  { payment_intent: { 'string.empty': ({ param }) => paymentIntentEmpty(param) } },
);

/** The list's query: the common cursors, and an optional `payment_intent` filter. */
export function parseRefundListQuery(query: URLSearchParams): ListQuery & { paymentIntent: string | null } {
  const params = checkQuery(REFUND_LIST_QUERY, query, { idKind: 'refund' });
  return { ...listOf(params), paymentIntent: params.payment_intent ?? null };
}
