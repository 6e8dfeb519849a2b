/**
 * The worker half of every create. What it promises:
 *
 * - Exactly one object per job, and per idempotency key. The object is inserted
 *   with the id the api generated; a retried job (worker crash, stalled job, lost
 *   connection) hits the duplicate key and answers with the stored object. For a
 *   keyed request the first job to run claims a durable record that pins the object
 *   id, so even a second job for the same key (its first job long gone from Redis)
 *   ends on the same object.
 * - The result survives the api process: the durable result (MongoDB) holds the
 *   exact response body before the job completes, and the Redis cache of it is
 *   written, so a retry with the key replays it byte for byte. Both writes are
 *   inserts: on FerretDB an update would scan the collection.
 * - Infrastructure faults are thrown, so BullMQ retries the job; they are never
 *   recorded as the request's result.
 */
import type { Redis } from 'ioredis';
import { errorBody } from '../../common/errors.js';
import { encodeDone, redisKey } from '../../common/idempotency.js';
import { resultsChannel, type CreateJobResult, type CreateResultMessage, type IdempotencyJobInfo, type Scope } from '../../common/jobs.js';
import type { Collections, IdempotencyDoc, IdempotencyResultDoc } from '../../common/mongo.js';
import { insertOrRead, isDuplicateKey } from '../../common/mongo.js';

export interface CreateDeps {
  collections: Collections;
  /** Command connection: cache writes and result publishing. */
  redis: Redis;
  prefix: string;
  now: () => number;
}

export interface CreateOutcome {
  id: string;
  status: number;
  body: string;
}

interface CreateJobCommon extends Scope {
  id: string;
  requestId: string;
  baseUrl: string;
  idempotency: IdempotencyJobInfo | null;
}

/**
 * Runs `create(objectId)` under the idempotency protocol and publishes the result.
 * `create` must be idempotent on `objectId` (insert, or read back what is stored).
 */
export async function runCreate(
  deps: CreateDeps,
  jobId: string,
  data: CreateJobCommon,
  create: (objectId: string) => Promise<CreateOutcome>,
): Promise<CreateJobResult> {
  const outcome = data.idempotency
    ? await createOnce(deps, data, data.idempotency, create)
    : await create(data.id);
  const message: CreateResultMessage = { jobId, status: outcome.status, body: outcome.body };
  await deps.redis.publish(resultsChannel(deps.prefix), JSON.stringify(message));
  return { ok: outcome.status === 200, id: outcome.id, status: outcome.status };
}

async function createOnce(
  deps: CreateDeps,
  data: CreateJobCommon,
  idem: IdempotencyJobInfo,
  create: (objectId: string) => Promise<CreateOutcome>,
): Promise<CreateOutcome> {
  const { claim: record, result } = await claim(deps, data, idem);
  if (record.fingerprint !== idem.fingerprint) {
    // Another request holds this key. Its record is not ours to touch or replay.
    const body = errorBody(
      {
        code: 'idempotency_key_reused',
        message:
          'Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than the one used in the original request.',
      },
      data.requestId,
      data.baseUrl,
    );
    return { id: record.object_id, status: 400, body };
  }
  if (result) {
    await cacheResult(deps, idem, result.status, result.body);
    return { id: result.object_id, status: result.status, body: result.body };
  }
  const outcome = await create(record.object_id);
  const recorded = await insertOrRead(deps.collections.idempotencyResults, {
    _id: idem.scopeHash,
    project: data.project,
    livemode: data.livemode,
    fingerprint: record.fingerprint,
    object_id: record.object_id,
    status: outcome.status,
    body: outcome.body,
    expires_at: record.expires_at,
  });
  // A concurrent job for the key may have recorded first: its bytes are the answer.
  await cacheResult(deps, idem, recorded.status, recorded.body);
  return { id: recorded.object_id, status: recorded.status, body: recorded.body };
}

/**
 * Inserts the claim, or returns the live one already there with its result, if any.
 * The first insert is the common case and costs no query.
 */
async function claim(
  deps: CreateDeps,
  data: CreateJobCommon,
  idem: IdempotencyJobInfo,
): Promise<{ claim: IdempotencyDoc; result: IdempotencyResultDoc | null }> {
  const c = deps.collections;
  for (let attempt = 0; attempt < 3; attempt++) {
    const fresh: IdempotencyDoc = {
      _id: idem.scopeHash,
      project: data.project,
      livemode: data.livemode,
      key: idem.key,
      fingerprint: idem.fingerprint,
      object_id: data.id,
      created_ms: deps.now(),
      expires_at: idem.expiresAt,
    };
    try {
      await c.idempotency.insertOne(fresh);
      return { claim: fresh, result: null };
    } catch (err) {
      if (!isDuplicateKey(err)) throw err;
    }
    const existing = await c.idempotency.findOne({ _id: idem.scopeHash });
    if (existing && existing.expires_at > deps.now()) {
      return { claim: existing, result: await c.idempotencyResults.findOne({ _id: idem.scopeHash }) };
    }
    // Expired (the sweeper has not run yet): the key is free again.
    await c.idempotencyResults.deleteOne({ _id: idem.scopeHash });
    if (existing) await c.idempotency.deleteOne({ _id: idem.scopeHash, expires_at: existing.expires_at });
  }
  throw new Error(`could not claim idempotency record ${idem.scopeHash}`);
}

async function cacheResult(deps: CreateDeps, idem: IdempotencyJobInfo, status: number, body: string): Promise<void> {
  const ttl = idem.expiresAt - deps.now();
  if (ttl <= 0) return;
  await deps.redis.set(redisKey(deps.prefix, idem.scopeHash), encodeDone(idem.fingerprint, status, body), 'PX', ttl);
}
