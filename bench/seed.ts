/**
 * Seeds payment intents straight into the `payment_intents` collection of the api's
 * database, for one project and mode, so the api lists them as its own.
 *
 * Ids come from an IdGenerator on a fake clock that steps forward `stepMs` per
 * document, oldest first, ending at `endMs`: ids stay in creation order and
 * `created` matches the id. Several calls can stack older ranges under newer ones
 * (give each an `endMs` before the previous call's `startMs`).
 */
import type { Db } from 'mongodb';
import { DEFAULT_OPERATORS } from '../common/config.js';
import { IdGenerator, randomBase62 } from '../common/ids.js';
import type { PaymentIntentDoc } from '../common/documents.js';
import { collections } from '../common/mongo.js';

export interface SeedOptions {
  project: string;
  livemode: boolean;
  count: number;
  /** Epoch ms of the newest seeded object. */
  endMs: number;
  /** Milliseconds between two consecutive objects. */
  stepMs?: number;
  batchSize?: number;
  /** Called after each batch. */
  onProgress?: (inserted: number, count: number) => void;
  /** Which object, counted from the oldest, to return as `nearOldestId` (default 150: a full page lies below it). */
  nearOldest?: number;
}

export interface SeedResult {
  /** Epoch ms of the oldest seeded object. */
  startMs: number;
  oldestId: string | null;
  newestId: string | null;
  /** The id `nearOldest` objects above the oldest one: a deep-page cursor. */
  nearOldestId: string | null;
  seconds: number;
}

const CURRENCIES = ['xof', 'kes', 'ugx', 'xaf', 'ghs'];

function seededDoc(id: string, ms: number, i: number, project: string, livemode: boolean): PaymentIntentDoc {
  const created = Math.floor(ms / 1000);
  const selected = i % 3 === 0 ? (DEFAULT_OPERATORS[i % DEFAULT_OPERATORS.length] as string) : null;
  return {
    _id: id,
    project,
    livemode,
    amount: 100 + (i % 100_000),
    currency: CURRENCIES[i % CURRENCIES.length] as string,
    description: i % 2 === 0 ? `Seeded order ${i}` : null,
    status: 'new',
    client_secret: `${id}_secret_${randomBase62(24)}`,
    automatic_operator: selected === null,
    allowed_operators: [...DEFAULT_OPERATORS],
    selected_operator: selected,
    metadata: [
      { k: 'order_id', v: String(i) },
      { k: 'source', v: 'bench-seed' },
    ],
    created,
    expires_at: created + 86_400,
  };
}

/** Inserts `count` documents in unordered batches; returns the time range and a few ids. */
export async function seedPaymentIntents(db: Db, options: SeedOptions): Promise<SeedResult> {
  const { project, livemode, count, endMs } = options;
  const nearOldest = Math.min(options.nearOldest ?? 150, count - 1);
  const stepMs = options.stepMs ?? 1000;
  const batchSize = options.batchSize ?? 5000;
  const startMs = endMs - (count - 1) * stepMs;
  let clock = startMs;
  const ids = new IdGenerator(() => clock);
  const collection = collections(db).paymentIntents;
  const began = Date.now();
  let oldestId: string | null = null;
  let newestId: string | null = null;
  let nearOldestId: string | null = null;

  for (let done = 0; done < count; ) {
    const n = Math.min(batchSize, count - done);
    const batch: PaymentIntentDoc[] = new Array(n);
    for (let j = 0; j < n; j++) {
      const i = done + j;
      clock = startMs + i * stepMs;
      const id = ids.next('payment_intent');
      batch[j] = seededDoc(id, clock, i, project, livemode);
      if (i === 0) oldestId = id;
      if (i === nearOldest) nearOldestId = id;
      newestId = id;
    }
    await collection.insertMany(batch, { ordered: false });
    done += n;
    options.onProgress?.(done, count);
  }
  return { startMs, oldestId, newestId, nearOldestId, seconds: (Date.now() - began) / 1000 };
}
