/**
 * Does a scope have any webhook endpoint? Asked once per created event, so that an
 * event nobody can receive costs no outbox write and no dispatch. Asking MongoDB
 * would scan every endpoint on FerretDB, so Redis keeps a hint per scope:
 *
 * - "1": the scope may have endpoints. Set by the endpoint create job *before* it
 *   inserts the endpoint, so any endpoint visible in MongoDB has its hint.
 * - "0": it had none when last checked. Written only with NX, so it never hides a
 *   "1" written in the meantime.
 * - missing (a new scope, or Redis lost its data): MongoDB is asked and the answer
 *   stored. A lost hint therefore costs one scan, never a lost event.
 */
import type { Redis } from 'ioredis';
import type { Scope } from '../../common/jobs.js';
import type { Collections } from '../../common/mongo.js';

function hintKey(prefix: string, scope: Scope): string {
  return `${prefix}:hooked:${scope.livemode ? 'live' : 'test'}:${scope.project}`;
}

export async function markScopeHooked(redis: Redis, prefix: string, scope: Scope): Promise<void> {
  await redis.set(hintKey(prefix, scope), '1');
}

export async function scopeMayBeHooked(redis: Redis, prefix: string, c: Collections, scope: Scope): Promise<boolean> {
  const key = hintKey(prefix, scope);
  const hint = await redis.get(key);
  if (hint !== null) return hint === '1';
  const any = await c.webhookEndpoints.findOne({ project: scope.project, livemode: scope.livemode }, { projection: { _id: 1 } });
  await redis.set(key, any ? '1' : '0', 'NX');
  return any !== null || (await redis.get(key)) === '1';
}
