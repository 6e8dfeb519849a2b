/**
 * Bodies of `POST /v1/payouts` and `POST /v1/payout_batches`, and the list's query
 * (DESIGN.md section 17). A payout is checked as a confirm is (section 10, through
 * common/operator-terms.ts): the number, its country, the currency and the amount's
 * bounds for that operator, and in live mode an account that serves it. What depends
 * on stored state (the balance) is the worker's decision.
 */
import { ApiError, errors } from '../../common/errors.js';
import { maskPhone } from '../../common/lifecycle.js';
import type { PayoutPublicInput } from '../../common/jobs.js';
import { toPairs } from '../../common/metadata.js';
import { accountFor, type OperatorAccount } from '../../common/operator-accounts.js';
import { countryOf, predictOperator } from '../../common/operator-catalog.js';
import { catalogRefusal, notConfigured, sandboxRefusal } from '../../common/operator-terms.js';
import { PAYOUT_STATUSES, type PayoutStatus } from '../../common/payouts.js';
import { bodySchema, checkBody } from './body.js';
import type { BodyEncoding } from './fields.js';
import type { Raise } from './joi-errors.js';
import { Joi } from './joi.js';
import { listOf, listQuerySchema, type ListQuery } from './lists.js';
import { PHONE_NUMBER_ERRORS, phoneNumber } from './payment-intent-lifecycle.js';
import { amount, AMOUNT_ERRORS, currency, CURRENCY_ERRORS } from './payment-intents.js';
import { checkQuery } from './query.js';
import { description, notAnOperator, oneOfErrors, operatorsOf } from './validate.js';

/** Items of one batch, at most. */
export const BATCH_MAX_ITEMS = 1000;
export const REFERENCE_MAX_LENGTH = 255;

export interface PayoutContext {
  operators: string[];
  livemode: boolean;
  /** Live mode's operator accounts (common/operator-accounts.ts). */
  accounts: readonly OperatorAccount[];
  encoding?: BodyEncoding;
}

/** A checked payout: the public fields, and the destination's number in full (sealed before it is enqueued). */
export interface PayoutRequest {
  input: PayoutPublicInput;
  phone_number: string;
}

const catalogOperator = () =>
  Joi.string().custom((value: string, helpers) => (operatorsOf(helpers.prefs.context ?? {}).includes(value) ? value : helpers.error('operator.unknown')));

const referenceInvalid: Raise = ({ param }) => new ApiError('parameter_invalid_string', `Invalid reference: it must be 1 to ${REFERENCE_MAX_LENGTH} characters long.`, param);

const fields = {
  amount: amount().required(),
  currency: currency().required(),
  operator: catalogOperator(),
  phone_number: phoneNumber().required(),
  description: description(),
  metadata: Joi.metadata(),
};
const fieldErrors = {
  amount: AMOUNT_ERRORS,
  currency: CURRENCY_ERRORS,
  operator: { 'operator.unknown': notAnOperator, 'string.empty': notAnOperator },
  phone_number: PHONE_NUMBER_ERRORS,
};

export const PAYOUT_CREATE = bodySchema(fields, fieldErrors);
export const PAYOUT_CREATE_FIELDS = PAYOUT_CREATE.fields;

/** One item of a batch: a payout, and its own reference. */
export const PAYOUT_BATCH_ITEM = bodySchema(
  { ...fields, reference: Joi.string().required().maxCodePoints(REFERENCE_MAX_LENGTH).storable() },
  { ...fieldErrors, reference: { 'string.empty': referenceInvalid, 'string.maxCodePoints': referenceInvalid } },
);
export const PAYOUT_BATCH_ITEM_FIELDS = PAYOUT_BATCH_ITEM.fields;

