/**
 * Daraja's callbacks, as the api's callback routes record them. Daraja signs nothing:
 * each callback URL the M-Pesa connector gives carries the subject it is about (an
 * attempt, a refund, a Transaction Status query) and `mpesaCallbackToken`, an HMAC of
 * that subject and an expiry under the service key `operator-callbacks` (common/service-keys.ts;
 * DESIGN section 14: not an operator credential, so rotating the consumer secret
 * strands no callback in flight). Only Safaricom, which saw the URL, can call it.
 *
 * What a genuine callback says is kept in MongoDB (`mpesa_results`), never the phone
 * number: an STK callback's receipt (for reversals), a reversal's `Result`, a
 * Transaction Status `Result`. A payment's outcome still comes from the STK query.
 * A reversal or B2C `Result` is matched to its conversation: one whose id is not the
 * one Daraja gave for that request is ignored (`claimedConversation`).
 * Pure but for the inserts; it imports only common/, so the api may use it.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Db } from 'mongodb';
import { isDuplicateKey } from '../../../common/mongo.js';

function field(body: unknown, name: string): unknown {
  return body !== null && typeof body === 'object' ? (body as Record<string, unknown>)[name] : undefined;
}

function text(body: unknown, name: string): string | undefined {
  const value = field(body, name);
  return typeof value === 'string' ? value : typeof value === 'number' ? String(value) : undefined;
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
  /** Transaction Status: the transaction's `TransactionStatus` ("Completed", "Reversed", …). */
  transaction_status?: string;
  received_at: number;
}

/** The service key (common/service-keys.ts) under which the callback URLs' tokens are made. */
export const CALLBACK_KEY_ID = 'operator-callbacks';

/**
 * How long a callback URL's token is good for: a reversal's `Result` and a
 * Transaction Status answer can come hours late, never days (DESIGN section 20:
 * callback tokens expire).
 */
export const CALLBACK_TOKEN_TTL_S = 2 * 24 * 3600;

/**
 * The token that a callback URL of ours carries for `subject` (an attempt, a refund,
 * a status query): `<expiry, unix seconds>.<HMAC of subject and expiry>`.
 */
export function mpesaCallbackToken(key: Buffer, subject: string, expiresS = Math.floor(Date.now() / 1000) + CALLBACK_TOKEN_TTL_S): string {
  const mac = createHmac('sha256', key).update(`mpesa-callback:${subject}:${expiresS}`).digest('base64url');
  return `${expiresS}.${mac}`;
}

/**
 * The keys a token is checked against: every version of the service key held
 * (common/service-keys.ts), so that a URL handed out before a rotation still works.
 */
export type CallbackKeys = Buffer | readonly Buffer[];

