/**
 * Verification of a received webhook, for receivers (Standard Webhooks scheme).
 *
 * ```ts
 * const event = verifyWebhook(process.env.WEBHOOK_SECRET!, req.headers, rawBody);
 * ```
 *
 * `rawBody` must be the bytes as received, before any JSON parsing.
 */
import { timingSafeEqual } from 'node:crypto';
import { secretKey, signatureDigest } from './sign.js';

/** Thrown when a delivery cannot be trusted; `message` says why. */
export class WebhookVerificationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WebhookVerificationError';
  }
}

export type WebhookHeaders = Record<string, string | string[] | undefined> | Headers;

export interface VerifyOptions {
  /** How far the `webhook-timestamp` may be from now, either way (replay window). Default 300. */
  toleranceSeconds?: number;
  /** The current time (a Date or epoch milliseconds); default the system clock. */
  now?: Date | number;
}

function header(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  for (const [key, value] of Object.entries(headers as Record<string, string | string[] | undefined>)) {
    if (key.toLowerCase() !== name) continue;
    return Array.isArray(value) ? value.join(' ') : value;
  }
  return undefined;
}

/**
 * Checks the `webhook-id`, `webhook-timestamp` and `webhook-signature` headers of a
 * delivery against `secret` (`whsec_…`) and the raw body, and returns the parsed
 * event. Several space-separated signatures are accepted (as during a secret
 * rotation); one matching `v1` signature is enough. Comparison is constant-time.
 *
 * @throws WebhookVerificationError when a header is missing or malformed, the
 *   timestamp is outside the tolerance, or no signature matches.
 */
export function verifyWebhook<T = unknown>(
  secret: string,
  headers: WebhookHeaders,
  body: string | Buffer,
  options: VerifyOptions = {},
): T {
  const toleranceSeconds = options.toleranceSeconds ?? 300;
  const id = header(headers, 'webhook-id');
  const timestampHeader = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  if (!id || !timestampHeader || !signatures) {
    throw new WebhookVerificationError('missing webhook-id, webhook-timestamp or webhook-signature header');
  }
  if (!/^\d{1,15}$/.test(timestampHeader.trim())) throw new WebhookVerificationError('invalid webhook-timestamp header');
  const timestamp = Number(timestampHeader.trim());
  const nowMs = options.now === undefined ? Date.now() : Number(options.now);
  const nowSeconds = Math.floor(nowMs / 1000);
  if (nowSeconds - timestamp > toleranceSeconds) throw new WebhookVerificationError('webhook timestamp too old');
  if (timestamp - nowSeconds > toleranceSeconds) throw new WebhookVerificationError('webhook timestamp too new');

  let key: Buffer;
  try {
    key = secretKey(secret);
  } catch (err) {
    throw new WebhookVerificationError((err as Error).message);
  }
  const bytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
  const expected = Buffer.from(signatureDigest(key, id, timestamp, bytes), 'utf8');
  let matched = false;
  for (const versioned of signatures.split(' ')) {
    const comma = versioned.indexOf(',');
    if (comma === -1 || versioned.slice(0, comma) !== 'v1') continue;
    const candidate = Buffer.from(versioned.slice(comma + 1), 'utf8');
    if (candidate.length === expected.length && timingSafeEqual(candidate, expected)) matched = true;
  }
  if (!matched) throw new WebhookVerificationError('no matching webhook signature');
  try {
    return JSON.parse(bytes.toString('utf8')) as T;
  } catch {
    throw new WebhookVerificationError('webhook body is not JSON');
  }
}
