/**
 * Could an endpoint of this scope want this event type? Asked once per event, so that
 * an event nobody receives costs no outbox write and no dispatch: a merchant whose
 * endpoints take `payment_intent.created` only pays nothing of the webhook path for
 * the lifecycle's other events. Asking MongoDB costs a query per event (a scan of
 * every endpoint on the local stack's store: docs/storage.md), so Redis keeps a hint
 * per scope, a set of event types:
 *
 * - An endpoint's types are added *before* the endpoint is inserted, or updated to
 *   take them: any subscription visible in MongoDB is in the set.
 * - `-` marks a set completed from MongoDB (every endpoint of the scope, merged into
 *   what is there). A set without it (a new scope, Redis lost its data, or only an
 *   endpoint create wrote it so far) is completed first: one scan, never a lost event.
 * - Nothing is ever removed: a deleted endpoint or a dropped type leaves a superset,
 *   which costs a dispatch that finds nobody, never a missed delivery.
 *
 * Like every hint here, it trusts Redis to hold what was written: a Redis that comes
 * back from an older snapshot may miss a type added since (as a "no endpoint" answer
 * could before the types were kept).
 */
import type { Redis } from 'ioredis';
import { ALL_EVENTS } from '../../common/events.js';
import type { Scope } from '../../common/jobs.js';
import type { Collections } from '../../common/mongo.js';

const COMPLETE = '-';

function hintKey(prefix: string, scope: Scope): string {
  return `${prefix}:hooked-types:${scope.livemode ? 'live' : 'test'}:${scope.project}`;
}

/** Before an endpoint taking `types` is inserted, or updated to take them. */
export async function markScopeHooked(redis: Redis, prefix: string, scope: Scope, types: readonly string[]): Promise<void> {
  if (types.length > 0) await redis.sadd(hintKey(prefix, scope), ...types);
}

export async function scopeMayWant(redis: Redis, prefix: string, c: Collections, scope: Scope, type: string): Promise<boolean> {
  const key = hintKey(prefix, scope);
  const [complete, all, one] = await redis.smismember(key, COMPLETE, ALL_EVENTS, type);
  if (complete === 1) return all === 1 || one === 1;
  const endpoints = await c.webhookEndpoints
    .find({ project: scope.project, livemode: scope.livemode }, { projection: { enabled_events: 1 } })
    .toArray();
  await redis.sadd(key, COMPLETE, ...endpoints.flatMap((e) => e.enabled_events));
  // What an endpoint create or update added meanwhile counts too.
  const [allNow, oneNow] = await redis.smismember(key, ALL_EVENTS, type);
  return allNow === 1 || oneNow === 1;
}
