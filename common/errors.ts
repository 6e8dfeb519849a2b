/**
 * The one error model of the service. Every answer that is not a success is an
 * `ApiError`, rendered by one middleware into the envelope of DESIGN.md section 4.
 */

export type ErrorType = 'invalid_request_error' | 'idempotency_error' | 'operator_error' | 'api_error';

interface CodeInfo {
  status: number;
  type: ErrorType;
  description: string;
}

/** The complete list of codes the service answers with, and what each means. */
export const ERROR_CODES = {
  parameter_missing: { status: 400, type: 'invalid_request_error', description: 'A required parameter is missing.' },
  parameter_invalid: { status: 400, type: 'invalid_request_error', description: 'A parameter has the wrong shape (for example a repeated query parameter, a duplicated array item, or a form body beyond its bounds of nesting, parameter count or array length).' },
  parameter_invalid_integer: { status: 400, type: 'invalid_request_error', description: 'A parameter must be an integer (within its range, for `limit`). Strings, floats and booleans are refused.' },
  parameter_invalid_string: { status: 400, type: 'invalid_request_error', description: 'A parameter must be a string (within its length limit).' },
  parameter_invalid_boolean: { status: 400, type: 'invalid_request_error', description: 'A parameter must be a boolean.' },
  parameter_invalid_empty: { status: 400, type: 'invalid_request_error', description: 'An array or string parameter is empty where at least one item is needed.' },
  parameter_out_of_range: { status: 400, type: 'invalid_request_error', description: 'A value is outside its allowed range (`expires_at`: between 60 seconds and 30 days from now).' },
  parameter_unknown: { status: 400, type: 'invalid_request_error', description: 'The request has a body field or query parameter this endpoint does not accept.' },
  parameter_conflict: { status: 400, type: 'invalid_request_error', description: 'Two parameters cannot be used together (for example `starting_after` with `ending_before`, or `automatic_operator: true` with a `selected_operator`).' },
  invalid_json: { status: 400, type: 'invalid_request_error', description: 'The request body is not valid JSON, or is JSON but not an object, or is JSON sent with a form content type (send it with `Content-Type: application/json`).' },
  url_invalid: { status: 400, type: 'invalid_request_error', description: 'The webhook URL is not an absolute http(s) URL of at most 2048 characters, has credentials, or (live mode) is not https or points at a local or private address.' },
  currency_invalid: { status: 400, type: 'invalid_request_error', description: 'The currency is not an ISO 4217 code.' },
  operator_invalid: { status: 400, type: 'invalid_request_error', description: 'An operator is not in the catalog, or `selected_operator` is not one of `allowed_operators`.' },
  event_type_invalid: { status: 400, type: 'invalid_request_error', description: 'An event type in `enabled_events` (or a `type` filter) is not in the catalog.' },
  currency_not_supported: { status: 400, type: 'invalid_request_error', description: "At confirm: the operator does not take the payment intent's currency in the phone number's country (for example `xof` with M-Pesa in Kenya, which takes `kes`). `GET /v1/operators` lists the currencies of each operator and country; change the intent's currency while it is `new`, or pay with another operator." },
  amount_too_small: { status: 400, type: 'invalid_request_error', description: "The amount is below 1 (in the smallest currency unit) or, at confirm, below the operator's minimum for one payment in that country and currency (`min_amount` in `GET /v1/operators`)." },
  amount_too_large: { status: 400, type: 'invalid_request_error', description: "The amount is above 999999999999 or, at confirm, above the operator's maximum for one payment in that country and currency (`max_amount` in `GET /v1/operators`), or (a refund) above what remains refundable of its payment." },
  webhook_endpoint_limit: { status: 400, type: 'invalid_request_error', description: 'The project already has the maximum number of webhook endpoints in this mode (16 unless the operator changed it). Delete one, or change an existing one, to add another.' },
  metadata_invalid: { status: 400, type: 'invalid_request_error', description: 'Metadata must be an object of at most 50 keys; keys of 1 to 40 characters; values strings of at most 500 characters; no NUL characters.' },
  payment_intent_unexpected_state: { status: 400, type: 'invalid_request_error', description: "The payment intent's status does not allow this operation (for example a confirm once it succeeded, a cancel while it is processing, or a change of `amount` after a confirm). The message names the status." },
  phone_number_invalid: { status: 400, type: 'invalid_request_error', description: 'The phone number is not in E.164 form (`+` and 8 to 15 digits, for example `+2250700000000`), or, at confirm, the operator does not serve its country (`GET /v1/operators` lists the countries of each operator).' },
  operator_not_configured: { status: 400, type: 'invalid_request_error', description: 'Live mode: no connector is configured for this operator, so no live payment can be asked of it. Test mode needs none.' },
  charge_already_refunded: { status: 400, type: 'invalid_request_error', description: 'The payment has nothing left to refund: its succeeded and pending refunds already hold its whole amount.' },
  refund_not_supported: { status: 400, type: 'invalid_request_error', description: "The payment's operator does not refund this way: it refunds only in full (a partial amount is refused), or not at all." },
  balance_insufficient: { status: 400, type: 'invalid_request_error', description: 'A payout asks for more than the available balance of its currency (`GET /v1/balance`). Nothing was held or sent.' },
  payout_unexpected_state: { status: 400, type: 'invalid_request_error', description: "The payout's status does not allow this operation (a cancel once it is `in_transit`, `paid`, `failed` or `canceled`). The message names the status." },
  payment_declined: { status: 402, type: 'operator_error', description: 'The operator declined the payment; `operator_decline_code` says why, `payment_intent` is the intent as it is now (back to `new`, with `last_payment_error`), and it can be confirmed again.' },
  idempotency_key_invalid: { status: 400, type: 'invalid_request_error', description: 'The `Idempotency-Key` header must be 1 to 255 printable ASCII characters.' },
  idempotency_key_reused: { status: 400, type: 'idempotency_error', description: 'The idempotency key was already used for a different request (another method, path or body). Use a new key for a new request.' },
  api_key_missing: { status: 401, type: 'invalid_request_error', description: 'No API key was given. Send `Authorization: Bearer sk_test_…`, or the key as the HTTP Basic user name (`curl -u sk_test_…:`).' },
  api_key_invalid: { status: 401, type: 'invalid_request_error', description: 'The API key is unknown or has been revoked.' },
  resource_missing: { status: 404, type: 'invalid_request_error', description: 'No object with this id exists in the scope (project and mode) of the API key. As a list cursor, the answer is 400.' },
  route_not_found: { status: 404, type: 'invalid_request_error', description: 'No route matches this path.' },
  method_not_allowed: { status: 405, type: 'invalid_request_error', description: 'The path exists but not with this method; the `Allow` header lists the methods it takes.' },
  dashboard_action_forbidden: { status: 403, type: 'invalid_request_error', description: 'The queue dashboard refused the action: it came from another origin (`Origin` or `Referer`), or it adds or edits jobs, which the dashboard does not allow. Retry and clean remain available.' },
  webhook_recovery_in_progress: { status: 409, type: 'invalid_request_error', description: 'A recovery of this webhook endpoint is already running. Retry once it has answered.' },
  webhook_redelivery_limit: { status: 400, type: 'invalid_request_error', description: 'The webhook endpoint already has the maximum number of redeliveries (resend, recover) waiting or scheduled (10000 unless the operator changed it). Retry once they have been delivered or given up.' },
  payment_attempt_limit: { status: 400, type: 'invalid_request_error', description: 'The payment intent has been declined or failed the maximum number of times (20 unless the operator changed it). Create a new payment intent to try again.' },
  lock_timeout: { status: 409, type: 'invalid_request_error', description: 'Another request is changing this object right now (its lock was held too long, or too many writes of it are in flight). Nothing was done; retry shortly, with the same idempotency key.' },
  refund_limit: { status: 400, type: 'invalid_request_error', description: 'The payment intent already has the maximum number of refunds (100 unless the operator changed it), failed ones included. Nothing was done.' },
  idempotency_in_flight: { status: 409, type: 'invalid_request_error', description: 'A request with this idempotency key is still being processed. Retry after a short wait with the same key.' },
  body_too_large: { status: 413, type: 'invalid_request_error', description: 'The request body is larger than 64 KiB (1 MiB for `POST /v1/payout_batches`).' },
  content_type_invalid: { status: 415, type: 'invalid_request_error', description: 'Request bodies must be sent with `Content-Type: application/json` or `application/x-www-form-urlencoded`.' },
  rate_limit: { status: 429, type: 'invalid_request_error', description: 'Too many requests for this API key, or too many webhook endpoint test calls in flight for its project and mode (2 unless the operator changed it). Wait for the number of seconds in `Retry-After`.' },
  quota_exceeded: { status: 429, type: 'invalid_request_error', description: 'Test mode: the project has created its maximum of objects (payment intents, refunds, webhook endpoints, payouts and payout batches together, a batch counting each of its items) for the day (100000 a UTC day unless the operator changed it). Nothing was created; `Retry-After` says when the next UTC day begins. Live mode has no such quota.' },
  internal_error: { status: 500, type: 'api_error', description: 'An unexpected error on our side. It has been logged with the request id.' },
  service_unavailable: { status: 503, type: 'api_error', description: 'A dependency of the service is unavailable. Retry after `Retry-After` seconds; with an idempotency key a retry is safe.' },
  operator_unavailable: { status: 503, type: 'api_error', description: "Live mode: the operator account that would take this payment is unavailable (its breaker is open after repeated failures; `GET /v1/operators` shows it). Nothing was changed and nobody was asked. Retry after `Retry-After` seconds." },
  processing_timeout: { status: 503, type: 'api_error', description: 'The request was accepted but did not finish in time. It goes on; retry with the same idempotency key to get its result.' },
} as const satisfies Record<string, CodeInfo>;

