import test from 'ava';
import { MongoNetworkError, MongoNetworkTimeoutError, MongoServerError, MongoWriteConcernError } from 'mongodb';
import { OperatorUnavailableError, isInfrastructureError } from '../../common/infra-errors.js';

test("a locked SQLite database (the local stack's store) is an infrastructure fault, other server errors are not", (t) => {
  const busy = new MongoServerError({
    errmsg: '[msg_insert.go:95 handler.(*Handler).MsgInsert] database is locked (5) (SQLITE_BUSY)',
    code: 1,
    codeName: 'InternalError',
  });
  t.true(isInfrastructureError(busy));
  t.false(isInfrastructureError(new MongoServerError({ errmsg: 'E11000 duplicate key error', code: 11000 })));
  t.false(isInfrastructureError(new Error('database is locked')), 'only when MongoDB says so');
});

/** A server error as the driver builds it from a server's reply. */
function serverError(code: number, codeName: string, errorLabels?: string[]): MongoServerError {
  return new MongoServerError({ errmsg: `${codeName} (test)`, code, codeName, ...(errorLabels ? { errorLabels } : {}) });
}

test("MongoDB's failover and shutdown errors are infrastructure faults", (t) => {
  for (const [code, codeName] of [
    [10107, 'NotWritablePrimary'],
    [13435, 'NotPrimaryNoSecondaryOk'],
    [13436, 'NotPrimaryOrSecondary'],
    [91, 'ShutdownInProgress'],
    [11600, 'InterruptedAtShutdown'],
    [11602, 'InterruptedDueToReplStateChange'],
    [189, 'PrimarySteppedDown'],
    [6, 'HostUnreachable'],
    [89, 'NetworkTimeout'],
    [9001, 'SocketException'],
    [262, 'ExceededTimeLimit'],
  ] as const) {
    t.true(isInfrastructureError(serverError(code, codeName)), codeName);
  }
});

test('a MongoDB error labelled retryable or transient is an infrastructure fault, whatever its code', (t) => {
  t.true(isInfrastructureError(serverError(112, 'WriteConflict', ['RetryableWriteError'])));
  t.true(isInfrastructureError(serverError(112, 'WriteConflict', ['TransientTransactionError'])));
  t.false(isInfrastructureError(serverError(112, 'WriteConflict')), 'the same error unlabelled is not');
});

test('an old server\'s "not master" without a code is an infrastructure fault', (t) => {
  t.true(isInfrastructureError(new MongoServerError({ errmsg: 'not master and slaveOk=false' })));
});

test('a write concern error from a stepping-down primary is an infrastructure fault', (t) => {
  const err = new MongoWriteConcernError({ writeConcernError: { code: 91, codeName: 'ShutdownInProgress', errmsg: 'shutdown in progress' } } as never);
  t.true(isInfrastructureError(err));
});

test('network errors are infrastructure faults; a bad request, a bad document or a duplicate key is not', (t) => {
  t.true(isInfrastructureError(new MongoNetworkError('connection 3 to 127.0.0.1:27017 closed')));
  t.true(isInfrastructureError(new MongoNetworkTimeoutError('connection timed out')));
  for (const [code, codeName] of [
    [11000, 'DuplicateKey'],
    [2, 'BadValue'],
    [121, 'DocumentValidationFailure'],
    [13, 'Unauthorized'],
    [26, 'NamespaceNotFound'],
  ] as const) {
    t.false(isInfrastructureError(serverError(code, codeName)), codeName);
  }
});

test("a live operator that gave no answer is an infrastructure fault (the job retries), never a decline", (t) => {
  for (const reason of ['timeout', 'network', 'status', 'in_flight'] as const) {
    t.true(isInfrastructureError(new OperatorUnavailableError('mtn_momo', reason, 'POST /collection/v1_0/requesttopay')), reason);
  }
  t.false(isInfrastructureError(new Error('mtn_momo refused the request (400)')));
});

test('a Redis Cluster between owners of a slot is an infrastructure fault (503, retried), not a 500', (t) => {
  t.true(isInfrastructureError(new Error('Too many Cluster redirections. Last error: ReplyError: MOVED 12182 127.0.0.1:42557')));
  t.true(isInfrastructureError(new Error('Too many Cluster redirections. Last error: Error: Connection is closed.')));
  t.true(isInfrastructureError(new Error('CLUSTERDOWN The cluster is down')));
  t.true(isInfrastructureError(new Error('TRYAGAIN Multiple keys request during rehashing of slot')));
  t.false(isInfrastructureError(new Error('CROSSSLOT Keys in request don\'t hash to the same slot')), 'a command across slots is a bug, not a fault');
});
