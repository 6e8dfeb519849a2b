import {
  MongoError,
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
    /** `throttled`: a 429 (or a token endpoint refusing for load); `status`: a 5xx. */
    readonly reason: 'timeout' | 'network' | 'status' | 'in_flight' | 'throttled',
    detail: string,
    readonly status?: number,
    /** The operator's `Retry-After`, when it sent one. */
    readonly retryAfterMs?: number,
    /** The operator's own code and message of a 5xx (a configuration error looks like one): for the log only. */
    readonly operatorMessage?: string,
  ) {
    super(`${operator}: ${detail}`);
    this.name = 'OperatorUnavailableError';
  }
}

const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTCONN']);

/**
 * A store on SQLite (the local stack's, docs/storage.md) answers a write that waited
 * too long for the database's single write lock with an InternalError whose message
 * names SQLITE_BUSY ("database is locked"); SQLITE_LOCKED is its shared-cache
 * cousin. Both are contention, not bugs.
 */
const LOCKED = /SQLITE_BUSY|SQLITE_LOCKED|database is locked/;

/**
 * MongoDB's server codes for a replica set between primaries or a server going
 * away: a failover or a restart, over once a new primary is elected. The driver
 * retries a retryable operation once by itself; these are what is left after that.
 * The retryable-reads specification's list (the driver's own, not exported).
 */
export const TRANSIENT_SERVER_CODES: ReadonlyMap<number, string> = new Map([
  [6, 'HostUnreachable'],
  [7, 'HostNotFound'],
  [89, 'NetworkTimeout'],
  [91, 'ShutdownInProgress'],
  [189, 'PrimarySteppedDown'],
  [9001, 'SocketException'],
  [10107, 'NotWritablePrimary'],
  [11600, 'InterruptedAtShutdown'],
  [11602, 'InterruptedDueToReplStateChange'],
  [13435, 'NotPrimaryNoSecondaryOk'],
  [13436, 'NotPrimaryOrSecondary'],
  [134, 'ReadConcernMajorityNotAvailableYet'],
  [262, 'ExceededTimeLimit'],
]);

/** Labels with which MongoDB (or the driver) marks an error that a retry may clear. */
const TRANSIENT_LABELS = ['RetryableWriteError', 'TransientTransactionError', 'PoolRequestedRetry'];

/** An old server's (or a proxy's) words for "not primary" and "recovering", with no code. */
const TRANSIENT_MESSAGE = /not master|node is recovering/i;

/**
 * True for a lost or unreachable Redis or MongoDB, a MongoDB between primaries or
 * shutting down, a database too busy to take a write, or a live operator that gave
 * no answer (`OperatorUnavailableError`): the api answers 503 with `Retry-After`,
 * and a job retries with jittered backoff. Such a fault is never a request's result.
 */
export function isInfrastructureError(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  if (err instanceof OperatorUnavailableError) return true;
  if (
    err instanceof MongoNetworkError ||
    err instanceof MongoServerSelectionError ||
    err instanceof MongoNotConnectedError ||
    err instanceof MongoTopologyClosedError
  ) {
    return true;
  }
  if (err instanceof OperatorUnavailableError) return true;
  if (err instanceof MongoServerError) {
    if (LOCKED.test(err.message) || TRANSIENT_MESSAGE.test(err.message) || TRANSIENT_SERVER_CODES.has(Number(err.code))) return true;
  }
  if (err instanceof MongoError && TRANSIENT_LABELS.some((label) => err.hasErrorLabel(label))) return true;
  if (err.name === 'MaxRetriesPerRequestError') return true;
  const code = (err as NodeJS.ErrnoException).code;
  if (code && NETWORK_CODES.has(code)) return true;
  return /Connection is closed|enableOfflineQueue|Stream isn't writeable|Connection is in subscriber mode/i.test(err.message) || CLUSTER_MOVING.test(err.message);
}

/**
 * A Redis Cluster between owners of a slot (a failover): ioredis gives up after its
 * redirections (`Too many Cluster redirections`, whatever the last error was, a
 * `MOVED` among them), or the cluster answers `CLUSTERDOWN` or `TRYAGAIN`.
 */
const CLUSTER_MOVING = /Too many Cluster redirections|^CLUSTERDOWN|^TRYAGAIN/;
