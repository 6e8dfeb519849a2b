/**
 * Idempotency keys, the api half: the Redis lock and cache, the durable record in
 * MongoDB, and the memory of replays. What it promises (DESIGN.md section 4):
 *
 * - One key, one request: the first request with a key is processed; while it is,
 *   the same key gets 409 `idempotency_in_flight`; once it has completed, the same
 *   request (method, path, JSON value) gets the recorded status and body byte for
 *   byte with `Idempotent-Replayed: true`, and a different one gets 400
 *   `idempotency_key_reused`. Keys are scoped to (project, livemode) and live 48 h.
 * - Only results of processing are recorded, by the worker: validation failures,
 *   401, 409, 429 and 503 answers leave nothing behind, so the client can retry.
 * - The Redis entry is the fast path: an in-flight lock (`SET NX PX`, so a crashed
 *   api process holds a key for at most the lock lifetime) and then the result's
 *   fingerprint and object id. The source of truth is MongoDB: the object itself
 *   carries its key (a unique field), and presenting it again gives the recorded
 *   bytes. So losing Redis never turns a retry into a duplicate, and Redis never
 *   holds a response body (which carries the object's secret).
 * - A request that waits on the job of its key takes the job's answer only when the
 *   answer's fingerprint is its own; otherwise it is `idempotency_key_reused`.
 * - When may a Redis miss be trusted without asking MongoDB? Only while the epoch
 *   key exists and says so. It is created when missing (a new or emptied Redis) with
 *   the latest expiry of the results MongoDB holds at that moment: until then a miss
 *   is checked against MongoDB; after it, every live result is one that was cached
 *   since, so the miss is the truth. Losing Redis data loses the epoch too.
 * - A completed result never changes until its key expires, so each api process
 *   also keeps the ones it has read in memory (bounded in bytes), and replays them
 *   without asking Redis. It also keeps every recorded answer it hears on the
 *   results channel, its own requests' or another process's: a replay that lands on
 *   another api than its first request reads nothing either (without it, rendering
 *   the answer from the object is a read of MongoDB, a scan on the local stack's
 *   store: docs/storage.md).
 */
import type { Redis } from 'ioredis';
import type { Config } from '../../common/config.js';
import { errors } from '../../common/errors.js';
import { decodeEntry, encodeDone, FINGERPRINT_KEY_ID, fingerprintMatches, idempotentJobId, recordPointer, RECORD_POINTER_PREFIX, type CachedEntry } from '../../common/idempotency.js';
import { ServiceKeyring } from '../../common/service-keys.js';
import type { WriteResultMessage, IdempotencyJobInfo, Scope } from '../../common/jobs.js';
import type { Collections } from '../../common/mongo.js';
import { TokenLock } from '../../common/redis-lock.js';
import { presentPaymentIntent, presentWebhookEndpoint } from '../../common/presenters.js';
import { describeKeyedRequest, type KeyedRequest } from './keyed-request.js';
import { ReplayCache, type Replay, type SentRequest } from './replay-cache.js';

type Lookup =
  | { kind: 'replay'; replay: Replay }
  | { kind: 'new' };

/** What `begin` found: an answer to replay at once, or this request's ticket. */
export type Begun = { replay: Replay } | { ticket: Ticket };

/** A request's answer, as `settle` makes it from its job's result. */
export interface Answer extends Replay {
  /** Another request's answer (sent with `Idempotent-Replayed: true`). */
  replayed: boolean;
}

/** Who this request is, to tell its own result from another request's. */
export interface Own {
  requestId: string;
  /** The object's id (a create's new one, or a mutation's request id). */
  objectId: string;
}

/**
 * One request's way through the protocol, from `begin` to `settle`. A request
 * without a key gets one too: it takes nothing, and settles its result as it is.
 */
