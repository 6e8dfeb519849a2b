/**
 * Wave's webhooks, as the api's callback route checks them: Wave signs each one
 * (`Wave-Signature`), and a verified one only says "look again" at the attempt its
 * session names (`client_reference`). Pure: no I/O; it imports only common/, so the
 * api may use it (eslint.config.js).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

function field(body: unknown, name: string): unknown {
  return body !== null && typeof body === 'object' ? (body as Record<string, unknown>)[name] : undefined;
}

function text(body: unknown, name: string): string | undefined {
  const value = field(body, name);
  return typeof value === 'string' ? value : typeof value === 'number' ? String(value) : undefined;
}

/** The result of checking a Wave webhook's signature. */
export type WaveSignatureCheck = 'ok' | 'missing' | 'malformed' | 'stale' | 'mismatch';

/** How far a webhook's timestamp may be from our clock. */
export const WAVE_SIGNATURE_TOLERANCE_S = 300;

/**
 * Checks a webhook's `Wave-Signature` header against its raw body: the HMAC-SHA256
 * (hex) of `timestamp + body` with the webhook secret must equal one of the `v1`
 * values, and the timestamp must be within the tolerance of `nowMs`. Pure: no I/O,
 * constant-time comparison.
 */
export function verifyWaveSignature(
  secret: string,
  header: string | undefined,
  rawBody: string | Buffer,
  nowMs: number,
  toleranceS = WAVE_SIGNATURE_TOLERANCE_S,
): WaveSignatureCheck {
  if (!header) return 'missing';
  let timestamp: string | undefined;
  const signatures: Buffer[] = [];
  for (const part of header.split(',')) {
    const at = part.indexOf('=');
    if (at <= 0) return 'malformed';
    const key = part.slice(0, at).trim();
    const value = part.slice(at + 1).trim();
    if (key === 't') timestamp = value;
    else if (key === 'v1' && /^[0-9a-f]{64}$/i.test(value)) signatures.push(Buffer.from(value.toLowerCase(), 'hex'));
  }
  if (!timestamp || !/^\d{1,12}$/.test(timestamp) || signatures.length === 0) return 'malformed';
  if (Math.abs(nowMs / 1000 - Number(timestamp)) > toleranceS) return 'stale';
  const expected = createHmac('sha256', secret).update(timestamp).update(rawBody).digest();
  return signatures.some((signature) => timingSafeEqual(signature, expected)) ? 'ok' : 'mismatch';
}

/** The `Wave-Signature` header Wave would send for this body (for fakes and tests). */
export function signWaveWebhook(secret: string, rawBody: string, timestampS: number): string {
  return `t=${timestampS},v1=${createHmac('sha256', secret).update(String(timestampS)).update(rawBody).digest('hex')}`;
}

/** What a verified webhook names: its type, the session and our attempt id (`client_reference`). */
export function parseWaveWebhook(body: unknown): { type: string; sessionId: string; attemptId: string | null } | null {
  const type = text(body, 'type');
  const data = field(body, 'data');
  const sessionId = text(data, 'id');
  if (!type || !sessionId) return null;
  return { type, sessionId, attemptId: text(data, 'client_reference') ?? null };
}