/** The checks of one payout's body, `reference` for a batch's item. */
function checkPayout(raw: Record<string, unknown>, ctx: PayoutContext, item: boolean): PayoutRequest {
  const body = checkBody(item ? PAYOUT_BATCH_ITEM : PAYOUT_CREATE, raw, ctx.encoding ?? 'json', { operators: ctx.operators });
  const phone = body.phone_number as string;
  const money = { amount: body.amount as number, currency: (body.currency as string).toLowerCase() };
  const operator = (body.operator as string | undefined) ?? predictOperator(phone, ctx.operators);
  if (operator === null) {
    throw new ApiError('phone_number_invalid', `Invalid phone_number: no operator of the catalog serves ${maskPhone(phone)}; pass operator.`, 'phone_number');
  }
  let account: OperatorAccount | null = null;
  if (ctx.livemode) {
    account = accountFor(ctx.accounts, operator, countryOf(phone)?.code ?? null, phone);
    if (account === null) throw ApiError.fromDetail(notConfigured(operator, phone));
  }
  const refusal = account?.sandbox ? sandboxRefusal(money, phone) : catalogRefusal(money, operator, phone, 'payout');
  if (refusal !== null) throw ApiError.fromDetail(refusal);
  return {
    phone_number: phone,
    input: {
      ...money,
      operator,
      account: account?.id ?? null,
      phone_masked: maskPhone(phone),
      name: null,
      description: (body.description ?? null) as string | null,
      metadata: body.metadata === undefined ? [] : toPairs(body.metadata as Record<string, string>),
      reference: item ? (body.reference as string) : null,
    },
  };
}

export function parsePayoutCreate(raw: Record<string, unknown>, ctx: PayoutContext): PayoutRequest {
  return checkPayout(raw, ctx, false);
}

/** A batch's items, each checked as a payout; an error names its item (`payouts[3][amount]`). */
export function parsePayoutBatch(raw: Record<string, unknown>, ctx: PayoutContext): PayoutRequest[] {
  for (const name of Object.keys(raw)) if (name !== 'payouts') throw errors.parameterUnknown(name);
  const items = raw.payouts;
  if (items === undefined) throw errors.parameterMissing('payouts');
  if (!Array.isArray(items)) throw errors.parameterInvalid('payouts', 'it must be an array of payouts');
  if (items.length === 0) throw new ApiError('parameter_invalid_empty', 'Invalid payouts: the array must hold at least one payout.', 'payouts');
  if (items.length > BATCH_MAX_ITEMS) throw errors.parameterInvalid('payouts', `a batch holds at most ${BATCH_MAX_ITEMS} payouts, not ${items.length}`);
  const references = new Set<string>();
  return items.map((item: unknown, index) => {
    const at = `payouts[${index}]`;
    if (item === null || typeof item !== 'object' || Array.isArray(item)) throw errors.parameterInvalid(at, 'each payout must be an object');
    let checked: PayoutRequest;
    try {
      checked = checkPayout(item as Record<string, unknown>, ctx, true);
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      const param = err.param === undefined ? at : `${at}[${err.param}]`;
      throw new ApiError(err.code, `${at}: ${err.message}`, param, err.headers);
    }
    const reference = checked.input.reference as string;
    if (references.has(reference)) throw errors.parameterInvalid(`${at}[reference]`, `the reference ${JSON.stringify(reference)} is given twice; each payout of a batch has its own`);
    references.add(reference);
    return checked;
  });
}

const statusInvalid = oneOfErrors(PAYOUT_STATUSES);
const batchInvalid: Raise = ({ param }) => new ApiError('parameter_invalid_empty', 'Invalid batch: it must be the id of a payout batch, not empty.', param);
const PAYOUT_LIST_QUERY = listQuerySchema(
  { status: Joi.string().valid(...PAYOUT_STATUSES), batch: Joi.string() },
  { status: statusInvalid, batch: { 'string.empty': batchInvalid } },
);

/** The list's query: the common cursors, and the optional `status` and `batch` filters. */
export function parsePayoutListQuery(query: URLSearchParams): ListQuery & { status: PayoutStatus | null; batch: string | null } {
  const params = checkQuery(PAYOUT_LIST_QUERY, query, { idKind: 'payout' });
  return { ...listOf(params), status: (params.status ?? null) as PayoutStatus | null, batch: params.batch ?? null };
}