export interface Ticket {
  /** The key's part of the job's data; null without a key. */
  readonly idempotency: IdempotencyJobInfo | null;
  /** The job's id: the key's (every request with the key waits on one job), or the object's. */
  jobId(objectId: string): string;
  /**
   * After validation, before the job: takes the key. A replay when a request with
   * the key completed since `begin`; 409 `idempotency_in_flight` while one runs.
   */
  claim(): Promise<Replay | null>;
  /** The job could not be enqueued: frees the key for a retry. */
  abandon(): Promise<void>;
  /**
   * The key's result as the worker cached it in Redis, if there is one yet, as a
   * result message: for a wait whose message may have been missed. Null without a key.
   */
  recorded(own: Own): Promise<WriteResultMessage | null>;
  /**
   * The job's result, or null when none came in time, made this request's answer.
   * A refusal frees the key for a retry, a success is kept for this process's
   * replays; another request's result with the key is 400 `idempotency_key_reused`
   * (throws), and no result at all frees the key and is 503 `processing_timeout`
   * (throws) unless Redis already holds the answer.
   */
  settle(result: WriteResultMessage | null, own: Own): Promise<Answer>;
}

/** The answer of another request's job (it ran, or ran again after Redis lost its answer, while this one waited) is a replay. */
function answerOf(result: WriteResultMessage, own: Own): Answer {
  const replayed = result.replayed === true || (result.requestId !== undefined && result.requestId !== own.requestId);
  return { status: result.status, body: result.body, replayed };
}

/** A request without an `Idempotency-Key`. */
const UNKEYED: Ticket = {
  idempotency: null,
  jobId: (objectId) => objectId,
  claim: async () => null,
  abandon: async () => undefined,
  recorded: async () => null,
  async settle(result, own) {
    if (!result) throw errors.processingTimeout();
    return answerOf(result, own);
  },
};

/**
 * A key's in-flight entry is the service's one Redis lock (common/redis-lock.ts),
 * taken in one try and never waited for, holding the entry itself; the worker's
 * answer replaces it, and a release deletes it only while it is still this holder's.
 */
const inFlightLock = (value: string) => JSON.stringify({ s: 'lock', t: value });

export interface IdempotencyDeps {
  config: Pick<Config, 'queuePrefix' | 'idempotencyTtlMs' | 'idempotencyLockMs' | 'replayCacheBytes'> & Partial<Pick<Config, 'serviceKeysReloadMs'>>;
  /** Fail-fast command connection. */
  redis: Redis;
  collections: Collections;
  /** Epoch ms. */
  now: () => number;
}

/** One per app, so that its replay memory is shared by every request. */
export class IdempotencyStore {
  private readonly epochKey: string;
  private epochStart: Promise<string> | null = null;
  readonly replays: ReplayCache;

  /**
   * What the fingerprints are made with (common/idempotency.ts `fingerprintOf`): the
   * current version, and the others held, whose fingerprints still match (a rotation).
   */
  private readonly fingerprintKeys: ServiceKeyring;

  constructor(private readonly deps: IdempotencyDeps) {
    this.epochKey = `${deps.config.queuePrefix}:idem:epoch`;
    this.fingerprintKeys = new ServiceKeyring(deps.collections.serviceKeys, FINGERPRINT_KEY_ID, { reloadMs: deps.config.serviceKeysReloadMs });
    this.replays = new ReplayCache(deps.now, deps.config.replayCacheBytes);
  }

  /**
   * Before validation: the recorded answer of the key to replay (400
   * `idempotency_key_reused` for another request, 409 `idempotency_in_flight` while
   * one runs: both thrown), or this request's ticket. Takes nothing yet. `sent`:
   * the request as it was read, kept with its answer once it has one, so that the
   * same bytes again are replayed before routing.
   */
  async begin(
    scope: Scope,
    key: string | null,
    method: string,
    path: string,
    body: unknown,
    encoding: 'json' | 'form' = 'json',
    sent?: SentRequest,
  ): Promise<Begun> {
    if (key === null) return { ticket: UNKEYED };
    const expiresAt = this.deps.now() + this.deps.config.idempotencyTtlMs;
    const [current, held] = await Promise.all([this.fingerprintKeys.current(), this.fingerprintKeys.all()]);
    const keys = { fingerprintKey: current.key, formerFingerprintKeys: held.filter((v) => v.version !== current.version).map((v) => v.key) };
    const req = describeKeyedRequest({ prefix: this.deps.config.queuePrefix, expiresAt, ...keys }, scope, key, method, path, body, encoding);
    const found = await this.lookup(req, sent);
    if (found.kind === 'replay') return { replay: found.replay };
    return { ticket: this.ticket(req, sent) };
  }

