import { errors } from '../../common/errors.js';

export const IDEMPOTENCY_KEY_MAX_LENGTH = 255;

const KEY = new RegExp(`^[\\x20-\\x7e]{1,${IDEMPOTENCY_KEY_MAX_LENGTH}}$`);

/**
 * The `Idempotency-Key` header: null when absent, else 1…255 printable ASCII
 * characters. An empty value, a repeated header (an array) or any other character
 * is `idempotency_key_invalid`.
 */
export function parseIdempotencyKey(header: string | string[] | undefined): string | null {
  if (header === undefined) return null;
  if (typeof header !== 'string' || !KEY.test(header)) throw errors.idempotencyKeyInvalid();
  return header;
}