export type ErrorCode = keyof typeof ERROR_CODES;

/** The body of an error answer, without `request_id` and `doc_url` (added when rendered). */
export interface ErrorDetail {
  code: ErrorCode;
  message: string;
  param?: string;
  /** Only on `payment_declined`: the operator's reason, normalised. */
  operator_decline_code?: string;
  /** Only on `payment_declined`: the intent after the decline. */
  payment_intent?: unknown;
}

export class ApiError extends Error {
  readonly status: number;
  readonly type: ErrorType;
  /** Headers to send with the error, e.g. `Retry-After` or `Allow`. */
  readonly headers: Record<string, string>;

  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly param?: string,
    headers: Record<string, string> = {},
    /** Only for a code whose status depends on where it arises (`resource_missing` as a cursor is 400). */
    status?: number,
  ) {
    super(message);
    this.name = 'ApiError';
    this.status = status ?? ERROR_CODES[code].status;
    this.type = ERROR_CODES[code].type;
    this.headers = headers;
  }

  detail(): ErrorDetail {
    return this.param === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, param: this.param };
  }

  static fromDetail(detail: ErrorDetail): ApiError {
    return new ApiError(detail.code, detail.message, detail.param);
  }
}

/** Renders the error envelope exactly as the contract shows it, member order included. */
export function errorBody(detail: ErrorDetail, requestId: string, baseUrl: string): string {
  const info = ERROR_CODES[detail.code];
  const error: Record<string, unknown> = { type: info.type, code: detail.code, message: detail.message };
  if (detail.param !== undefined) error.param = detail.param;
  if (detail.operator_decline_code !== undefined) error.operator_decline_code = detail.operator_decline_code;
  if (detail.payment_intent !== undefined) error.payment_intent = detail.payment_intent;
  error.request_id = requestId;
  error.doc_url = `${baseUrl}/docs/errors#${detail.code}`;
  return JSON.stringify({ error });
}

