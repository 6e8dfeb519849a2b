/**
 * One HTTP exchange with a live operator's API, with the line between an answer and
 * no answer drawn once for every connector:
 *
 * - a 2xx, 3xx or 4xx other than 429 is an answer, returned to the connector to read;
 * - a 429 is throttling, never an answer: it throws `OperatorUnavailableError` with
 *   reason `throttled` and the `Retry-After` the operator sent (DESIGN section 14),
 *   so no request is recorded as made and nothing is declined;
 * - a 5xx, a timeout, or a connection that failed is no answer: it throws
 *   `OperatorUnavailableError` (common/infra-errors.ts), so the job retries and
 *   nothing is declined. A connector that knows a 5xx body to be an answer (Daraja
 *   answers "still being processed" with a 500) passes `answers5xx`.
 *
 * Thrown messages carry the operator, the method and the path only: never a header
 * (credentials), a body (phone numbers), or a query string. A 5xx's own code and
 * message (MTN and Daraja answer some configuration errors with a 500: "Currency not
 * supported", "Merchant does not exist") ride along as `operatorMessage`, for the log.
 */
import { OperatorUnavailableError } from '../../common/infra-errors.js';

export interface OperatorResponse {
  status: number;
  /** The parsed JSON body, or null when there was none or it was not JSON. */
  body: unknown;
}

export interface OperatorCall {
  operator: string;
  method: 'GET' | 'POST' | 'PUT';
  url: string;
  headers: Record<string, string>;
  body?: unknown;
  timeoutMs: number;
  /** A 5xx whose body this predicate accepts is returned as an answer, not thrown. */
  answers5xx?: (status: number, body: unknown) => boolean;
}

const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'UND_ERR_SOCKET']);

/** True when the failure shows the request never reached the operator (so it is safe to send again). */
export function neverSent(err: unknown): boolean {
  return err instanceof OperatorUnavailableError && err.reason === 'network' && err.message.endsWith('(refused)');
}

export async function callOperator(call: OperatorCall): Promise<OperatorResponse> {
  const { pathname } = new URL(call.url);
  const what = `${call.method} ${pathname}`;
  const headers: Record<string, string> = { accept: 'application/json', ...call.headers };
  let payload: string | undefined;
  if (call.body !== undefined) {
    payload = JSON.stringify(call.body);
    headers['content-type'] = 'application/json';
  }
  let response: Response;
  let text: string;
  try {
    response = await fetch(call.url, { method: call.method, headers, body: payload, signal: AbortSignal.timeout(call.timeoutMs), redirect: 'manual' });
    text = await response.text();
  } catch (err) {
    if (err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError')) {
      throw new OperatorUnavailableError(call.operator, 'timeout', `${what} gave no answer within ${call.timeoutMs} ms`);
    }
    const code = errorCode(err);
    const refused = code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EAI_AGAIN';
    const known = code && NETWORK_CODES.has(code) ? code : 'connection failed';
    throw new OperatorUnavailableError(call.operator, 'network', `${what}: ${known}${refused ? ' (refused)' : ''}`);
  }
  const body = parseJson(text);
  if (response.status === 429) {
    throw new OperatorUnavailableError(call.operator, 'throttled', `${what} answered 429`, 429, retryAfterMs(response.headers.get('retry-after')));
  }
  if (response.status >= 500 && !call.answers5xx?.(response.status, body)) {
    throw new OperatorUnavailableError(call.operator, 'status', `${what} answered ${response.status}`, response.status, retryAfterMs(response.headers.get('retry-after')), operatorMessage(body));
  }
  return { status: response.status, body };
}

/** `Retry-After` as milliseconds: delta-seconds or an HTTP date; undefined when absent or unreadable. Capped at an hour. */
export function retryAfterMs(value: string | null, now = Date.now()): number | undefined {
  if (!value) return undefined;
  const trimmed = value.trim();
  const ms = /^\d+$/.test(trimmed) ? Number(trimmed) * 1000 : Date.parse(trimmed) - now;
  return Number.isFinite(ms) ? Math.min(Math.max(0, ms), 3600_000) : undefined;
}

/** An error body's code and message (`code`/`message`, Daraja's `errorCode`/`errorMessage`), short, for the log. */
function operatorMessage(body: unknown): string | undefined {
  const code = text(body, 'code') ?? text(body, 'errorCode');
  const message = text(body, 'message') ?? text(body, 'errorMessage');
  const both = [code, message].filter(Boolean).join(' ');
  return both ? both.slice(0, 200) : undefined;
}

function errorCode(err: unknown): string | undefined {
  let current: unknown = err;
  for (let depth = 0; depth < 4 && current instanceof Error; depth++) {
    const code = (current as NodeJS.ErrnoException).code;
    if (code) return code;
    current = (current as Error & { cause?: unknown }).cause;
  }
  return undefined;
}

function parseJson(text: string): unknown {
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/** A field of a JSON object body, or undefined. */
export function field(body: unknown, name: string): unknown {
  return body !== null && typeof body === 'object' ? (body as Record<string, unknown>)[name] : undefined;
}

/** A string field of a JSON object body, or undefined. */
export function text(body: unknown, name: string): string | undefined {
  const value = field(body, name);
  return typeof value === 'string' ? value : typeof value === 'number' ? String(value) : undefined;
}
