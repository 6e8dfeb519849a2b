/**
 * Test mode's daily quota of new objects (DESIGN section 20, security review M4): a
 * project makes at most `TEST_OBJECTS_PER_DAY` payment intents, refunds, webhook
 * endpoints, payouts and payout batches together per UTC day in test mode, a batch
 * counting itself and each of its items. A leaked test key could otherwise fill
 * the store that every tenant's live payments need. Live mode is never counted.
 *
 * One counter per (project, UTC day) in Redis, shared by every api process: one INCRBY
 * per create that passed validation, of the objects it makes, in one script with the
 * key's expiry, set at its first count to the end of its day (and an hour more, for
 * clocks a little apart).
 * The create is refused before its key is claimed or its job enqueued, so a refused
 * create leaves nothing behind and a retry with the same key is counted, and refused,
 * again. A request refused here, or later for another reason, still counts: the
 * quota bounds what a project asks for, which bounds what it stores.
 */
import type { Redis } from 'ioredis';
import type { Config } from '../common/config.js';
import { errors, type ApiError } from '../common/errors.js';
import type { Scope } from '../common/jobs.js';

const DAY_MS = 24 * 3600_000;
const GRACE_MS = 3600_000;

/** Lua: the day's count after this create's ARGV[2] objects; the key expires after its day. */
const COUNT = `
local n = redis.call('INCRBY', KEYS[1], ARGV[2])
if n == tonumber(ARGV[2]) then redis.call('PEXPIREAT', KEYS[1], ARGV[1]) end
return n`;

export interface TestQuotaDeps {
  config: Pick<Config, 'queuePrefix' | 'retention'>;
  redis: Redis;
  /** Epoch ms. */
  now: () => number;
}

/** The Redis key of a project's count for the UTC day of `nowMs`. */
export function testQuotaKey(prefix: string, project: string, nowMs: number): string {
  return `${prefix}:test-quota:${project}:${Math.floor(nowMs / DAY_MS)}`;
}

/**
 * Counts a create's `objects` new objects of `scope` against its day's quota: null
 * while within it, else the 429 `quota_exceeded` to answer (with `Retry-After` to the
 * next UTC day). Live mode passes uncounted.
 */
export async function testQuotaRefusal(deps: TestQuotaDeps, scope: Scope, objects = 1): Promise<ApiError | null> {
  if (scope.livemode) return null;
  const now = deps.now();
  const dayEnd = (Math.floor(now / DAY_MS) + 1) * DAY_MS;
  const count = Number(await deps.redis.eval(COUNT, 1, testQuotaKey(deps.config.queuePrefix, scope.project, now), dayEnd + GRACE_MS, objects));
  const limit = deps.config.retention.testObjectsPerDay;
  return count > limit ? errors.quotaExceeded(limit, Math.max(1, Math.ceil((dayEnd - now) / 1000))) : null;
}
