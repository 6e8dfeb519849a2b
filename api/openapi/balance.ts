/** The ledger's reads: `/v1/balance`, `/v1/balance_transactions`, `/v1/statements` (DESIGN section 16). */
import { BALANCE_TRANSACTION_TYPES } from '../../common/documents.js';
import { REPORTING_CATEGORIES } from '../../common/ledger.js';
import type { presentBalance, presentBalanceTransaction } from '../../common/presenters.js';
import { STATEMENT_MAX_DAYS } from '../schemas/balance.js';
import { errorResponses, idParameter, LIST_PARAMETERS, listSchema, okResponse } from './components.js';
import { closedObject, nullable, ref, type DocumentPart, type Schema } from './schema.js';

type TxnField = keyof ReturnType<typeof presentBalanceTransaction>;
type BalanceField = keyof ReturnType<typeof presentBalance>;

export const BALANCE_TRANSACTION_ID = '^txn_[0-9A-Za-z]+$';

export function balancePart(options: { operators: string[] }): DocumentPart {
  const currency: Schema = { type: 'string', pattern: '^[a-z]{3}$' };
  const amount = (description: string): Schema => ({ type: 'integer', description });
  const funds = closedObject(
    {
      amount: amount('In the smallest currency unit.'),
      currency,
      source_types: closedObject({ mobile_money: { type: 'integer' } }, { description: 'The amount by the kind of money: all of it mobile money.' }),
    },
    { description: 'One currency of a balance.' },
  );
  const balance = closedObject(
    {
      object: { const: 'balance' },
      available: { type: 'array', items: funds, description: 'Per currency: what the payments brought in, less refunds, payouts and fees, plus adjustments. Collected money is available at once.' },
      pending: { type: 'array', items: funds, description: 'Per currency: always 0 (nothing waits to become available).' },
      by_operator: {
        type: 'array',
        description: 'Where the available money sits: per currency and operator (null: adjustments made without one).',
        items: closedObject({ operator: nullable({ type: 'string', description: `An operator of the catalog (${options.operators.join(', ')}).` }), amount: amount('In the smallest currency unit.'), currency }, {}),
      },
      livemode: { type: 'boolean' },
    } satisfies Record<BalanceField, Schema>,
    { description: "Your money per currency, in Stripe's shape." },
  );
  const txn = closedObject(
    {
      id: { type: 'string', pattern: BALANCE_TRANSACTION_ID },
      object: { const: 'balance_transaction' },
      amount: amount('Gross, signed: what the movement brought in (> 0) or took (< 0).'),
      currency,
      fee: amount('What the service took from a payment (the operator account\'s fee_percent and fee_fixed); 0 otherwise.'),
      net: amount('amount − fee: what the balance moved by.'),
      type: { type: 'string', enum: [...BALANCE_TRANSACTION_TYPES] },
      source: { type: 'string', description: 'The object that moved the money: `pi_…`, `re_…`, `po_…` or `adj_…`.' },
      operator: nullable({ type: 'string' }),
      description: nullable({ type: 'string' }),
      status: { const: 'available' },
      created: { type: 'integer', description: 'Unix seconds.' },
      available_on: { type: 'integer', description: 'Unix seconds: the same as `created`.' },
      reporting_category: { type: 'string', enum: [...new Set(Object.values(REPORTING_CATEGORIES))] },
      balance_after: amount("The currency's available balance right after this transaction."),
      livemode: { type: 'boolean' },
    } satisfies Record<TxnField, Schema>,
    { description: 'One posting of the ledger: never changed; a released hold is a reversal of its own.' },
  );
  const url = '/v1/balance_transactions';
  const tags = ['Balance'];
  const createdBound = (bound: string): Schema => ({ name: `created[${bound}]`, in: 'query', required: false, description: `Only transactions created ${bound} this unix time.`, schema: { type: 'integer', minimum: 0 } });
  return {
    tag: { name: tags[0] as string, description: 'Where the money is: the balance, the ledger\'s transactions, statements.' },
    schemas: {
      Balance: balance,
      BalanceTransaction: txn,
      BalanceTransactionList: listSchema('BalanceTransaction', { const: url }, 'A page of balance transactions, newest first.'),
    },
    paths: {
      '/v1/balance': {
        get: { operationId: 'retrieveBalance', summary: 'Retrieve the balance', tags, responses: { ...okResponse('The balance.', ref('Balance')), ...errorResponses([400]) } },
      },
      [url]: {
        get: {
          operationId: 'listBalanceTransactions',
          summary: 'List balance transactions',
          tags,
          parameters: [
            ...LIST_PARAMETERS,
            { name: 'type', in: 'query', required: false, description: 'Only transactions of this type.', schema: { type: 'string', enum: [...BALANCE_TRANSACTION_TYPES] } },
            { name: 'source', in: 'query', required: false, description: 'Only the transactions of this object (`pi_…`, `re_…`, …).', schema: { type: 'string' } },
            ...['gt', 'gte', 'lt', 'lte'].map(createdBound),
          ],
          responses: { ...okResponse('A page of balance transactions.', ref('BalanceTransactionList')), ...errorResponses([400]) },
        },
      },
      [`${url}/{id}`]: {
        get: {
          operationId: 'retrieveBalanceTransaction',
          summary: 'Retrieve a balance transaction',
          tags,
          parameters: [idParameter("The transaction's id.", 'txn_00VbYV85n9aIzXB1ggNYQfQ')],
          responses: { ...okResponse('The balance transaction.', ref('BalanceTransaction')), ...errorResponses([400, 404]) },
        },
      },
      '/v1/statements': {
        get: {
          operationId: 'retrieveStatement',
          summary: 'Download a statement',
          description: `One currency's transactions of a range of days (UTC, both ends included, at most ${STATEMENT_MAX_DAYS}), as CSV in posting order: a header, the opening balance, one row per transaction, the closing balance. Amounts in major units.`,
          tags,
          parameters: [
            { name: 'currency', in: 'query', required: true, schema: { type: 'string' } },
            { name: 'from', in: 'query', required: true, description: 'First day, YYYY-MM-DD.', schema: { type: 'string', format: 'date' } },
            { name: 'to', in: 'query', required: true, description: 'Last day, YYYY-MM-DD.', schema: { type: 'string', format: 'date' } },
          ],
          responses: {
            '200': { description: 'The statement, streamed.', content: { 'text/csv': { schema: { type: 'string' } } } },
            ...errorResponses([400]),
          },
        },
      },
    },
  };
}
