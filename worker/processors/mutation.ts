/**
 * The worker half of every mutation a request asks for (confirm, cancel and update
 * of a payment intent; the changes of a webhook endpoint): the change itself is the
 * caller's (`apply`); this records and publishes its answer. What it promises:
 *
 * - The answer of a keyed request is recorded once processing has produced it,
 *   refusals inside the job included (a confirm of a succeeded intent is answered
 *   400 every time): in MongoDB (`idempotency_records`, the durable record, with the
 *   body, since a later change of the object must not change a replay) and in
 *   Redis (the fingerprint and a pointer to that record, never the body).
 * - A retried job answers what it answered the first time: `apply` is idempotent on
 *   the mutation's id, and a record already written is the answer.
 * - A record of the same key made by another request (a key reused with another
 *   body, after its first job left Redis) is not replayed to this one:
 *   `idempotency_key_reused`, not recorded.
 * - Infrastructure faults are thrown, so BullMQ retries the job.
 */
import type { Redis } from 'ioredis';
import { errorBody, errors } from '../../common/errors.js';
import { encodeDone, fingerprintMatches, recordPointer, redisKey } from '../../common/idempotency.js';
import type { WriteJobResult, WriteResultMessage, MutationJobBase } from '../../common/jobs.js';
import type { Collections } from '../../common/mongo.js';
import { isDuplicateKey } from '../../common/mongo.js';
import type { InsertBatcher } from '../group-commit.js';
import { publishRefusal, publishResult } from './create.js';
import type { Seal } from '../../common/seal.js';

export interface MutationDeps {
  collections: Collections;
  /** Records are inserted in batches, through the process's write gate. */
  inserts: InsertBatcher;
  redis: Redis;
  /** Seals every answer before it is published (create.ts `publishResult`). */
  answerSeal?: Seal;
  prefix: string;
  now: () => number;
}

/** What a mutation answered: its status and exact body. */
export interface Answer {
  status: number;
  body: string;
  /** Another request's answer (the same key, its first job lost with Redis): sent as a replay. */
  replayed?: boolean;
}

/**
 * The id a mutation applies under, the same for every job of one request: a keyed
 * request's is its key's (so a second job for the key, after Redis lost the first
 * one midway, finds what the first applied), an unkeyed one's the request's own id.
 */
export function mutationId(data: MutationJobBase): { id: string; expiresAt?: number } {
  return data.idempotency ? { id: `idem:${data.idempotency.scopeHash}`, expiresAt: data.idempotency.expiresAt } : { id: data.id };
}

export function notFound(data: MutationJobBase, kind: string): Answer {
  return {
    status: 404,
    body: errorBody({ code: 'resource_missing', message: `No such ${kind}: '${data.target}'.`, param: 'id' }, data.requestId, data.baseUrl),
  };
}

export async function runMutation(deps: MutationDeps, jobId: string, data: MutationJobBase, apply: () => Promise<Answer>): Promise<WriteJobResult> {
  const idem = data.idempotency;
  let answer: Answer | null = null;
  let replayed = false;
  let recordedUntil = idem?.expiresAt;
  if (idem) {
    const record = await deps.collections.idempotencyRecords.findOne({ _id: idem.scopeHash });
    if (record && record.expires_at > deps.now()) {
      if (!fingerprintMatches(idem, record.fp)) {
        return publishRefusal(deps, jobId, data, errors.idempotencyKeyReused().detail(), 400);
      }
      answer = { status: record.status, body: record.body };
      replayed = record.mutation !== data.id;
      recordedUntil = record.expires_at;
    } else if (record) {
      await deps.collections.idempotencyRecords.deleteOne({ _id: idem.scopeHash, expires_at: record.expires_at });
    }
  }
  if (answer === null) {
    answer = await apply();
    replayed = answer.replayed === true;
    if (idem) {
      await deps.inserts
        .insert(deps.collections.idempotencyRecords, {
          _id: idem.scopeHash,
          project: data.project,
          livemode: data.livemode,
          fp: idem.fingerprint,
          status: answer.status,
          body: answer.body,
          mutation: data.id,
          expires_at: idem.expiresAt,
        })
        .catch((err: unknown) => {
          // Written by this job before it was retried: the same answer.
          if (!isDuplicateKey(err)) throw err;
        });
    }
  }
  const sends: Array<Promise<unknown>> = [];
  if (idem) {
    const ttl = idem.expiresAt - deps.now();
    if (ttl > 0) {
      sends.push(deps.redis.set(redisKey(deps.prefix, idem.scopeHash), encodeDone(idem.fingerprint, recordPointer(idem.scopeHash), answer.status, idem.expiresAt), 'PX', ttl));
    }
  }
  const message: WriteResultMessage = {
    jobId,
    fingerprint: idem?.fingerprint ?? null,
    status: answer.status,
    body: answer.body,
    ...(replayed ? { replayed: true } : {}),
    requestId: data.requestId,
    ...(recordedUntil !== undefined ? { expiresAt: recordedUntil } : {}),
  };
  sends.push(publishResult(deps, message));
  await Promise.all(sends);
  return { ok: answer.status === 200, id: data.target, status: answer.status };
}
