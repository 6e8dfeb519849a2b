/**
 * The worker half of every create. What it promises:
 *
 * - Exactly one object per job, and per idempotency key. The object is inserted
 *   with the id the api generated; a retried job (worker crash, stalled job, lost
 *   connection) hits the duplicate `_id` and answers with the stored object. A keyed
 *   object carries its key's hash in a unique field, so a second job for the same
 *   key (its first job long gone from Redis) hits that instead and answers with the
 *   object the key created. That object is found through the key's pointer
 *   (`idempotency_keys`, by `_id`, written beside the object in the same group
 *   commit), and by its `idem` field only when the pointer is missing or stale: on
 *   a store that uses no index for queries that look-up decodes every object, and
 *   after a Redis rollback each key that Redis forgot costs one (docs/storage.md).
 * - One insert, so the object, its idempotency record and its created event exist
 *   together or not at all. The response is the presentation of the stored
 *   document, the same bytes every time. Before the job completes, Redis gets the
 *   key's fingerprint and the object's id (never the body, which holds a secret) for
 *   the api's fast path, so a retry with the key is replayed byte for byte, rendered
 *   again from the stored object, even if the api that asked has died.
 * - The published answer carries the request's fingerprint, so only a request with
 *   the same key and the same fingerprint takes it. Its body is sealed, whatever it
 *   holds (`publishResult`).
 * - An answer found through the key's durable record, an object another request
 *   made (Redis no longer knew the key: a restart from an old snapshot), is marked
 *   `replayed`, so the api sends it with `Idempotent-Replayed: true`, as any replay.
 * - Infrastructure faults are thrown, so BullMQ retries the job; they are never
 *   recorded as the request's result.
 */
import type { Collection, Filter } from 'mongodb';
import type { Redis } from 'ioredis';
import { errorBody, errors, type ErrorDetail } from '../../common/errors.js';
import { encodeDone, fingerprintMatches, recordPointer, redisKey } from '../../common/idempotency.js';
import { resultsChannel, type WriteJobResult, type WriteResultMessage, type IdempotencyJobInfo, type Scope } from '../../common/jobs.js';
import type { IdempotencyFields } from '../../common/documents.js';
import type { Collections } from '../../common/mongo.js';
import { isDuplicateKey } from '../../common/mongo.js';
import type { InsertBatcher } from '../group-commit.js';
import { freeExpiredKey } from '../record-lock.js';
import type { Seal } from '../../common/seal.js';

