/**
 * The one Redis lock of the service: a key set with `SET NX PX` to a random token of
 * its holder, which only that holder renews or frees (a Lua script compares the
 * token first, so a lock that expired and was taken by another is left alone). Every
 * lock is built on it:
 *
 * - the record locks of worker/record-lock.ts (one writer of a stored object at a
 *   time, fenced writes, a heartbeat while held);
 * - the scope lock around an endpoint create's count-then-insert
 *   (worker/webhooks/endpoint-limit.ts);
 * - an idempotency key's in-flight lock (api/idempotency/store.ts): one try, no
 *   wait, its value the key's own "in flight" entry, which the worker's answer
 *   replaces.
 *
 * A holder that may wait while it holds the lock (a write gate, a slow store) keeps a
 * heartbeat: the lock is renewed every third of `ttlMs`, so only a holder that died
 * (or lost Redis) lets it expire. A write under the lock may be `fenced`: the lock
 * is renewed for a whole `ttlMs` right before the send, and a holder that lost it
 * does not send.
 */
import type { Redis } from 'ioredis';
import { randomBase62 } from './ids.js';

export interface TokenLockOptions {
  /** How long the lock lives unless renewed. */
  ttlMs: number;
  /** How long `acquire` waits for it before it throws `LockTimeout`. */
  waitMs: number;
  /** Renewed every third of `ttlMs` while held (default true). */
  heartbeat?: boolean;
  /** What the key holds while locked, made from the holder's token (default the token itself). */
  value?: (token: string) => string;
}

/** The lock stayed taken past the wait: another holder has it. */
export class LockTimeout extends Error {
  constructor(readonly key: string, waitMs: number) {
    super(`${key} stayed locked for ${waitMs} ms`);
    this.name = 'LockTimeout';
  }
}

/**
 * A key set in the same round trip as a lock command, where a write's protocol sets
 * one right before the write or right after it (an intent's token,
 * common/intent-tokens.ts): one Redis command less per write, on the path every
 * payment takes three times.
 */
export interface AlsoSet {
  key: string;
  value: string;
  px: number;
}

const ACQUIRE_AND_GET = `if redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2], 'NX') then return {1, redis.call('get', KEYS[2])} else return {0} end`;
// Renewals only ever extend: a fence that renewed for longer than the lock's ttl (a
// grouped update, worker/fenced-updates.ts) is not cut short by the heartbeat after it.
const RENEW = `if redis.call('get', KEYS[1]) == ARGV[1] then
  if redis.call('pttl', KEYS[1]) < tonumber(ARGV[2]) then redis.call('pexpire', KEYS[1], ARGV[2]) end
  return 1
else return 0 end`;
const RELEASE = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`;
// The same, with a key set in the same round trip: by the renewal only while the lock
// is this holder's (nothing is sent otherwise), by the release whoever holds it.
const RENEW_AND_SET = `if redis.call('get', KEYS[1]) == ARGV[1] then
  redis.call('set', KEYS[2], ARGV[3], 'PX', ARGV[4])
  if redis.call('pttl', KEYS[1]) < tonumber(ARGV[2]) then redis.call('pexpire', KEYS[1], ARGV[2]) end
  return 1
else return 0 end`;
const RELEASE_AND_SET = `redis.call('set', KEYS[2], ARGV[2], 'PX', ARGV[3])
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export class TokenLock {
  /** What the key holds while this holder has it ('' before it is taken). */
  private held = '';
  private heartbeat: NodeJS.Timeout | null = null;

  constructor(
    private readonly redis: Redis,
    private readonly key: string,
    private readonly options: TokenLockOptions,
  ) {}

  /**
   * One try: true when this holder has the lock now. With `read`, also that key's
   * value as it was the moment the lock was taken (null when absent), read in the
   * same round trip.
   */
  async tryAcquire(read?: string): Promise<{ taken: boolean; read: string | null }> {
    // From the pooled random bytes of common/ids.ts, not a system call per lock.
    const value = (this.options.value ?? ((token: string) => token))(randomBase62(22));
    const px = this.options.ttlMs;
    const taken: [number, (string | null)?] = read
      ? ((await this.redis.eval(ACQUIRE_AND_GET, 2, this.key, read, value, String(px))) as [number, string | null])
      : [(await this.redis.set(this.key, value, 'PX', px, 'NX')) === 'OK' ? 1 : 0];
    if (taken[0] !== 1) return { taken: false, read: null };
    this.held = value;
    this.stopHeartbeat();
    if (this.options.heartbeat !== false) {
      this.heartbeat = setInterval(() => void this.renew().catch(() => false), Math.floor(px / 3));
      this.heartbeat.unref();
    }
    return { taken: true, read: taken[1] ?? null };
  }

  /**
   * Waits until this holder has the lock; throws `LockTimeout` after `waitMs`. With
   * `read`, returns that key's value as it was the moment the lock was taken.
   */
  async acquire(read?: string): Promise<string | null> {
    const deadline = Date.now() + this.options.waitMs;
    for (;;) {
      const attempt = await this.tryAcquire(read);
      if (attempt.taken) return attempt.read;
      if (Date.now() > deadline) throw new LockTimeout(this.key, this.options.waitMs);
      await sleep(10 + Math.floor(Math.random() * 30));
    }
  }

  /**
   * Makes the lock live at least another `ttlMs` (and `extraMs` more: a write that
   * may take that much longer to land, worker/fenced-updates.ts); never shortens it.
   * False when it is no longer this holder's.
   */
  async renew(also?: AlsoSet, extraMs = 0): Promise<boolean> {
    const forMs = String(this.options.ttlMs + extraMs);
    const renewed = also
      ? await this.redis.eval(RENEW_AND_SET, 2, this.key, also.key, this.held, forMs, also.value, String(also.px))
      : await this.redis.eval(RENEW, 1, this.key, this.held, forMs);
    return renewed === 1;
  }

  /**
   * Sends one write while this holder has the lock, renewed for a whole `ttlMs`
   * right before it: null (nothing sent) when the lock is no longer this holder's.
   * Each try of a retried write goes through here.
   */
  async fenced<T>(send: () => Promise<T>, also?: AlsoSet): Promise<T | null> {
    if (!(await this.renew(also))) return null;
    return send();
  }

  /**
   * Frees the lock if it is still this holder's. Alone it never throws: an unreleased
   * lock expires. With `also`, which must be set, a failure is thrown.
   */
  async release(also?: AlsoSet): Promise<void> {
    this.stopHeartbeat();
    if (also) {
      await this.redis.eval(RELEASE_AND_SET, 2, this.key, also.key, this.held, also.value, String(also.px));
      return;
    }
    await this.redis.eval(RELEASE, 1, this.key, this.held).catch(() => undefined);
  }

  private stopHeartbeat(): void {
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = null;
  }
}

/** Runs `work` holding the lock at `key`; throws `LockTimeout` if it stays taken past `waitMs`. */
export async function withTokenLock<T>(redis: Redis, key: string, options: TokenLockOptions, work: (lock: TokenLock) => Promise<T>): Promise<T> {
  const lock = new TokenLock(redis, key, options);
  await lock.acquire();
  try {
    return await work(lock);
  } finally {
    await lock.release();
  }
}
