import { randomFillSync } from 'node:crypto';

/** Base62 in ASCII order, so equal-length strings compare like the numbers they encode. */
const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const TIME_CHARS = 9; // 62^9 > 2^48 ms: good until the year 10889
const COUNTER_CHARS = 3; // 238 328 ids per millisecond per process
const RANDOM_CHARS = 14; // 62^14 ≈ 2^83.4
const COUNTER_SPACE = 62 ** COUNTER_CHARS;

export const ID_PREFIXES = {
  payment_intent: 'pi',
  webhook_endpoint: 'we',
  event: 'evt',
  api_key: 'key',
  request: 'req',
  attempt: 'wha',
  refund: 're',
  payout: 'po',
  payout_batch: 'pob',
  operator_discrepancy: 'od',
  balance_transaction: 'txn',
  adjustment: 'adj',
} as const;

export type IdKind = keyof typeof ID_PREFIXES;

export const ID_BODY_LENGTH = TIME_CHARS + COUNTER_CHARS + RANDOM_CHARS;

function encode(value: number, width: number): string {
  let out = '';
  for (let i = 0; i < width; i++) {
    out = ALPHABET[value % 62] + out;
    value = Math.floor(value / 62);
  }
  return out;
}

/**
 * Generates fixed-length ids that sort in creation order as plain strings: the
 * millisecond, then a per-process counter within it, then 83 fresh random bits. So
 * the ids of one process strictly increase, and no id helps to guess another.
 */
export class IdGenerator {
  private lastMs = -1;
  private counter = 0;
  /** `lastMs` encoded: ids of one millisecond share it. */
  private timePart = '';

  constructor(private readonly now: () => number) {}

  next(kind: IdKind): string {
    let ms = this.now();
    if (ms <= this.lastMs) {
      // Same millisecond, or the clock went back: stay ordered.
      ms = this.lastMs;
      this.counter++;
      if (this.counter >= COUNTER_SPACE) {
        ms++;
        this.counter = 0;
      }
    } else {
      this.counter = 0;
    }
    if (ms !== this.lastMs || this.timePart === '') this.timePart = encode(ms, TIME_CHARS);
    this.lastMs = ms;
    return `${ID_PREFIXES[kind]}_${this.timePart}${encode(this.counter, COUNTER_CHARS)}${randomBase62(RANDOM_CHARS)}`;
  }
}

const ID_BODY = new RegExp(`^[0-9A-Za-z]{${ID_BODY_LENGTH}}$`);

/** True when `id` has the shape of an id of this kind (it may still not exist). */
export function isId(kind: IdKind, id: string): boolean {
  const prefix = ID_PREFIXES[kind] + '_';
  return id.startsWith(prefix) && ID_BODY.test(id.slice(prefix.length));
}

/** The millisecond timestamp encoded in an id. */
export function idTime(id: string): number {
  const body = id.slice(id.indexOf('_') + 1, id.indexOf('_') + 1 + TIME_CHARS);
  let value = 0;
  for (const ch of body) value = value * 62 + ALPHABET.indexOf(ch);
  return value;
}

/** The smallest id body of the millisecond `ms`: ids made at or after `ms` sort at or above it. */
export function idBodyFloor(ms: number): string {
  return encode(ms, TIME_CHARS) + '0'.repeat(COUNTER_CHARS + RANDOM_CHARS);
}

/** Random bytes are drawn in batches: one `randomFillSync` per 4 KiB, not one per id. */
const pool = Buffer.alloc(4096);
let poolOffset = pool.length;

function randomByte(): number {
  if (poolOffset >= pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  return pool[poolOffset++] as number;
}

/** A random base62 string of `length` characters (secrets, client secrets, ids). */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    const b = randomByte();
    if (b < 248) out += ALPHABET[b % 62]; // 248 = 4 * 62: no modulo bias
  }
  return out;
}