/** Whether `token` was made for `subject` under one of `keys` and has not expired. */
export function mpesaTokenValid(keys: CallbackKeys, subject: string, token: string | null | undefined, nowS = Math.floor(Date.now() / 1000)): boolean {
  const parts = /^(\d{1,12})\.([A-Za-z0-9_-]{43})$/.exec(token ?? '');
  if (!parts) return false;
  const expiresS = Number(parts[1]);
  if (expiresS < nowS) return false;
  const given = Buffer.from(token!);
  return (Buffer.isBuffer(keys) ? [keys] : keys).some((key) => {
    const expected = Buffer.from(mpesaCallbackToken(key, subject, expiresS));
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}

const tokenMatches = (keys: CallbackKeys, subject: string, token: string | null | undefined) => mpesaTokenValid(keys, subject, token);

/**
 * Records a genuine STK callback (`POST {CallBackURL}?attempt=…&t=…`) and returns the
 * attempt to look at again; null for a callback whose token does not match or whose
 * body is not Daraja's (it changes nothing). A repeated callback changes nothing.
 * What is kept: the result code, receipt number and amount, never the phone number.
 */
export async function recordStkCallback(
  db: Db,
  key: CallbackKeys,
  params: { attempt?: string | null; t?: string | null },
  body: unknown,
  now: number = Date.now(),
): Promise<{ attemptId: string } | null> {
  const attemptId = params.attempt;
  if (!attemptId || !tokenMatches(key, attemptId, params.t)) return null;
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

/** The value of `Key` among a `Result`'s `ResultParameters.ResultParameter` (a list, or one object). */
export function resultParameter(result: unknown, key: string): string | undefined {
  const raw = field(field(result, 'ResultParameters'), 'ResultParameter');
  const list = Array.isArray(raw) ? raw : raw ? [raw] : [];
  const found = list.find((item) => text(item, 'Key') === key);
  return found ? text(found, 'Value') : undefined;
}

/**
 * Records a genuine reversal `Result` (`POST {ResultURL}?refund=…&t=…`) and returns
 * the refund to look at again; null for a forged, malformed or unmatched one: its
 * `OriginatorConversationID` must be the one Daraja gave when it accepted that
 * refund's reversal (`expectedConversation`, from the connector's claim). A
 * `QueueTimeOutURL` notice (no `Result`) is not a result: null.
 */
export async function recordReversalResult(
  db: Db,
  key: CallbackKeys,
  params: { refund?: string | null; t?: string | null },
  body: unknown,
  now: number = Date.now(),
): Promise<{ refundId: string } | null> {
  const refundId = params.refund;
  if (!refundId || !tokenMatches(key, refundId, params.t)) return null;
  const result = field(body, 'Result');
  const resultCode = text(result, 'ResultCode');
  if (resultCode === undefined) return null;
  const conversation = await claimedConversation(db, `reversal:${refundId}`, text(result, 'OriginatorConversationID'));
  if (!conversation) return null;
  const transactionId = text(result, 'TransactionID');
  const doc: ResultDoc = {
    _id: `reversal:${refundId}`,
    subject: refundId,
    result_code: resultCode,
    operator_id: conversation,
    ...(transactionId ? { receipt: transactionId } : {}),
    received_at: now,
  };
  await insertIgnoringDuplicate(db, doc);
  return { refundId };
}

/**
 * Records a genuine B2C `Result` (`POST {ResultURL}?payout=…&t=…`, DESIGN section
 * 17) and returns the payout it names; null for a forged, malformed or unmatched one:
 * its `ConversationID` must be the one Daraja gave when it accepted that payout's
 * request (the connector's claim). Kept as `b2c:<payout>`, with the transaction's id.
 */
export async function recordB2cResult(
  db: Db,
  key: CallbackKeys,
  params: { payout?: string | null; t?: string | null },
  body: unknown,
  now: number = Date.now(),
): Promise<{ payoutId: string } | null> {
  const payoutId = params.payout;
  if (!payoutId || !tokenMatches(key, payoutId, params.t)) return null;
  const result = field(body, 'Result');
  const resultCode = text(result, 'ResultCode');
  if (resultCode === undefined) return null;
  const conversation = await claimedConversation(db, `b2c:${payoutId}`, text(result, 'ConversationID'));
  if (!conversation) return null;
  const transactionId = text(result, 'TransactionID');
  const doc: ResultDoc = {
    _id: `b2c:${payoutId}`,
    subject: payoutId,
    result_code: resultCode,
    operator_id: conversation,
    ...(transactionId ? { receipt: transactionId } : {}),
    received_at: now,
  };
  await insertIgnoringDuplicate(db, doc);
  return { payoutId };
}

/**
 * Records a genuine Transaction Status `Result` (`POST {ResultURL}?status=…&t=…`, the
 * subject `stk:<attempt>` or `reversal:<refund>` the query was about): the
 * transaction's receipt (`ReceiptNo`) and status (`TransactionStatus`), or Daraja's
 * code when it found nothing. Kept as `status:<subject>`; a newer answer replaces an
 * older one (the transaction may have moved on).
 */
export async function recordTransactionStatus(
  db: Db,
  key: CallbackKeys,
  params: { status?: string | null; t?: string | null },
  body: unknown,
  now: number = Date.now(),
): Promise<{ subject: string } | null> {
  const subject = params.status;
  if (!subject || !/^(stk|reversal|b2c):/.test(subject) || !tokenMatches(key, `status:${subject}`, params.t)) return null;
  const result = field(body, 'Result');
  const resultCode = text(result, 'ResultCode');
  if (resultCode === undefined) return null;
  const receipt = resultParameter(result, 'ReceiptNo');
  const status = resultParameter(result, 'TransactionStatus');
  const amount = Number(resultParameter(result, 'Amount'));
  const doc: ResultDoc = {
    _id: `status:${subject}`,
    subject,
    result_code: resultCode,
    ...(receipt ? { receipt } : {}),
    ...(status ? { transaction_status: status } : {}),
    ...(Number.isFinite(amount) ? { amount } : {}),
    received_at: now,
  };
  await db.collection<ResultDoc>(MPESA_COLLECTIONS.results).replaceOne({ _id: doc._id }, doc, { upsert: true });
  return { subject };
}

/**
 * The conversation a `Result` is kept under, or null when it is not the claimed
 * request's: there must be a claim (`claimId`, we sent that request), and the id
 * Daraja gave when it accepted the request, once the connector has recorded it, must
 * be the `Result`'s. Daraja calls back as soon as it has decided, which can be before
 * the connector has recorded that answer (or when the answer was lost): then the
 * `Result`'s own id is taken. Its URL's token already proves it is about this
 * request, and a claim's request is sent once. Ignoring it instead strands a failed
 * B2C or reversal: Transaction Status finds only completed transactions.
 */
async function claimedConversation(db: Db, claimId: string, given: string | undefined): Promise<string | null> {
  if (!given) return null;
  const claim = await db.collection<{ _id: string; operator_id?: string }>(MPESA_COLLECTIONS.requests).findOne({ _id: claimId });
  if (!claim) return null;
  return claim.operator_id === undefined || claim.operator_id === given ? given : null;
}

async function insertIgnoringDuplicate(db: Db, doc: ResultDoc): Promise<void> {
  try {
    await db.collection<ResultDoc>(MPESA_COLLECTIONS.results).insertOne(doc);
  } catch (err) {
    if (!isDuplicateKey(err)) throw err;
  }
}
