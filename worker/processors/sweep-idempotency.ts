import type { Collections } from '../../common/mongo.js';

/**
 * Frees idempotency keys past their lifetime (FerretDB has no TTL indexes): the
 * object stays, its unique `idem` field goes, so the key may create anew. Lookups
 * already treat an expired key as free; this keeps the unique index honest.
 */
export async function sweepIdempotency(c: Collections, now: number): Promise<{ freed: number }> {
  const expired = { idem: { $exists: true }, idem_expires_at: { $lte: now } };
  const [pis, endpoints, records] = await Promise.all([
    c.paymentIntents.updateMany(expired, { $unset: { idem: '' } }),
    c.webhookEndpoints.updateMany(expired, { $unset: { idem: '' } }),
    // The records of mutations (confirm, cancel, updates) are documents of their own.
    c.idempotencyRecords.deleteMany({ expires_at: { $lte: now } }),
  ]);
  return { freed: pis.modifiedCount + endpoints.modifiedCount + records.deletedCount };
}