export interface CreateDeps {
  collections: Collections;
  /** Fail-fast, auto-pipelined connection: cache writes and result publishing of jobs finishing together share a round trip. */
  redis: Redis;
  /** Seals every answer before it is published (`publishResult`); without it (some unit tests), answers go as they are. */
  answerSeal?: Seal;
  /** The first insert of every create goes through group commit. */
  inserts: InsertBatcher;
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

export interface WriteSpec<D extends Stored> {
  collection: Collection<D>;
  /** The document to insert, without its idempotency fields. */
  build(objectId: string): D;
  /** The create response: the stored document presented with its secret. */
  present(doc: D): string;
  /**
   * Runs once the object is stored (also on a retry): must be idempotent. What it
   * returns runs once the answer is published (the event's fan-out).
   */
  after?(doc: D): Promise<void | (() => Promise<void>)>;
}

/**
 * Publishes a job's answer to the apis waiting for it. Every answer goes sealed
 * (bound to the job id, one AES-256-GCM encryption), whatever it holds: a signing
 * secret, a payment intent's `client_secret`, an error naming an object. A client of
 * Redis that subscribes to the channel reads none of it; the api opens it
 * (api/result-waiter.ts). What stays in the clear is what routes the answer: the
 * job id, the fingerprint (an HMAC), the status, the request id and the expiry.
 */
export async function publishResult(deps: { redis: Redis; prefix: string; answerSeal?: Seal | undefined }, message: WriteResultMessage): Promise<unknown> {
  const sent = deps.answerSeal ? { ...message, body: await deps.answerSeal.seal(message.jobId, message.body), sealed: true as const } : message;
  return deps.redis.publish(resultsChannel(deps.prefix), JSON.stringify(sent));
}

/** Publishes an answer that is not recorded: nothing was created, so a retry with the key runs again. */
export async function publishRefusal(deps: Pick<CreateDeps, 'redis' | 'prefix' | 'answerSeal'>, jobId: string, data: CreateJobCommon, detail: ErrorDetail, status: number): Promise<WriteJobResult> {
  const body = errorBody(detail, data.requestId, data.baseUrl);
  await publishResult(deps, { jobId, fingerprint: data.idempotency?.fingerprint ?? null, status, body });
  return { ok: false, id: null, status };
}

/** Inserts the object (or finds the one already stored), then publishes the answer. */
export async function runCreate<D extends Stored>(
  deps: CreateDeps,
  jobId: string,
  data: CreateJobCommon,
  spec: WriteSpec<D>,
): Promise<WriteJobResult> {
  const idem = data.idempotency;
  const found = await insertOnce(deps, data, spec);
  if ('reused' in found) {
    // Another request holds this key. Its record is not ours to replay.
    return publishRefusal(deps, jobId, data, errors.idempotencyKeyReused().detail(), 400);
  }
  // Before the answer: once a client has it, the event's dispatch moment is past.
  const afterAnswer = await spec.after?.(found.doc);
  // An object changed since its create has its create answer frozen as a record (mutation.ts).
  const body = found.frozen ?? spec.present(found.doc);
  // Sent as separate commands: auto-pipelining puts those of every job of a batch
  // into one round trip, and a failed command fails its job.
  const answer: Array<Promise<unknown>> = [];
  if (idem) {
    const expiresAt = found.doc.idem_expires_at ?? idem.expiresAt;
    const ttl = expiresAt - deps.now();
    const pointer = found.frozen === undefined ? found.doc._id : recordPointer(idem.scopeHash);
    if (ttl > 0) answer.push(deps.redis.set(redisKey(deps.prefix, idem.scopeHash), encodeDone(idem.fingerprint, pointer, 200, expiresAt), 'PX', ttl));
  }
  const message: WriteResultMessage = {
    jobId,
    fingerprint: idem?.fingerprint ?? null,
    status: 200,
    body,
    ...(found.replayed ? { replayed: true } : {}),
    requestId: data.requestId,
    ...(idem ? { expiresAt: found.doc.idem_expires_at ?? idem.expiresAt } : {}),
  };
  answer.push(publishResult(deps, message));
  await Promise.all(answer);
  if (afterAnswer) await afterAnswer();
  return { ok: true, id: found.doc._id, status: 200 };
}

async function insertOnce<D extends Stored>(
  deps: CreateDeps,
  data: CreateJobCommon,
  spec: WriteSpec<D>,
): Promise<{ doc: D; replayed: boolean; frozen?: string } | { reused: true }> {
  const idem = data.idempotency;
  const fresh = spec.build(data.id);
  if (idem) Object.assign(fresh, { idem: idem.scopeHash, idem_fp: idem.fingerprint, idem_expires_at: idem.expiresAt });
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      // The first try joins a group commit, the key's pointer beside it; a retry after
      // freeing an expired key goes alone, and then points the key at its object.
      if (attempt === 0) await Promise.all([deps.inserts.insert(spec.collection, fresh), idem && pointKey(deps, idem, data.id)]);
      else {
        await spec.collection.insertOne(fresh as Parameters<Collection<D>['insertOne']>[0]);
        if (idem) await repointKey(deps, idem, data.id);
      }
      return { doc: fresh, replayed: false };
    } catch (err) {
      if (!isDuplicateKey(err)) throw err;
    }
    // Either this job ran before (same `_id`), or another object holds the key. The
    // first look-up is by `_id`, cheap on every store, and settles the common case, a
    // retried job (a worker killed, a stalled job); the look-up by key may scan every
    // object (docs/storage.md), so it comes only after.
    const same = (await spec.collection.findOne({ _id: data.id } as Filter<D>)) as D | null;
    if (same && !idem) return { doc: same, replayed: false };
    if (idem) {
      const ours = same !== null && same.idem === idem.scopeHash;
      let holder = ours ? same : await pointedHolder(deps, spec.collection, idem.scopeHash);
      if (!holder) {
        holder = (await spec.collection.findOne({ idem: idem.scopeHash } as Filter<D>)) as D | null;
        // Found the long way: the next duplicate of this key takes the short one.
        if (holder) await repointKey(deps, idem, holder._id);
      }
      if (holder) {
        if (!ours && (holder.idem_expires_at ?? 0) <= deps.now()) {
          // Expired, and the sweeper has not freed it yet: free it and try again.
          await freeExpiredKey(deps.redis, deps.prefix, spec.collection as unknown as Collection<{ _id: string }>, holder._id);
          continue;
        }
        if (!holder.idem_fp || !fingerprintMatches(idem, holder.idem_fp)) return { reused: true };
        // Another request's object, or this job's own insert, retried: its answer, frozen
        // before the object first changed if it has (another request's is a replay).
        const record = await deps.collections.idempotencyRecords.findOne({ _id: idem.scopeHash });
        const frozen = record && record.mutation === holder._id && record.expires_at > deps.now() ? record.body : undefined;
        return { doc: holder, replayed: holder._id !== data.id, ...(frozen === undefined ? {} : { frozen }) };
      }
    }
    if (same) return { doc: same, replayed: false };
  }
  throw new Error(`could not insert ${data.id}: duplicate key, yet no document holds it`);
}

/**
 * Points the key at the object being inserted. A hint, never the record: a pointer
 * that is already there (this job run again, or another job of the key, whose
 * object's unique `idem` then refuses this one) stays, and a failure only leaves the
 * look-up by `idem` to a later duplicate.
 */
async function pointKey(deps: CreateDeps, idem: IdempotencyJobInfo, objectId: string): Promise<void> {
  await deps.inserts.insert(deps.collections.idempotencyKeys, { _id: idem.scopeHash, object: objectId, expires_at: idem.expiresAt }).catch(() => undefined);
}

/** After an expired key was freed: the pointer moves to the key's new object. */
async function repointKey(deps: CreateDeps, idem: IdempotencyJobInfo, objectId: string): Promise<void> {
  await deps.collections.idempotencyKeys
    .replaceOne({ _id: idem.scopeHash }, { object: objectId, expires_at: idem.expiresAt }, { upsert: true })
    .catch(() => undefined);
}

/** The object the key's pointer names, if it still holds the key; two reads by `_id`. */
async function pointedHolder<D extends Stored>(deps: CreateDeps, collection: Collection<D>, scopeHash: string): Promise<D | null> {
  const pointer = await deps.collections.idempotencyKeys.findOne({ _id: scopeHash });
  if (!pointer) return null;
  const doc = (await collection.findOne({ _id: pointer.object } as Filter<D>)) as D | null;
  return doc?.idem === scopeHash ? doc : null;
}
