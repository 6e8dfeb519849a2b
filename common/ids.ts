import { randomBytes, randomInt } from 'node:crypto';

/** Base62 in ASCII order, so equal-length strings compare like the numbers they encode. */
const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const TIME_CHARS = 9; // 62^9 > 2^48 ms: good until the year 10889
const RANDOM_CHARS = 14; // 62^14 ≈ 2^83.4
const RANDOM_SPACE = 62n ** BigInt(RANDOM_CHARS);
/** Same-millisecond ids step forward by a random amount of up to 2^40, so they stay unguessable. */
const MAX_STEP = 2n ** 40n;

export const ID_PREFIXES = {
  payment_intent: 'pi',
  webhook_endpoint: 'we',
  event: 'evt',
  api_key: 'key',
  request: 'req',
  attempt: 'wha',
} as const;

export type IdKind = keyof typeof ID_PREFIXES;

export const ID_BODY_LENGTH = TIME_CHARS + RANDOM_CHARS;

function encode(value: bigint, width: number): string {
  let out = '';
  for (let i = 0; i < width; i++) {
    out = ALPHABET[Number(value % 62n)] + out;
    value /= 62n;
  }
  return out;
}

function randomBig(): bigint {
  return BigInt('0x' + randomBytes(11).toString('hex')) % RANDOM_SPACE;
}

/**
 * Generates fixed-length ids that sort in creation order as plain strings and carry
 * more than 80 random bits. Within one millisecond of one process the random part
 * increases, so ids of one process are strictly increasing.
 */
export class IdGenerator {
  private lastMs = -1;
  private lastRandom = 0n;

  constructor(private readonly now: () => number = Date.now) {}

  next(kind: IdKind): string {
    let ms = this.now();
    let random: bigint;
    if (ms <= this.lastMs) {
      ms = this.lastMs; // the clock went back or stood still: stay ordered
      random = this.lastRandom + 1n + (BigInt(randomInt(0, 2 ** 40 - 1)) % MAX_STEP);
      if (random >= RANDOM_SPACE) {
        ms += 1;
        random = randomBig() / 2n;
      }
    } else {
      // Start in the lower half so same-millisecond steps never overflow in practice.
      random = randomBig() / 2n;
    }
    this.lastMs = ms;
    this.lastRandom = random;
    return `${ID_PREFIXES[kind]}_${encode(BigInt(ms), TIME_CHARS)}${encode(random, RANDOM_CHARS)}`;
  }
}

const shared = new IdGenerator();

export function newId(kind: IdKind): string {
  return shared.next(kind);
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

/** A random base62 string of `length` characters (secrets, client secrets). */
export function randomBase62(length: number): string {
  const bytes = randomBytes(length * 2);
  let out = '';
  for (let i = 0; out.length < length; i++) {
    if (i >= bytes.length) return out + randomBase62(length - out.length);
    const b = bytes[i] as number;
    if (b < 248) out += ALPHABET[b % 62]; // 248 = 4 * 62: no modulo bias
  }
  return out;
}
