import type { Collections } from '../../common/mongo.js';

/**
 * Deletes idempotency records past their lifetime (FerretDB has no TTL indexes).
 * Lookups already treat an expired record as absent; this only reclaims space.
 */
export async function sweepIdempotency(c: Collections, now: number): Promise<{ deleted: number }> {
  const result = await c.idempotency.deleteMany({ expires_at: { $lte: now } });
  return { deleted: result.deletedCount };
}
