/**
 * The service's own keys, kept in MongoDB (`service_keys`) and never in Redis: read
 * by every process that needs one, and made by the first (a racing process's insert
 * wins, and is read). One key per use: the confirm input's seal (input-seal.ts), the
 * idempotency fingerprints (idempotency.ts).
 */
import { randomBytes } from 'node:crypto';
import type { Collection } from 'mongodb';
import type { ServiceKeyDoc } from './documents.js';
import { isDuplicateKey } from './mongo.js';

export class ServiceKey {
  private key: Promise<Buffer> | null = null;

  constructor(
    private readonly keys: Collection<ServiceKeyDoc>,
    private readonly id: string,
  ) {}

  /** The key (loaded once per process; again after a failed load). Throws while MongoDB is away. */
  ready(): Promise<Buffer> {
    this.key ??= loadKey(this.keys, this.id).catch((err: unknown) => {
      this.key = null;
      throw err;
    });
    return this.key;
  }
}

async function loadKey(keys: Collection<ServiceKeyDoc>, id: string): Promise<Buffer> {
  const found = await keys.findOne({ _id: id });
  if (found) return Buffer.from(found.key, 'base64');
  try {
    const key = randomBytes(32);
    await keys.insertOne({ _id: id, key: key.toString('base64'), created_ms: Date.now() });
    return key;
  } catch (err) {
    if (!isDuplicateKey(err)) throw err;
    const won = await keys.findOne({ _id: id });
    if (!won) throw err;
    return Buffer.from(won.key, 'base64');
  }
}
