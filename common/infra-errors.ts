import {
  MongoNetworkError,
  MongoNotConnectedError,
  MongoServerError,
  MongoServerSelectionError,
  MongoTopologyClosedError,
} from 'mongodb';

/**
 * A live operator's API could not give an answer: it answered 5xx, timed out, or
 * could not be reached. Never a decline: the job that asked retries with backoff,
 * and the attempt reference it reuses keeps the payer from being asked twice. The
 * message names the operator and what failed, never a credential or a phone number.
 */
export class OperatorUnavailableError extends Error {
  constructor(
    readonly operator: string,
    readonly reason: 'timeout' | 'network' | 'status' | 'in_flight',
    detail: string,
    readonly status?: number,
  ) {
    super(`${operator}: ${detail}`);
    this.name = 'OperatorUnavailableError';
  }
}

const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTCONN']);

/**
 * FerretDB on SQLite answers a write that waited too long for the database's single
 * write lock with an InternalError whose message names SQLITE_BUSY ("database is
 * locked"); SQLITE_LOCKED is its shared-cache cousin. Both are contention, not bugs.
 */
const LOCKED = /SQLITE_BUSY|SQLITE_LOCKED|database is locked/;

/**
 * True for a lost or unreachable Redis or MongoDB, a database too busy to take a
 * write, or a live operator that gave no answer (`OperatorUnavailableError`): the
 * api answers 503 with `Retry-After`, and a job retries with jittered backoff. Such
 * a fault is never a request's result.
 */
export function isInfrastructureError(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  if (
    err instanceof MongoNetworkError ||
    err instanceof MongoServerSelectionError ||
    err instanceof MongoNotConnectedError ||
    err instanceof MongoTopologyClosedError
  ) {
    return true;
  }
  if (err instanceof OperatorUnavailableError) return true;
  if (err instanceof MongoServerError && LOCKED.test(err.message)) return true;
  if (err.name === 'MaxRetriesPerRequestError') return true;
  const code = (err as NodeJS.ErrnoException).code;
  if (code && NETWORK_CODES.has(code)) return true;
  return /Connection is closed|enableOfflineQueue|Stream isn't writeable|Connection is in subscriber mode/i.test(err.message);
}