  private ticket(req: KeyedRequest, sent: SentRequest | undefined): Ticket {
    const jobId = idempotentJobId(req.info.scopeHash);
    let held: TokenLock | null = null;
    const release = async () => {
      await held?.release();
    };
    return {
      idempotency: req.info,
      jobId: () => jobId,
      claim: async () => {
        const locked = await this.lock(req);
        if ('replay' in locked) return locked.replay;
        held = locked.lock;
        return null;
      },
      abandon: release,
      recorded: async (own) => {
        const late = await this.lookupCached(req);
        return late && { jobId, fingerprint: req.info.fingerprint, status: late.status, body: late.body, replayed: late.madeBy !== own.objectId };
      },
      settle: async (result, own) => {
        if (result) {
          // A success has replaced the lock with its record; a refusal frees the key for a retry.
          if (result.status !== 200) await release();
          // The key's job may be another request's (this one retried after a timeout with another body).
          if (result.fingerprint === null || !fingerprintMatches(req.info, result.fingerprint)) throw errors.idempotencyKeyReused();
          const answer = answerOf(result, own);
          // This request's own answer, just recorded: kept, so that its replays to this
          // process read nothing from MongoDB (a client that lost the answer retries at once).
          if (answer.status === 200 && !answer.replayed) this.replays.keep(req.memoryKey, req.canonical, { status: answer.status, body: answer.body }, req.info.expiresAt, sent);
          return answer;
        }
        // No answer in time. The job goes on and records its result; the key is freed so a
        // retry attaches to the same job (same job id) instead of getting 409. The worker
        // caches the result in Redis as it publishes it: a missed message is found there,
        // without a read of MongoDB (which, under load, is what is slow).
        const late = await this.lookupCached(req).catch(() => null);
        await release();
        // Another request's answer (this one retried after a timeout): a replay.
        if (late) return { status: late.status, body: late.body, replayed: late.madeBy !== own.objectId };
        throw errors.processingTimeout();
      },
    };
  }

  /** Before validation: is there a result to replay, or a request in flight? */
  private async lookup(req: KeyedRequest, sent: SentRequest | undefined): Promise<Lookup> {
    const kept = this.replays.get(req.memoryKey);
    if (kept) {
      if (kept.canonical !== req.canonical) throw errors.idempotencyKeyReused();
      // Kept again with this request as read: the next one with the same bytes is matched before routing.
      if (sent && !sameSent(kept.sent, sent)) this.replays.keep(req.memoryKey, kept.canonical, kept, kept.expiresAt, sent);
      return { kind: 'replay', replay: kept };
    }
    const heard = this.replays.get(heardKey(idempotentJobId(req.info.scopeHash)));
    if (heard) {
      // Kept with the fingerprint of the request it answered.
      if (!fingerprintMatches(req.info, heard.canonical)) throw errors.idempotencyKeyReused();
      if (sent) this.replays.keep(req.memoryKey, req.canonical, heard, heard.expiresAt, sent);
      return { kind: 'replay', replay: heard };
    }
    // Two reads, not one MGET: on a cluster the key and the epoch are in different slots
    // (the epoch only ever appears, so reading them apart changes nothing).
    const [raw, epoch] = await Promise.all([this.deps.redis.get(req.redisKey), this.deps.redis.get(this.epochKey)]);
    const entry = decodeEntry(raw ?? null);
    if (entry?.s === 'done') {
      const found = await this.replayOf(req, entry);
      if (found.kind === 'replay') this.replays.keep(req.memoryKey, req.canonical, found.replay, entry.exp, sent);
      return found;
    }
    if (entry?.s === 'lock') throw errors.idempotencyInFlight();
    const until = epoch ?? (await this.epochOnce());
    if (Number(until) <= this.deps.now()) return { kind: 'new' };
    return this.lookupDurable(req);
  }

