/**
 * At most `limit` webhook endpoints per (project, livemode), as on Stripe: every
 * endpoint costs a delivery job per event, so the cap bounds what one tenant's
 * events can cost. The check is a count before the insert; creates of one scope are
 * serialised by a short Redis lock around count-then-insert, so concurrent creates
 * on any number of workers cannot pass the cap together. (The count may scan the
 * collection, docs/storage.md; endpoint collections are small.)
 */
import type { Redis } from 'ioredis';
import type { Filter } from 'mongodb';
import type { WebhookEndpointDoc } from '../../common/documents.js';
import type { IdempotencyJobInfo, Scope } from '../../common/jobs.js';
import type { Collections } from '../../common/mongo.js';
import { LockTimeout, withTokenLock, type TokenLockOptions } from '../../common/redis-lock.js';

/**
 * Lives longer than any count-then-insert (renewed while held, so a crashed holder
 * blocks its scope's creates for at most `ttlMs`); a create waits `waitMs` for it
 * before failing its attempt.
 */
const SCOPE_LOCK: TokenLockOptions = { ttlMs: 30_000, waitMs: 10_000 };

/**
 * Runs `fn` while holding the scope's endpoint-create lock (common/redis-lock.ts). A
 * wait past `waitMs` fails the attempt (the job is retried), not the request.
 */
export async function withScopeLock<T>(redis: Redis, prefix: string, scope: Scope, fn: () => Promise<T>): Promise<T> {
  const key = `${prefix}:endpoint-create:${scope.livemode ? 'live' : 'test'}:${scope.project}`;
  try {
    return await withTokenLock(redis, key, SCOPE_LOCK, fn);
  } catch (err) {
    if (err instanceof LockTimeout && err.key === key) throw new Error(`endpoint creates of ${scope.project} are locked: retrying`);
    throw err;
  }
}

/**
 * True when the scope is full and this create would add an endpoint. A retried job
 * whose endpoint exists, or a key that already created one, is never refused: it
 * answers with what was created.
 */
export async function endpointLimitReached(
  collections: Collections,
  data: Scope & { id: string; idempotency: IdempotencyJobInfo | null },
  limit: number,
): Promise<boolean> {
  const c = collections.webhookEndpoints;
  const count = await c.countDocuments({ project: data.project, livemode: data.livemode }, { limit });
  if (count < limit) return false;
  const mine: Array<Filter<WebhookEndpointDoc>> = [{ _id: data.id }];
  if (data.idempotency) mine.push({ idem: data.idempotency.scopeHash });
  for (const filter of mine) if (await c.findOne(filter, { projection: { _id: 1 } })) return false;
  return true;
}
