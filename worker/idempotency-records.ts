/**
 * The durable record of a keyed request's answer (`idempotency_records`), as the
 * worker's layers below the processors write it: the lifecycle freezes a create's
 * answer before the first change of its intent, as the processors of webhook
 * endpoint changes do for theirs (processors/mutation.ts records the answers of the
 * mutations themselves).
 */
import type { Redis } from 'ioredis';
import { encodeDone, recordPointer, redisKey } from '../common/idempotency.js';
import type { Collections } from '../common/mongo.js';
import { isDuplicateKey } from '../common/mongo.js';
import type { InsertBatcher } from './group-commit.js';

export interface RecordDeps {
  collections: Pick<Collections, 'idempotencyRecords'>;
  /** Records are inserted in batches, through the process's write gate. */
  inserts: InsertBatcher;
  redis: Redis;
  prefix: string;
  now: () => number;
}

/**
 * Before the first change of an object created with a key that is still live: its
 * create answer is rendered from the object, so a change would change the replay
 * (a new status, a rotated secret). The answer as it stands is written down as the
 * key's record, and Redis is pointed at it, so the create's replays stay byte for
 * byte what the first request got. Idempotent.
 */
export async function freezeCreateAnswer(
  deps: RecordDeps,
  doc: { _id: string; project: string; livemode: boolean; idem?: string; idem_fp?: string; idem_expires_at?: number },
  body: () => string,
): Promise<void> {
  if (!doc.idem || !doc.idem_fp || (doc.idem_expires_at ?? 0) <= deps.now()) return;
  const expiresAt = doc.idem_expires_at as number;
  await deps.inserts
    .insert(deps.collections.idempotencyRecords, { _id: doc.idem, project: doc.project, livemode: doc.livemode, fp: doc.idem_fp, status: 200, body: body(), mutation: doc._id, expires_at: expiresAt })
    .catch((err: unknown) => {
      if (!isDuplicateKey(err)) throw err;
    });
  const ttl = expiresAt - deps.now();
  if (ttl > 0) await deps.redis.set(redisKey(deps.prefix, doc.idem), encodeDone(doc.idem_fp, recordPointer(doc.idem), 200, expiresAt), 'PX', ttl);
}
