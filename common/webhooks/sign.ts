/**
 * Every delivery is signed twice over the exact bytes sent, so a receiver can verify
 * it with either kind of library:
 * - Standard Webhooks (https://www.standardwebhooks.com/): `webhook-signature` is
 *   `v1,` + base64 HMAC-SHA256 of `id.timestamp.body`, keyed with the base64-decoded
 *   part of the endpoint secret after `whsec_`;
 * - Stripe's scheme: `Stripe-Signature: t=<timestamp>,v1=<hex HMAC-SHA256 of
 *   "timestamp.body">`, keyed with the endpoint secret string as it was shown
 *   (`whsec_…` included, as Stripe's SDKs use it), so `stripe.webhooks.constructEvent`
 *   verifies our events.
 * During a rotation's grace period each header carries one signature per secret.
 */
import { createHmac } from 'node:crypto';

export const SECRET_PREFIX = 'whsec_';

/** The HMAC key of an endpoint secret (`whsec_` + base64). Throws on a malformed secret. */
export function secretKey(secret: string): Buffer {
  const encoded = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded)) throw new Error('webhook secret is not base64 after whsec_');
  const key = Buffer.from(encoded, 'base64');
  if (key.length === 0) throw new Error('webhook secret is empty');
  return key;
}

/** The base64 HMAC-SHA256 of `id.timestamp.body`, without the `v1,` version tag. */
export function signatureDigest(key: Buffer, id: string, timestamp: number, body: string | Buffer): string {
  return createHmac('sha256', key)
    .update(`${id}.${timestamp}.`, 'utf8')
    .update(typeof body === 'string' ? Buffer.from(body, 'utf8') : body)
    .digest('base64');
}

/** The `webhook-signature` header value for one message. */
export function signWebhook(secret: string, id: string, timestamp: number, body: string | Buffer): string {
  return `v1,${signatureDigest(secretKey(secret), id, timestamp, body)}`;
}

/** The hex HMAC-SHA256 of `timestamp.body`, keyed with the secret string itself (Stripe's `v1` scheme). */
export function stripeDigest(secret: string, timestamp: number, body: string | Buffer): string {
  return createHmac('sha256', secret)
    .update(`${timestamp}.`, 'utf8')
    .update(typeof body === 'string' ? Buffer.from(body, 'utf8') : body)
    .digest('hex');
}

/** The `Stripe-Signature` header value: `t=<timestamp>`, then one `v1=` per secret. */
export function stripeSignature(secrets: string | readonly string[], timestamp: number, body: string | Buffer): string {
  const all = typeof secrets === 'string' ? [secrets] : secrets;
  return [`t=${timestamp}`, ...all.map((secret) => `v1=${stripeDigest(secret, timestamp, body)}`)].join(',');
}

/**
 * The headers that sign one delivery attempt: the three of Standard Webhooks and
 * `Stripe-Signature`. With several secrets (during a rotation's grace period: the
 * new one first, then the previous one), one signature each, so a receiver holding
 * either verifies: space-separated in `webhook-signature`, one `v1=` entry each in
 * `Stripe-Signature`.
 */
export function webhookHeaders(secrets: string | readonly string[], id: string, timestamp: number, body: string | Buffer): Record<string, string> {
  const all = typeof secrets === 'string' ? [secrets] : secrets;
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': all.map((secret) => signWebhook(secret, id, timestamp, body)).join(' '),
    'stripe-signature': stripeSignature(all, timestamp, body),
  };
}

/** The secrets that sign a delivery now: the current one, and the previous one until it expires. */
export function signingSecrets(endpoint: { secret: string; previous_secret?: string | null; previous_secret_expires_at?: number | null }, nowMs: number): string[] {
  const previous = endpoint.previous_secret;
  if (previous && (endpoint.previous_secret_expires_at ?? 0) > nowMs) return [endpoint.secret, previous];
  return [endpoint.secret];
}
