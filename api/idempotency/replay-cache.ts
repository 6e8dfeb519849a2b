/** A recorded answer to send again. */
export interface Replay {
  status: number;
  body: string;
}

interface KeptReplay extends Replay {
  canonical: string;
  expiresAt: number;
}

/**
 * Completed results an api process has read, kept in memory: a result never
 * changes until its key expires, so it can be replayed without asking Redis. The
 * oldest go first past the bound.
 */
export class ReplayCache {
  private readonly replays = new Map<string, KeptReplay>();

  constructor(
    private readonly now: () => number,
    private readonly maxEntries = 10_000,
  ) {}

  /** Keeps a result a request has just been matched to (same fingerprint). */
  keep(memoryKey: string, canonical: string, replay: Replay, expiresAt: number): void {
    if (expiresAt <= this.now()) return;
    if (this.replays.size >= this.maxEntries) this.replays.delete(this.replays.keys().next().value as string);
    this.replays.set(memoryKey, { status: replay.status, body: replay.body, canonical, expiresAt });
  }

  /** The live result kept for this key, with the canonical request it answered. */
  get(memoryKey: string): KeptReplay | undefined {
    const kept = this.replays.get(memoryKey);
    if (!kept) return undefined;
    if (kept.expiresAt > this.now()) return kept;
    this.replays.delete(memoryKey);
    return undefined;
  }

  get size(): number {
    return this.replays.size;
  }
}
