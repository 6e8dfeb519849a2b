import { errors } from '../../common/errors.js';

export const IDEMPOTENCY_KEY_MAX_LENGTH = 255;

const KEY = new RegExp(`^[\\x20-\\x7e]{1,${IDEMPOTENCY_KEY_MAX_LENGTH}}$`);

/**
 * The `Idempotency-Key` header, from each of its lines as sent (Node's
 * `headersDistinct`, which does not join repeats with ", "): null when absent, else
 * 1…255 printable ASCII characters. An empty value, a header sent twice or any other
 * character is `idempotency_key_invalid`.
 */
export function parseIdempotencyKey(lines: string[] | undefined): string | null {
  if (lines === undefined) return null;
  const [header] = lines;
  if (lines.length !== 1 || header === undefined || !KEY.test(header)) throw errors.idempotencyKeyInvalid();
  return header;
}