  /**
   * The epoch, started if Redis has none: one start at a time in this process, the
   * other requests wait for it. (Each start may scan, docs/storage.md; 64 requests
   * starting it at once, each with its own scans, once stalled a whole service for
   * minutes.)
   */
  private epochOnce(): Promise<string> {
    this.epochStart ??= this.startEpoch()
      .then(async () => (await this.deps.redis.get(this.epochKey)) ?? String(Number.MAX_SAFE_INTEGER))
      .finally(() => {
        this.epochStart = null;
      });
    return this.epochStart;
  }

  /**
   * After Redis lost its data (or on first use): from when on is a miss the truth?
   * The latest expiry of the results MongoDB holds now; set only if no other process
   * set it first.
   */
  private async startEpoch(): Promise<void> {
    const c = this.deps.collections;
    const latest = (collection: typeof c.paymentIntents | typeof c.webhookEndpoints) =>
      (collection as typeof c.paymentIntents)
        .find({ idem: { $exists: true } }, { projection: { idem_expires_at: 1 } })
        .sort({ idem_expires_at: -1 })
        .limit(1)
        .toArray()
        .then((docs) => docs[0]?.idem_expires_at ?? 0);
    const latestRecord = await c.idempotencyRecords
      .find({}, { projection: { expires_at: 1 } })
      .sort({ expires_at: -1 })
      .limit(1)
      .toArray()
      .then((docs) => docs[0]?.expires_at ?? 0);
    const until = Math.max(await latest(c.paymentIntents), await latest(c.webhookEndpoints), latestRecord);
    await this.deps.redis.set(this.epochKey, String(until), 'NX');
  }

  /**
   * Takes the in-flight lock. Returns its token; on a lost race, answers as
   * `lookup` would for the winner (replay, reuse or 409).
   */
  private async lock(req: KeyedRequest): Promise<{ lock: TokenLock } | { replay: Replay }> {
    const lock = new TokenLock(this.deps.redis, req.redisKey, { ttlMs: this.deps.config.idempotencyLockMs, waitMs: 0, heartbeat: false, value: inFlightLock });
    if ((await lock.tryAcquire()).taken) return { lock };
    const entry = decodeEntry(await this.deps.redis.get(req.redisKey));
    if (entry?.s === 'done') {
      const result = await this.replayOf(req, entry);
      if (result.kind === 'replay') return { replay: result.replay };
    }
    throw errors.idempotencyInFlight();
  }

  /** A result cached in Redis: the same request gets the object it created, rendered again. */
  private async replayOf(req: KeyedRequest, entry: Extract<CachedEntry, { s: 'done' }>): Promise<Lookup> {
    if (!fingerprintMatches(req.info, entry.fp)) throw errors.idempotencyKeyReused();
    const found = await this.render(entry.id, req.info.scopeHash);
    // The object is gone (or the entry is stale): the durable record decides.
    if (found === null) return this.lookupDurable(req);
    return { kind: 'replay', replay: { status: entry.status, body: found.body } };
  }

  /**
   * The recorded answer an entry points at: a create's is its stored object,
   * presented with its secret as the worker rendered it; a mutation's is its record.
   * `madeBy`: the object's id, or the mutation's.
   *
   * An object that has changed since its create had its create answer frozen as the
   * key's record first (worker/processors/mutation.ts, freezeCreateAnswer), and Redis
   * pointed at that record. An entry read just before the freeze still points at the
   * object, which may have changed by the time it is read here: so a changed intent
   * (its `rev`), and any endpoint, is answered from the key's record when there is one.
   * The record is read after the object, and a change is made only after its record
   * exists, so a change seen here always comes with its record.
   */
  private async render(pointer: string, scopeHash: string): Promise<{ body: string; madeBy: string } | null> {
    const c = this.deps.collections;
    const record = async (id: string) => {
      const found = await c.idempotencyRecords.findOne({ _id: id });
      return found && { body: found.body, madeBy: found.mutation };
    };
    if (pointer.startsWith(RECORD_POINTER_PREFIX)) return record(pointer.slice(RECORD_POINTER_PREFIX.length));
    if (pointer.startsWith('pi_')) {
      const pi = await c.paymentIntents.findOne({ _id: pointer }, { projection: { history: 0 } });
      if (!pi) return null;
      const frozen = (pi.rev ?? 0) > 0 ? await record(scopeHash) : null;
      return frozen ?? { body: JSON.stringify(presentPaymentIntent(pi, { withSecret: true })), madeBy: pi._id };
    }
    if (pointer.startsWith('we_')) {
      const endpoint = await c.webhookEndpoints.findOne({ _id: pointer });
      if (!endpoint) return null;
      return (await record(scopeHash)) ?? { body: JSON.stringify(presentWebhookEndpoint(endpoint, { withSecret: true })), madeBy: endpoint._id };
    }
    return null;
  }

