import test from 'ava';
import { MongoServerError } from 'mongodb';
import { OperatorUnavailableError, isInfrastructureError } from '../../common/infra-errors.js';

test('a locked SQLite database behind FerretDB is an infrastructure fault, other server errors are not', (t) => {
  const busy = new MongoServerError({
    errmsg: '[msg_insert.go:95 handler.(*Handler).MsgInsert] database is locked (5) (SQLITE_BUSY)',
    code: 1,
    codeName: 'InternalError',
  });
  t.true(isInfrastructureError(busy));
  t.false(isInfrastructureError(new MongoServerError({ errmsg: 'E11000 duplicate key error', code: 11000 })));
  t.false(isInfrastructureError(new Error('database is locked')), 'only when MongoDB says so');
});

test("a live operator that gave no answer is an infrastructure fault (the job retries), never a decline", (t) => {
  for (const reason of ['timeout', 'network', 'status', 'in_flight'] as const) {
    t.true(isInfrastructureError(new OperatorUnavailableError('mtn_momo', reason, 'POST /collection/v1_0/requesttopay')), reason);
  }
  t.false(isInfrastructureError(new Error('mtn_momo refused the request (400)')));
});
