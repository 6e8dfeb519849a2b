/**
 * What the operators' callbacks may change, and how they are told apart from forged
 * ones: the pure checks and records that the api's callback routes and the worker's
 * connectors (worker/operators/) share, so an api route never needs worker code.
 *
 * - Wave signs its webhooks (`Wave-Signature`): `verifyWaveSignature`.
 * - Daraja's callbacks are unsigned: each callback URL the M-Pesa connector gives
 *   carries the attempt (or refund) id and `mpesaCallbackToken`, an HMAC of that id
 *   under the consumer secret, so only Safaricom, which saw the URL, can call it.
 *   `recordStkCallback` and `recordReversalResult` keep what a genuine callback
 *   says (never the phone number) in MongoDB; a payment's outcome still comes from
 *   the STK query, a reversal's from this record (Daraja has no reversal query).
 * - MTN's callback is unsigned and carries nothing we keep: it is only "look again".
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Db } from 'mongodb';
import type { MpesaConfig } from './config.js';
import { isDuplicateKey } from './mongo.js';

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

/** Where the M-Pesa connector keeps its claims and the callbacks' facts (MongoDB). */
export const MPESA_COLLECTIONS = { requests: 'mpesa_requests', results: 'mpesa_results' } as const;

/** A fact an M-Pesa callback gave, kept in `mpesa_results`. */
export interface ResultDoc {
  _id: string;
  /** The attempt or refund the callback's URL named. */
  subject: string;
  result_code: string;
  /** STK: CheckoutRequestID; reversal: OriginatorConversationID. */
  operator_id?: string;
  /** STK: MpesaReceiptNumber; reversal: its TransactionID. */
  receipt?: string;
  amount?: number;
  received_at: number;
}

/** The token that a callback URL of ours carries for `subject` (an attempt or a refund id). */
export function mpesaCallbackToken(config: Pick<MpesaConfig, 'consumerSecret'>, subject: string): string {
  return createHmac('sha256', config.consumerSecret).update(`mpesa-callback:${subject}`).digest('base64url');
}

function tokenMatches(config: Pick<MpesaConfig, 'consumerSecret'>, subject: string, token: string | null | undefined): boolean {
  if (!token) return false;
  const expected = Buffer.from(mpesaCallbackToken(config, subject));
  const given = Buffer.from(token);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/**
 * Records a genuine STK callback (`POST {CallBackURL}?attempt=…&t=…`) and returns the
 * attempt to look at again; null for a callback whose token does not match or whose
 * body is not Daraja's (it changes nothing). A repeated callback changes nothing.
 * What is kept: the result code, receipt number and amount, never the phone number.
 */
export async function recordStkCallback(
  db: Db,
  config: Pick<MpesaConfig, 'consumerSecret'>,
  params: { attempt?: string | null; t?: string | null },
  body: unknown,
  now: number = Date.now(),
): Promise<{ attemptId: string } | null> {
  const attemptId = params.attempt;
  if (!attemptId || !tokenMatches(config, attemptId, params.t)) return null;
  const callback = field(field(body, 'Body'), 'stkCallback');
  const checkoutId = text(callback, 'CheckoutRequestID');
  const resultCode = text(callback, 'ResultCode');
  if (!checkoutId || resultCode === undefined) return null;
  const items = field(field(callback, 'CallbackMetadata'), 'Item');
  const item = (name: string) => (Array.isArray(items) ? items.find((i) => text(i, 'Name') === name) : undefined);
  const receipt = text(item('MpesaReceiptNumber'), 'Value');
  const amount = Number(field(item('Amount'), 'Value'));
  const doc: ResultDoc = {
    _id: `stk:${attemptId}`,
    subject: attemptId,
    result_code: resultCode,
    operator_id: checkoutId,
    ...(receipt ? { receipt } : {}),
    ...(Number.isFinite(amount) ? { amount } : {}),
    received_at: now,
  };
  await insertIgnoringDuplicate(db, doc);
  return { attemptId };
}

/**
 * Records a genuine reversal `Result` (`POST {ResultURL}?refund=…&t=…`) and returns
 * the refund to look at again; null for a forged or malformed one. A
 * `QueueTimeOutURL` notice (no `Result`) is not a result: null.
 */
export async function recordReversalResult(
  db: Db,
  config: Pick<MpesaConfig, 'consumerSecret'>,
  params: { refund?: string | null; t?: string | null },
  body: unknown,
  now: number = Date.now(),
): Promise<{ refundId: string } | null> {
  const refundId = params.refund;
  if (!refundId || !tokenMatches(config, refundId, params.t)) return null;
  const result = field(body, 'Result');
  const resultCode = text(result, 'ResultCode');
  if (resultCode === undefined) return null;
  const transactionId = text(result, 'TransactionID');
  const doc: ResultDoc = {
    _id: `reversal:${refundId}`,
    subject: refundId,
    result_code: resultCode,
    ...(text(result, 'OriginatorConversationID') ? { operator_id: text(result, 'OriginatorConversationID') } : {}),
    ...(transactionId ? { receipt: transactionId } : {}),
    received_at: now,
  };
  await insertIgnoringDuplicate(db, doc);
  return { refundId };
}

async function insertIgnoringDuplicate(db: Db, doc: ResultDoc): Promise<void> {
  try {
    await db.collection<ResultDoc>(MPESA_COLLECTIONS.results).insertOne(doc);
  } catch (err) {
    if (!isDuplicateKey(err)) throw err;
  }
}
