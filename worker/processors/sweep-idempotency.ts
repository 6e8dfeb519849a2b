import type { Collections } from '../../common/mongo.js';

/**
 * Deletes idempotency records past their lifetime (FerretDB has no TTL indexes).
 * Lookups already treat an expired record as absent; this only reclaims space.
 */
export async function sweepIdempotency(c: Collections, now: number): Promise<{ deleted: number; results: number }> {
  const results = await c.idempotencyResults.deleteMany({ expires_at: { $lte: now } });
  const claims = await c.idempotency.deleteMany({ expires_at: { $lte: now } });
  return { deleted: claims.deletedCount, results: results.deletedCount };
}
