import test from 'ava';
import { ApiError, ERROR_CODES, errorBody, errors, type ErrorCode, type ErrorType } from '../../common/errors.js';
import { readSource, sourceFiles } from '../helpers/sources.js';

test('the error envelope has the contract\'s members, in order, param only when set', (t) => {
  const withParam = JSON.parse(errorBody(errors.parameterMissing('amount').detail(), 'req_1', 'https://api.test'));
  t.deepEqual(Object.keys(withParam.error), ['type', 'code', 'message', 'param', 'request_id', 'doc_url']);
  t.is(withParam.error.doc_url, 'https://api.test/docs/errors#parameter_missing');
  const without = JSON.parse(errorBody(errors.apiKeyMissing().detail(), 'req_2', 'https://api.test'));
  t.false('param' in without.error);
  t.false('operator_decline_code' in without.error);
});

/**
 * DESIGN.md section 4's table, with the codes sections 7 and 9 add, written out here rather than read from common/errors.ts:
 * HTTP status, type, and the codes of each row.
 */
const CONTRACT_TABLE: Array<[status: number, type: ErrorType, codes: string[]]> = [
  [400, 'invalid_request_error', [
    'parameter_missing', 'parameter_invalid', 'parameter_invalid_integer', 'parameter_invalid_string', 'parameter_invalid_boolean',
    'parameter_invalid_empty', 'parameter_out_of_range', 'parameter_unknown', 'parameter_conflict', 'invalid_json', 'url_invalid',
    'currency_invalid', 'operator_invalid', 'event_type_invalid', 'amount_too_small', 'amount_too_large', 'metadata_invalid',
    'idempotency_key_invalid', 'webhook_endpoint_limit',
    // Section 7.
    'payment_intent_unexpected_state', 'phone_number_invalid', 'operator_not_configured',
    // Limits that protect tenants from each other (docs/operating.md; security review H2, M1).
    'webhook_redelivery_limit', 'payment_attempt_limit',
    // Section 10.
    'currency_not_supported',
    // Section 11.
    'charge_already_refunded', 'refund_not_supported',
    // Section 20.
    'refund_limit',
    // Section 17.
    'balance_insufficient', 'payout_unexpected_state',
  ]],
  [400, 'idempotency_error', ['idempotency_key_reused']],
  [401, 'invalid_request_error', ['api_key_missing', 'api_key_invalid']],
  [402, 'operator_error', ['payment_declined']],
  // Not the public API's: only the operators' queue dashboard answers it.
  [403, 'invalid_request_error', ['dashboard_action_forbidden']],
  [404, 'invalid_request_error', ['resource_missing', 'route_not_found']],
  [405, 'invalid_request_error', ['method_not_allowed']],
  [409, 'invalid_request_error', ['idempotency_in_flight', 'webhook_recovery_in_progress', 'lock_timeout']],
  [413, 'invalid_request_error', ['body_too_large']],
  [415, 'invalid_request_error', ['content_type_invalid']],
  // Section 20: test mode's daily quota of new objects.
  [429, 'invalid_request_error', ['rate_limit', 'quota_exceeded']],
  [500, 'api_error', ['internal_error']],
  [503, 'api_error', ['service_unavailable', 'operator_unavailable', 'processing_timeout']],
];

test('the error catalogue is the contract table: the same codes, each with its status and type', (t) => {
  const contract = Object.fromEntries(CONTRACT_TABLE.flatMap(([status, type, codes]) => codes.map((code) => [code, { status, type }])));
  const catalogue = Object.fromEntries(Object.entries(ERROR_CODES).map(([code, info]) => [code, { status: info.status, type: info.type }]));
  t.deepEqual(catalogue, contract);
  for (const [code, { status, type }] of Object.entries(contract)) {
    const err = new ApiError(code as ErrorCode, 'm');
    t.is(err.status, status, code);
    t.is(err.type, type, code);
  }
  t.is(errors.cursorMissing('starting_after', 'x').status, 400, 'resource_missing as a list cursor is bad input');
  t.is(errors.resourceMissing('payment_intent', 'x', 'id').status, 404);
  t.is(errors.idempotencyKeyReused().type, 'idempotency_error');
  t.is(errors.processingTimeout().headers['Retry-After'], '1');
});

test('the reused-key message is written once, in common/errors.ts: the worker refuses with errors.idempotencyKeyReused()', (t) => {
  const phrase = 'can only be used with the same parameters';
  t.true(errors.idempotencyKeyReused().message.includes(phrase));
  t.deepEqual(sourceFiles().filter((file) => readSource(file).includes(phrase)), ['common/errors.ts']);
});
