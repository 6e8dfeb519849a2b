/** `/v1/operators`: the operator catalog, and which operator a phone number belongs to. */
import { COUNTRIES, type PaymentFlow, type RefundSupport } from '../../common/operator-catalog.js';
import type { OperatorStatus } from '../../common/operator-status.js';
import type { presentOperator, presentResolution } from '../../common/presenters.js';
import { errorResponses, okResponse } from './components.js';
import { closedObject, nullable, ref, type DocumentPart, type Schema } from './schema.js';

type OperatorField = keyof ReturnType<typeof presentOperator>;
type ResolutionField = keyof ReturnType<typeof presentResolution>;

const FLOWS: PaymentFlow[] = ['phone_approval', 'redirect', 'otp'];
const REFUNDS: RefundSupport[] = ['partial', 'full', 'none'];
const STATUSES: OperatorStatus[] = ['operational', 'degraded', 'unavailable'];

export function operatorsPart(options: { operators: string[] }): DocumentPart {
  const id: Schema = { type: 'string', enum: options.operators };
  const country: Schema = { type: 'string', enum: COUNTRIES.map((c) => c.code), description: 'ISO 3166-1 alpha-2.' };
  const operator = closedObject(
    {
      object: { const: 'operator' },
      id,
      name: { type: 'string' },
      countries: {
        type: 'array',
        description: 'Where the operator takes payments; a country appears once per set of currencies that share bounds.',
        items: closedObject({
          country,
          calling_code: { type: 'string', pattern: '^[1-9][0-9]{0,2}$' },
          currencies: { type: 'array', items: { type: 'string', pattern: '^[a-z]{3}$' }, minItems: 1, description: 'Lower-case ISO 4217 codes the operator takes there.' },
          min_amount: { type: 'integer', minimum: 1, description: 'The smallest payment, in the smallest currency unit.' },
          max_amount: { type: 'integer', minimum: 1, description: 'The largest payment, in the smallest currency unit.' },
          account: { ...nullable({ type: 'string' }), description: 'Live mode: the operator account that serves this country, or null (a live confirm there is `operator_not_configured`). Test mode: null.' },
        }),
      },
      flow: { type: 'string', enum: FLOWS, description: 'How the payer approves: on the phone, on a redirect page, or with a one-time code.' },
      refunds: { type: 'string', enum: REFUNDS, description: 'Which refunds the operator supports.' },
      status: {
        type: 'string',
        enum: STATUSES,
        description: 'Test mode: always `operational`. Live mode: `unavailable` without a configured account or while every account\'s breaker is open, `degraded` while some account is unavailable or most recent operator calls fail.',
      },
      accounts: {
        type: 'array',
        description: 'Live mode: the operator\'s accounts (credentials per country), each `unavailable` while its breaker is open (`OPERATOR_BREAKER_FAILURES` failed calls in a row) until a call is answered again. Test mode: empty.',
        items: closedObject({
          id: { type: 'string', description: 'The operator and what tells its accounts apart (MTN target environment, Daraja short code, Wave countries); never a credential.' },
          countries: { type: 'array', items: { type: 'string' } },
          sandbox: { type: 'boolean', description: "MTN's sandbox: EUR and MTN's test numbers only." },
          status: { type: 'string', enum: ['operational', 'unavailable'] },
        }),
      },
      livemode: { type: 'boolean' },
    } satisfies Record<OperatorField, Schema>,
    { description: 'An operator of the catalog, with what it takes in each country. Confirm refuses what it would refuse.' },
  );
  const resolution = closedObject(
    {
      object: { const: 'operator_resolution' },
      phone_number: { type: 'string', description: 'The number, masked.' },
      country: nullable(country),
      operator: { ...nullable(id), description: "The network whose prefix the number carries, or null when no known prefix matches (the number's country then decides)." },
      candidates: { type: 'array', items: id, description: 'Operators that may hold a wallet on this number, in catalog order; what `automatic_operator` chooses from.' },
    } satisfies Record<ResolutionField, Schema>,
    { description: 'Which operator a phone number belongs to, by its prefix in the national numbering plan.' },
  );
  const url = '/v1/operators';
  const tags = ['Operators'];
  return {
    tag: { name: tags[0] as string, description: 'The operators of this deployment: countries, currencies, bounds per payment, flow, refunds and status.' },
    schemas: {
      Operator: operator,
      OperatorList: closedObject(
        {
          object: { const: 'list' },
          url: { const: url },
          has_more: { const: false, description: 'The whole catalog fits in one answer.' },
          data: { type: 'array', items: ref('Operator') },
        },
        { description: 'Every operator of the catalog, in catalog order.' },
      ),
      OperatorResolution: resolution,
    },
    paths: {
      [url]: {
        get: {
          operationId: 'listOperators',
          summary: 'List operators',
          tags,
          responses: { ...okResponse('The operator catalog.', ref('OperatorList')), ...errorResponses([400]) },
        },
      },
      [`${url}/resolve`]: {
        get: {
          operationId: 'resolveOperator',
          summary: 'Which operator a phone number belongs to',
          tags,
          parameters: [
            {
              name: 'phone_number',
              in: 'query',
              required: true,
              description: 'E.164; write `+` as `%2B` (a bare `+` reads as a space, and is taken as `+`).',
              schema: { type: 'string', examples: ['+2250500000000'] },
            },
          ],
          responses: { ...okResponse('The resolution.', ref('OperatorResolution')), ...errorResponses([400]) },
        },
      },
    },
  };
}
