import { ApiError, errors } from '../../common/errors.js';
import { BALANCE_TRANSACTION_TYPES, type BalanceTransactionType } from '../../common/documents.js';
import { isCurrency } from '../../common/money.js';
import { describeValue, type Raise } from './joi-errors.js';
import { Joi } from './joi.js';
import { listOf, listQuerySchema, type ListQuery } from './lists.js';
import { checkQuery, checkQueryNames } from './query.js';

const typeInvalid: Raise = ({ param, value }) =>
  new ApiError('parameter_invalid', `Invalid type: ${describeValue(value)}. Use one of ${BALANCE_TRANSACTION_TYPES.join(', ')}.`, param);
const timeInvalid: Raise = ({ param, value }) => new ApiError('parameter_invalid_integer', `Invalid integer: ${describeValue(value)}. ${param} is a unix time in seconds.`, param);
const BOUNDS = ['gt', 'gte', 'lt', 'lte'] as const;

const LIST_QUERY = listQuerySchema(
  {
    type: Joi.string().valid(...BALANCE_TRANSACTION_TYPES),
    source: Joi.string().max(255),
    ...Object.fromEntries(BOUNDS.map((b) => [`created[${b}]`, Joi.string().pattern(/^[0-9]{1,12}$/)])),
  },
  {
    type: { 'any.only': typeInvalid, 'string.empty': typeInvalid },
    source: { 'string.empty': ({ param }) => new ApiError('parameter_invalid_empty', 'Invalid source: it must be the id of an object, not empty.', param) },
    ...Object.fromEntries(BOUNDS.map((b) => [`created[${b}]`, { 'string.empty': timeInvalid, 'string.pattern.base': timeInvalid }])),
  },
);

export interface BalanceTransactionListQuery extends ListQuery {
  txnType: BalanceTransactionType | null;
  source: string | null;
  /** Bounds on `created` (unix seconds) as a MongoDB range on `created`. */
  created: Partial<Record<'$gt' | '$gte' | '$lt' | '$lte', number>> | null;
}

export function parseBalanceTransactionListQuery(query: URLSearchParams): BalanceTransactionListQuery {
  const params = checkQuery(LIST_QUERY, query, { idKind: 'balance_transaction' });
  const created: Partial<Record<'$gt' | '$gte' | '$lt' | '$lte', number>> = {};
  for (const b of BOUNDS) if (params[`created[${b}]`] !== undefined) created[`$${b}`] = Number(params[`created[${b}]`]);
  return {
    ...listOf(params),
    type: null,
    txnType: (params.type as BalanceTransactionType | undefined) ?? null,
    source: params.source ?? null,
    created: Object.keys(created).length > 0 ? created : null,
  };
}

/** A statement's longest range, in days (both ends included). */
export const STATEMENT_MAX_DAYS = 31;
const DAY_MS = 86_400_000;

export interface StatementQuery {
  currency: string;
  /** Epoch ms: the first day's start, and the day after the last one's (UTC). */
  fromMs: number;
  toMs: number;
  from: string;
  to: string;
}

function dayOf(param: 'from' | 'to', value: string | null): number {
  if (value === null) throw errors.parameterMissing(param);
  const ms = /^\d{4}-\d{2}-\d{2}$/.test(value) ? Date.parse(`${value}T00:00:00Z`) : NaN;
  if (Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 10) !== value) throw errors.parameterInvalid(param, `${describeValue(value)} is not a date: use YYYY-MM-DD`);
  return ms;
}

/** `currency`, `from` and `to` (YYYY-MM-DD, UTC, both included, at most 31 days). */
export function parseStatementQuery(query: URLSearchParams): StatementQuery {
  checkQueryNames(query, ['currency', 'from', 'to']);
  const currency = query.get('currency');
  if (currency === null) throw errors.parameterMissing('currency');
  if (!isCurrency(currency)) throw new ApiError('currency_invalid', `Invalid currency: ${describeValue(currency)}. Use a three-letter ISO 4217 code, such as "xof".`, 'currency');
  const fromMs = dayOf('from', query.get('from'));
  const lastMs = dayOf('to', query.get('to'));
  if (lastMs < fromMs) throw errors.parameterInvalid('to', 'the range ends before it starts: give a "to" on or after "from"');
  if ((lastMs - fromMs) / DAY_MS + 1 > STATEMENT_MAX_DAYS) {
    throw new ApiError('parameter_out_of_range', `Invalid to: a statement covers at most ${STATEMENT_MAX_DAYS} days.`, 'to');
  }
  return { currency: currency.toLowerCase(), fromMs, toMs: lastMs + DAY_MS, from: query.get('from') as string, to: query.get('to') as string };
}
