/**
 * Bodies of `POST /v1/refunds` and `POST /v1/refunds/{id}`, and the list's query
 * (DESIGN.md section 11). What depends on the intent (its status, what remains
 * refundable, its operator) is the worker's decision; these check the request alone.
 */
import { ApiError, errors } from '../../common/errors.js';
import { isId } from '../../common/ids.js';
import { REFUND_REASONS, type RefundReason } from '../../common/documents.js';
import type { RefundInput, RefundUpdateInput } from '../../common/jobs.js';
import { typedBody, type BodyEncoding, type BodyFields } from './fields.js';
import { parseListQuery, type ListQuery } from './lists.js';
import { parseAmount } from './payment-intents.js';
import { checkQueryNames } from './query.js';
import { checkString, checkStringOrNull, describeValue, fieldOf, parseDescription, parseMetadata, rejectUnknownFields, required } from './validate.js';

export const REFUND_CREATE_FIELDS = {
  payment_intent: { type: 'string', required: true },
  amount: { type: 'integer' },
  reason: { type: 'string', nullable: true },
  description: { type: 'string', nullable: true },
  metadata: { type: 'metadata' },
} as const satisfies BodyFields;

export const REFUND_UPDATE_FIELDS = {
  description: { type: 'string', nullable: true },
  metadata: { type: 'metadata' },
} as const satisfies BodyFields;

function parseReason(value: unknown): RefundReason | null {
  if (value === undefined) return null;
  const reason = checkStringOrNull(value, 'reason');
  if (reason !== null && !(REFUND_REASONS as readonly string[]).includes(reason)) {
    throw new ApiError('parameter_invalid', `Invalid reason: ${describeValue(reason)}; use one of ${REFUND_REASONS.join(', ')}.`, 'reason');
  }
  return reason as RefundReason | null;
}

/** A payment intent id of the wrong shape names nothing: 404, as an unknown one. */
function parsePaymentIntent(value: unknown): string {
  const id = checkString(required(value, 'payment_intent'), 'payment_intent');
  if (id === '') throw new ApiError('parameter_invalid_empty', 'Invalid payment_intent: it must be the id of a payment intent, not empty.', 'payment_intent');
  if (!isId('payment_intent', id)) throw errors.resourceMissing('payment_intent', id, 'payment_intent');
  return id;
}

export function parseRefundCreate(raw: Record<string, unknown>, encoding: BodyEncoding = 'json'): RefundInput {
  const body = typedBody(raw, encoding, REFUND_CREATE_FIELDS);
  rejectUnknownFields(body, Object.keys(REFUND_CREATE_FIELDS));
  const paymentIntent = parsePaymentIntent(fieldOf(body, 'payment_intent'));
  const amount = fieldOf(body, 'amount');
  return {
    payment_intent: paymentIntent,
    amount: amount === undefined ? null : parseAmount(amount),
    reason: parseReason(fieldOf(body, 'reason')),
    description: parseDescription(fieldOf(body, 'description')),
    metadata: parseMetadata(fieldOf(body, 'metadata')),
  };
}

export function parseRefundUpdate(raw: Record<string, unknown>, encoding: BodyEncoding = 'json'): RefundUpdateInput {
  const body = typedBody(raw, encoding, REFUND_UPDATE_FIELDS);
  rejectUnknownFields(body, Object.keys(REFUND_UPDATE_FIELDS));
  const input: RefundUpdateInput = {};
  const description = fieldOf(body, 'description');
  if (description !== undefined) input.description = parseDescription(description);
  const metadata = fieldOf(body, 'metadata');
  if (metadata !== undefined) input.metadata = parseMetadata(metadata);
  return input;
}

/** The list's query: the common cursors, and an optional `payment_intent` filter. */
export function parseRefundListQuery(query: URLSearchParams): ListQuery & { paymentIntent: string | null } {
  checkQueryNames(query, ['limit', 'starting_after', 'ending_before', 'payment_intent']);
  const paymentIntent = query.get('payment_intent');
  const rest = new URLSearchParams(query);
  rest.delete('payment_intent');
  const list = parseListQuery(rest, { idKind: 'refund' });
  if (paymentIntent !== null && paymentIntent === '') {
    throw new ApiError('parameter_invalid_empty', 'Invalid payment_intent: it must be the id of a payment intent, not empty.', 'payment_intent');
  }
  return { ...list, paymentIntent };
}
