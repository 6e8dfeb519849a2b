/**
 * At most `limit` webhook endpoints per (project, livemode), as on Stripe: every
 * endpoint costs a delivery job per event, so the cap bounds what one tenant's
 * events can cost. The check is a count before the insert; creates of one scope are
 * serialised by a short Redis lock around count-then-insert, so concurrent creates
 * on any number of workers cannot pass the cap together. (The count may scan the
 * collection, docs/storage.md; endpoint collections are small.)
 */
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Filter } from 'mongodb';
import type { WebhookEndpointDoc } from '../../common/documents.js';
import type { IdempotencyJobInfo, Scope } from '../../common/jobs.js';
import type { Collections } from '../../common/mongo.js';

/** Longer than any count-then-insert; a crashed holder blocks its scope's creates for at most this. */
const LOCK_MS = 30_000;
/** How long a create waits for the lock before failing its attempt (the job is retried). */
const WAIT_MS = 10_000;

const RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Runs `fn` while holding the scope's endpoint-create lock. */
export async function withScopeLock<T>(redis: Redis, prefix: string, scope: Scope, fn: () => Promise<T>): Promise<T> {
  const key = `${prefix}:endpoint-create:${scope.livemode ? 'live' : 'test'}:${scope.project}`;
  const token = randomBytes(12).toString('hex');
  const deadline = Date.now() + WAIT_MS;
  while ((await redis.set(key, token, 'PX', LOCK_MS, 'NX')) !== 'OK') {
    if (Date.now() > deadline) throw new Error(`endpoint creates of ${scope.project} are locked: retrying`);
    await sleep(10 + Math.floor(Math.random() * 30));
  }
  try {
    return await fn();
  } finally {
    await redis.eval(RELEASE, 1, key, token).catch(() => undefined);
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
