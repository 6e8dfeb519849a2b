/**
 * At most `limit` of a worker process's transition updates in flight at once. On
 * FerretDB (SQLite) every update scans its collection while it holds the database's
 * single write lock, so 64 jobs updating at once do not go faster than a few: they
 * queue inside SQLite until its busy timeout, fail with SQLITE_BUSY, and are
 * retried, and the retries add to the queue. Waiting here instead, in order, keeps
 * the lock's queue short. Reads and inserts do not pass through the gate.
 */
export class WriteGate {
  private active = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly limit: number) {}

  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.active >= this.limit) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.active++;
    try {
      return await work();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.active--;
    }
  }
}
