import {
  MongoNetworkError,
  MongoNotConnectedError,
  MongoServerSelectionError,
  MongoTopologyClosedError,
} from 'mongodb';

const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTCONN']);

/**
 * True for a lost or unreachable Redis or MongoDB: the api answers 503 with
 * `Retry-After`, and a job retries. Such a fault is never a request's result.
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
  if (err.name === 'MaxRetriesPerRequestError') return true;
  const code = (err as NodeJS.ErrnoException).code;
  if (code && NETWORK_CODES.has(code)) return true;
  return /Connection is closed|enableOfflineQueue|Stream isn't writeable|Connection is in subscriber mode/i.test(err.message);
}
