/**
 * The worker half of every create. What it promises:
 *
 * - Exactly one object per job, and per idempotency key. The object is inserted
 *   with the id the api generated; a retried job (worker crash, stalled job, lost
 *   connection) hits the duplicate `_id` and answers with the stored object. A keyed
 *   object carries its key's hash in a unique field, so a second job for the same
 *   key (its first job long gone from Redis) hits that instead and answers with the
 *   object the key created.
 * - One insert, so the object, its idempotency record and its created event exist
 *   together or not at all. The response is the presentation of the stored
 *   document, the same bytes every time; it is cached in Redis for the api's fast
 *   path before the job completes, so a retry with the key replays it byte for byte
 *   even if the api that asked has died.
 * - An answer found through the key's durable record, an object another request
 *   made (Redis no longer knew the key: a restart from an old snapshot), is marked
 *   `replayed`, so the api sends it with `Idempotent-Replayed: true`, as any replay.
 * - Infrastructure faults are thrown, so BullMQ retries the job; they are never
 *   recorded as the request's result.
 */
import type { Collection, Filter, UpdateFilter } from 'mongodb';
import type { Redis } from 'ioredis';
import { errorBody } from '../../common/errors.js';
import { encodeDone, redisKey } from '../../common/idempotency.js';
import { resultsChannel, type CreateJobResult, type CreateResultMessage, type IdempotencyJobInfo, type Scope } from '../../common/jobs.js';
import type { IdempotencyFields } from '../../common/documents.js';
import type { Collections } from '../../common/mongo.js';
import { isDuplicateKey } from '../../common/mongo.js';

export interface CreateDeps {
  collections: Collections;
  /** Command connection: cache writes and result publishing. */
  redis: Redis;
  prefix: string;
  now: () => number;
}

interface CreateJobCommon extends Scope {
  id: string;
  requestId: string;
  baseUrl: string;
  idempotency: IdempotencyJobInfo | null;
}

type Stored = IdempotencyFields & Scope & { _id: string };

export interface CreateSpec<D extends Stored> {
  collection: Collection<D>;
  /** The document to insert, without its idempotency fields. */
  build(objectId: string): D;
  /** The create response: the stored document presented with its secret. */
  present(doc: D): string;
  /** Runs once the object is stored (also on a retry): must be idempotent. */
  after?(doc: D): Promise<void>;
}

const REUSED_MESSAGE =
  'Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than the one used in the original request.';

/** Inserts the object (or finds the one already stored), then publishes the answer. */
export async function runCreate<D extends Stored>(
  deps: CreateDeps,
  jobId: string,
  data: CreateJobCommon,
  spec: CreateSpec<D>,
): Promise<CreateJobResult> {
  const idem = data.idempotency;
  const found = await insertOnce(deps, data, spec);
  if ('reused' in found) {
    // Another request holds this key. Its record is not ours to replay.
    const body = errorBody({ code: 'idempotency_key_reused', message: REUSED_MESSAGE }, data.requestId, data.baseUrl);
    await deps.redis.publish(resultsChannel(deps.prefix), JSON.stringify({ jobId, status: 400, body } satisfies CreateResultMessage));
    return { ok: false, id: null, status: 400 };
  }
  // Before the answer: once a client has it, the event's dispatch moment is past.
  await spec.after?.(found.doc);
  const body = spec.present(found.doc);
  const answer = deps.redis.pipeline();
  if (idem) {
    const expiresAt = found.doc.idem_expires_at ?? idem.expiresAt;
    const ttl = expiresAt - deps.now();
    if (ttl > 0) answer.set(redisKey(deps.prefix, idem.scopeHash), encodeDone(idem.fingerprint, 200, body, expiresAt), 'PX', ttl);
  }
  const message: CreateResultMessage = { jobId, status: 200, body, ...(found.replayed ? { replayed: true } : {}) };
  answer.publish(resultsChannel(deps.prefix), JSON.stringify(message));
  failOnReplyError(await answer.exec());
  return { ok: true, id: found.doc._id, status: 200 };
}

/** A pipeline resolves even when a command in it failed: such a failure must fail the job. */
function failOnReplyError(replies: Array<[Error | null, unknown]> | null): void {
  for (const [err] of replies ?? []) if (err) throw err;
}

async function insertOnce<D extends Stored>(
  deps: CreateDeps,
  data: CreateJobCommon,
  spec: CreateSpec<D>,
): Promise<{ doc: D; replayed: boolean } | { reused: true }> {
  const idem = data.idempotency;
  const fresh = spec.build(data.id);
  if (idem) Object.assign(fresh, { idem: idem.scopeHash, idem_fp: idem.fingerprint, idem_expires_at: idem.expiresAt });
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      await spec.collection.insertOne(fresh as Parameters<Collection<D>['insertOne']>[0]);
      return { doc: fresh, replayed: false };
    } catch (err) {
      if (!isDuplicateKey(err)) throw err;
    }
    // Either this job ran before (same `_id`), or another object holds the key.
    // Both look-ups scan on FerretDB; they happen only on retries and collisions.
    if (idem) {
      const holder = (await spec.collection.findOne({ idem: idem.scopeHash } as Filter<D>)) as D | null;
      if (holder) {
        if ((holder.idem_expires_at ?? 0) <= deps.now()) {
          // Expired, and the sweeper has not freed it yet: free it and try again.
          await spec.collection.updateOne({ _id: holder._id, idem: idem.scopeHash } as Filter<D>, { $unset: { idem: '' } } as unknown as UpdateFilter<D>);
          continue;
        }
        if (holder.idem_fp !== idem.fingerprint) return { reused: true };
        // Another request's object (not this job's own insert, retried): a replay.
        return { doc: holder, replayed: holder._id !== data.id };
      }
    }
    const same = (await spec.collection.findOne({ _id: data.id } as Filter<D>)) as D | null;
    if (same) return { doc: same, replayed: false };
  }
  throw new Error(`could not insert ${data.id}: duplicate key, yet no document holds it`);
}
