import type { ExecutionContext } from 'ava';
import { ApiError, type ErrorCode } from '../../common/errors.js';

/**
 * Asserts that `fn` refuses its input as the contract says: it throws a 400 `ApiError`
 * with `code`, about `param` (about no parameter when `param` is undefined). Returns
 * the error for further checks.
 */
export function rejects(t: ExecutionContext, fn: () => unknown, code: ErrorCode, param?: string): ApiError {
  const error = t.throws<ApiError>(fn, { instanceOf: ApiError });
  t.is(error?.code, code);
  t.is(error?.param, param);
  t.is(error?.status, 400);
  return error!;
}
