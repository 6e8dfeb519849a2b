/** `/v1/operator_discrepancies`: what reconciliation found (list and retrieve). */
import { PAYMENT_INTENT_STATUSES } from '../../common/lifecycle.js';
import { DISCREPANCY_RESOLUTIONS, type presentOperatorDiscrepancy } from '../../common/operator-discrepancies.js';
import { MAX_AMOUNT, MIN_AMOUNT } from '../schemas/payment-intents.js';
import { errorResponses, idParameter, LIST_PARAMETERS, listSchema, okResponse } from './components.js';
import { PAYMENT_INTENT_ID } from './payment-intents.js';
import { REFUND_ID } from './refunds.js';
import { closedObject, nullable, ref, type DocumentPart, type Schema } from './schema.js';

type Field = keyof ReturnType<typeof presentOperatorDiscrepancy>;

export const OPERATOR_DISCREPANCY_ID = '^od_[0-9A-Za-z]+$';

export function operatorDiscrepanciesPart(options: { operators: string[] }): DocumentPart {
  const object = closedObject(
    {
      id: { type: 'string', pattern: OPERATOR_DISCREPANCY_ID },
      object: { const: 'operator_discrepancy' },
      operator: { type: 'string', enum: [...options.operators, 'unknown'], description: 'The operator that took the payment.' },
      payment_intent: { type: 'string', pattern: PAYMENT_INTENT_ID },
      attempt: { type: 'integer', minimum: 1, description: "The intent's attempt (confirm) the operator was paid for." },
      amount: { type: 'integer', minimum: MIN_AMOUNT, maximum: MAX_AMOUNT },
      currency: { type: 'string', pattern: '^[a-z]{3}$' },
      operator_reference: nullable({ type: 'string', description: "The operator's reference of the payment." }),
      found_by: { type: 'string', enum: ['status_lookup', 'transaction_list'], description: "How the operator's record showed it." },
      intent_status: { type: 'string', enum: [...PAYMENT_INTENT_STATUSES], description: "The intent's status when the payment was found." },
      resolution: {
        type: 'string',
        enum: [...DISCREPANCY_RESOLUTIONS],
        description: '`payment_applied`: the intent could still take it and succeeded; `refunded`: given back (`refund`, reason `late_payment`); `manual`: the operator cannot refund through this service; `pending`: decided by a later run.',
      },
      refund: nullable({ type: 'string', pattern: REFUND_ID, description: 'The `late_payment` refund, once `refunded`.' }),
      created: { type: 'integer', description: 'Unix seconds.' },
      livemode: { type: 'boolean' },
    } satisfies Record<Field, Schema>,
    { description: 'A payment the operator took that this service did not show as succeeded, found by reconciliation.' },
  );
  const url = '/v1/operator_discrepancies';
  const tags = ['Operator discrepancies'];
  return {
    tag: { name: tags[0] as string, description: "Payments in the operator's record that this service did not show as succeeded (docs/reconciliation.md)." },
    schemas: {
      OperatorDiscrepancy: object,
      OperatorDiscrepancyList: listSchema('OperatorDiscrepancy', { const: url }, 'A page of operator discrepancies, newest first.'),
    },
    paths: {
      [url]: {
        get: {
          operationId: 'listOperatorDiscrepancies',
          summary: 'List operator discrepancies',
          tags,
          parameters: [...LIST_PARAMETERS],
          responses: { ...okResponse('A page of operator discrepancies.', ref('OperatorDiscrepancyList')), ...errorResponses([400]) },
        },
      },
      [`${url}/{id}`]: {
        get: {
          operationId: 'retrieveOperatorDiscrepancy',
          summary: 'Retrieve an operator discrepancy',
          tags,
          parameters: [idParameter("The discrepancy's id.", 'od_00VbYV85n9aIzXB1ggNYQfQ')],
          responses: { ...okResponse('The operator discrepancy.', ref('OperatorDiscrepancy')), ...errorResponses([400, 404]) },
        },
      },
    },
  };
}
