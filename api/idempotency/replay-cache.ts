/** A recorded answer to send again. */
export interface Replay {
  status: number;
  body: string;
}

/**
 * A request as this process read it, before any parsing: the same method, path,
 * `Content-Type` header and body text make the same canonical request, so a replay
 * can be matched to it before routing (../handlers/replay-from-memory.ts). The
 * route is its template, for the request's log line and metrics.
 */
export interface SentRequest {
  method: string;
  path: string;
  contentType: string;
  text: string;
  route: string;
}

export interface KeptReplay extends Replay {
  /** The request it answered: its canonical form, or (an answer heard on the results channel) its fingerprint. */
  canonical: string;
  expiresAt: number;
  bytes: number;
  /** A request of this process that was given this answer, as it was read. */
  sent?: SentRequest;
}

/** What an entry costs: its strings at two bytes a character (V8's worst case), plus bookkeeping. */
function sizeOf(memoryKey: string, canonical: string, body: string, sent: SentRequest | undefined): number {
  const sentLength = sent ? sent.path.length + sent.contentType.length + sent.text.length + sent.route.length : 0;
  return 2 * (memoryKey.length + canonical.length + body.length + sentLength) + 64;
}

/**
 * Completed results an api process has read, kept in memory: a result never
 * changes until its key expires, so it can be replayed without asking Redis. The
 * bound is in bytes, not entries, since a body may be anything up to the largest
 * response: the oldest go first past it, and a result larger than the bound is
 * not kept at all.
 */
export class ReplayCache {
  private readonly replays = new Map<string, KeptReplay>();
  private total = 0;
  /** Requests answered before routing, matched to a kept request as it was read. */
  answeredAsSent = 0;

  constructor(
    private readonly now: () => number,
    /** `IDEMPOTENCY_REPLAY_CACHE_BYTES`; 0 keeps nothing. */
    private readonly maxBytes: number,
  ) {}

  /** Forgets every replay (tests: to make the next request ask Redis and MongoDB). */
  clear(): void {
    this.replays.clear();
    this.total = 0;
  }

  /** Keeps a result a request has just been matched to (same fingerprint), with that request as it was read when known. */
  keep(memoryKey: string, canonical: string, replay: Replay, expiresAt: number, sent?: SentRequest): void {
    if (expiresAt <= this.now()) return;
    const bytes = sizeOf(memoryKey, canonical, replay.body, sent);
    if (bytes > this.maxBytes) return;
    this.drop(memoryKey);
    while (this.total + bytes > this.maxBytes) this.drop(this.replays.keys().next().value as string);
    this.replays.set(memoryKey, { status: replay.status, body: replay.body, canonical, expiresAt, bytes, ...(sent ? { sent } : {}) });
    this.total += bytes;
  }

  /** The live result kept for this key, with the canonical request it answered. */
  get(memoryKey: string): KeptReplay | undefined {
    const kept = this.replays.get(memoryKey);
    if (!kept) return undefined;
    if (kept.expiresAt > this.now()) return kept;
    this.drop(memoryKey);
    return undefined;
  }

  get size(): number {
    return this.replays.size;
  }

  /** The bytes the kept results are counted at; never above the bound. */
  get bytes(): number {
    return this.total;
  }

  private drop(memoryKey: string): void {
    const kept = this.replays.get(memoryKey);
    if (!kept) return;
    this.replays.delete(memoryKey);
    this.total -= kept.bytes;
  }
}