  /** Whether `hear` keeps a result: a key's recorded answer. Known before its body is opened. */
  keepsHeard(message: Pick<WriteResultMessage, 'expiresAt' | 'fingerprint'>): boolean {
    return message.expiresAt !== undefined && message.fingerprint !== null;
  }

  /** A result published on the results channel: kept when it is a key's recorded answer. */
  hear(message: WriteResultMessage): void {
    if (message.expiresAt === undefined || message.fingerprint === null) return;
    this.replays.keep(heardKey(message.jobId), message.fingerprint, { status: message.status, body: message.body }, message.expiresAt);
  }

  /**
   * The completed result Redis holds for the key (the worker caches it as it
   * publishes it), rendered from the stored object: after a wait for a result timed
   * out, in case its message was missed. Null when there is none yet.
   */
  private async lookupCached(req: KeyedRequest): Promise<(Replay & { madeBy: string }) | null> {
    const entry = decodeEntry(await this.deps.redis.get(req.redisKey));
    if (entry?.s !== 'done' || !fingerprintMatches(req.info, entry.fp)) return null;
    const found = await this.render(entry.id, req.info.scopeHash);
    return found === null ? null : { status: entry.status, body: found.body, madeBy: found.madeBy };
  }

  /** Frees the key for a retry (after a timeout or a failure to enqueue). */
  /**
   * The durable record: after a Redis restart or flush, or once a lock expired. A
   * mutation's answer, or a create's frozen before its object changed, is a record,
   * found by `_id` (cheap on every store). A create's answer that is still its
   * object is not looked for here: finding the object by its key may scan every
   * object (docs/storage.md), once per keyed request for as long as the epoch lasts (48 h
   * after Redis lost its data). The create's job finds it instead, when its insert
   * meets the key's unique index: that costs a scan only for a key that is really
   * used again, and answers the same bytes, flagged as a replay.
   */
  private async lookupDurable(req: KeyedRequest): Promise<Lookup> {
    const c = this.deps.collections;
    const found = await c.idempotencyRecords.findOne({ _id: req.info.scopeHash });
    const record = found && found.expires_at > this.deps.now() ? found : null;
    if (record) {
      const ttl = record.expires_at - this.deps.now();
      await this.deps.redis
        .set(req.redisKey, encodeDone(record.fp, recordPointer(record._id), record.status, record.expires_at), 'PX', ttl)
        .catch(() => undefined);
      return this.compare(req, record.fp, { status: record.status, body: record.body });
    }
    return { kind: 'new' };
  }

  private compare(req: KeyedRequest, recordedFingerprint: string, replay: Replay): Lookup {
    if (!fingerprintMatches(req.info, recordedFingerprint)) throw errors.idempotencyKeyReused();
    return { kind: 'replay', replay };
  }
}

function sameSent(a: SentRequest | undefined, b: SentRequest): boolean {
  return a !== undefined && a.method === b.method && a.path === b.path && a.contentType === b.contentType && a.text === b.text && a.route === b.route;
}

/** Where a heard answer is kept: apart from the requests' own keys, which hold newlines and never start with one. */
function heardKey(jobId: string): string {
  return `\n${jobId}`;
}