export const errors = {
  parameterMissing: (param: string) => new ApiError('parameter_missing', `Missing required param: ${param}.`, param),
  parameterUnknown: (param: string) => new ApiError('parameter_unknown', `Received unknown parameter: ${param}.`, param),
  parameterInvalid: (param: string, why: string) => new ApiError('parameter_invalid', `Invalid ${param}: ${why}.`, param),
  parameterConflict: (param: string, why: string) => new ApiError('parameter_conflict', why, param),
  invalidJson: (why: string) => new ApiError('invalid_json', `Invalid request body: ${why}.`),
  jsonSentAsForm: () =>
    new ApiError(
      'invalid_json',
      'Invalid request body: it is JSON, but was sent as `Content-Type: application/x-www-form-urlencoded` (what `curl -d` sends by default). Send JSON with `Content-Type: application/json` (curl: `-H \'Content-Type: application/json\'`), or send the parameters form-encoded (`-d amount=5000`).',
    ),
  resourceMissing: (kind: string, id: string, param?: string) =>
    new ApiError('resource_missing', `No such ${kind}: '${id}'.`, param),
  /** A list cursor naming no object of the caller's scope: bad input, so 400. */
  cursorMissing: (param: string, id: string) =>
    new ApiError('resource_missing', `No such object: '${id}'.`, param, {}, 400),
  routeNotFound: (method: string, path: string) =>
    new ApiError('route_not_found', `Unrecognized request URL (${method}: ${path}).`),
  methodNotAllowed: (method: string, allowed: string[]) =>
    new ApiError('method_not_allowed', `The method ${method} is not allowed on this path; allowed: ${allowed.join(', ')}.`, undefined, {
      Allow: allowed.join(', '),
    }),
  /** On `/v1`: the secret key, as Bearer or as the HTTP Basic user name. */
  apiKeyMissing: () =>
    new ApiError(
      'api_key_missing',
      'You did not provide an API key. Provide it in the Authorization header, as `Bearer sk_...`, or as the user name of HTTP Basic auth (`curl -u sk_...:`).',
    ),
  /** On the admin API: the operator's `ADMIN_TOKEN`, as Bearer only. */
  adminTokenMissing: () =>
    new ApiError('api_key_missing', 'You did not provide the admin token. Provide it in the Authorization header, as `Bearer $ADMIN_TOKEN`.'),
  apiKeyInvalid: () => new ApiError('api_key_invalid', 'Invalid API key provided.'),
  bodyTooLarge: (limit: number) => new ApiError('body_too_large', `The request body is larger than ${limit} bytes.`),
  contentTypeInvalid: (accepted: readonly string[] = ['application/json', 'application/x-www-form-urlencoded']) =>
    new ApiError('content_type_invalid', `Request bodies must be sent with \`Content-Type: ${accepted.join('` or `')}\`.`),
  idempotencyKeyInvalid: () =>
    new ApiError('idempotency_key_invalid', 'The Idempotency-Key header must be 1 to 255 printable ASCII characters.'),
  idempotencyKeyReused: () =>
    new ApiError(
      'idempotency_key_reused',
      'Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than the one used in the original request.',
    ),
  idempotencyInFlight: () =>
    new ApiError(
      'idempotency_in_flight',
      'A request with this idempotency key is still being processed. Retry shortly with the same key.',
      undefined,
      { 'Retry-After': '1' },
    ),
  rateLimit: (retryAfterSeconds: number) =>
    new ApiError('rate_limit', 'Too many requests hit the API too quickly for this API key.', undefined, {
      'Retry-After': String(retryAfterSeconds),
    }),
  testCallsInFlight: (limit: number, retryAfterSeconds: number) =>
    new ApiError('rate_limit', `Too many webhook endpoint test calls in flight for this project and mode: at most ${limit} at a time.`, undefined, {
      'Retry-After': String(retryAfterSeconds),
    }),
  quotaExceeded: (limit: number, retryAfterSeconds: number) =>
    new ApiError('quota_exceeded', `Test mode allows ${limit} new objects a day per project, and this project has made them today (UTC). Nothing was created; retry in ${retryAfterSeconds} s, when the next UTC day begins.`, undefined, {
      'Retry-After': String(retryAfterSeconds),
    }),
  recoveryInProgress: () =>
    new ApiError('webhook_recovery_in_progress', 'A recovery of this webhook endpoint is already running. Retry once it has answered.', undefined, { 'Retry-After': '1' }),
  serviceUnavailable: (retryAfterSeconds = 1) =>
    new ApiError('service_unavailable', 'The service is temporarily unavailable. Please retry shortly.', undefined, {
      'Retry-After': String(retryAfterSeconds),
    }),
  operatorUnavailable: (operator: string, retryAfterSeconds: number) =>
    new ApiError('operator_unavailable', `${operator} is unavailable right now (repeated failures reaching it); nothing was changed. Retry in ${retryAfterSeconds} s.`, undefined, {
      'Retry-After': String(retryAfterSeconds),
    }),
  lockTimeout: () =>
    new ApiError('lock_timeout', 'Another request is changing this object right now; nothing was done. Retry shortly with the same idempotency key.', undefined, { 'Retry-After': '1' }),
  processingTimeout: () =>
    new ApiError(
      'processing_timeout',
      'The request did not finish in time; it is still being processed. Retry with the same Idempotency-Key to get its result.',
      undefined,
      { 'Retry-After': '1' },
    ),
  unexpectedState: (status: string, action: string) =>
    new ApiError('payment_intent_unexpected_state', `You cannot ${action} this PaymentIntent because it has a status of ${status}.`),
  internal: () => new ApiError('internal_error', 'An unexpected error occurred. It has been logged; please contact support with the request id.'),
};
