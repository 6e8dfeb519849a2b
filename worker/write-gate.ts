/**
 * At most `limit` of a worker process's writes to MongoDB in flight at once, in
 * order. The widths come from config (`WORKER_WRITES_IN_FLIGHT`,
 * `WORKER_TRANSITION_WRITES_IN_FLIGHT`), with defaults from the store profile
 * (common/store-profile.ts). On a store with a single writer (the local stack's,
 * on SQLite: docs/storage.md) every insert waits for the write lock, and every
 * update scans its collection while it holds it. 64 jobs writing at once do not go
 * faster than a few: they queue inside SQLite, whose busy handler is not first come
 * first served, until its busy timeout, then fail with SQLITE_BUSY and are retried,
 * and the retries add to the queue. Waiting here instead keeps the lock's queue
 * short, and batched inserts grow while they wait (group-commit.ts), so the writer
 * commits more documents per turn. On MongoDB the gate is only a bound.
 *
 * Two lanes: inserts of new objects (`first`) pass before transition updates, so
 * that a backlog of lifecycle work (each update a scan on a store that uses no
 * index) does not hold back the creates whose clients are waiting.
 */
export interface Gate {
  run<T>(work: () => Promise<T>, lane?: 'first' | 'then'): Promise<T>;
}

/**
 * Work that passes `narrow` before `wide`: at most `narrow`'s limit of it holds
 * slots of `wide` at once (transition updates, which may wait out a locked database
 * in place, never take every slot from the inserts). Past `narrow`, it waits in
 * `wide`'s first lane, in turn with the inserts: `narrow` already keeps the inserts'
 * share, and in the second lane a steady stream of insert batches held the one
 * transition slot for 33–240 ms per update in the chaos run (docs/faults.md).
 */
export function through(narrow: Gate, wide: Gate): Gate {
  return { run: (work, lane) => narrow.run(() => wide.run(work, 'first'), lane) };
}

export class WriteGate implements Gate {
  private active = 0;
  private readonly waiting: { first: Array<() => void>; then: Array<() => void> } = { first: [], then: [] };

  constructor(private readonly limit: number) {}

  async run<T>(work: () => Promise<T>, lane: 'first' | 'then' = 'then'): Promise<T> {
    if (this.active >= this.limit) await new Promise<void>((resolve) => this.waiting[lane].push(resolve));
    else this.active++;
    try {
      return await work();
    } finally {
      const next = this.waiting.first.shift() ?? this.waiting.then.shift();
      if (next) next();
      else this.active--;
    }
  }
}
