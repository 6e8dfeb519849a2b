/**
 * Admission control for creates: a create whose job would wait in the queue longer
 * than its client waits for it (`WRITE_TIMEOUT_MS`) is refused at once, with 503
 * `service_unavailable` and `Retry-After`, instead of being accepted, timed out and
 * retried on top of the backlog. Under a fault that slows the workers, this keeps
 * the queue short and the retries spread out, so the service recovers as soon as
 * the fault ends (a retry storm would keep it down).
 *
 * The wait is measured cheaply, away from requests: every `intervalMs`, the age of
 * the oldest job waiting in the writes queue that has never been started (one
 * list read and a hash read per job, for the first `SAMPLE_JOBS` jobs in Redis). The
 * queue is first in, first out, so a job enqueued now waits about that long, and
 * longer if the queue is growing. A request only reads the last sample.
 *
 * Fair across scopes: a create is refused only when its own (project, livemode)
 * has a job among the sampled ones that waited too long. One tenant's flood makes
 * that tenant's creates wait and be refused, not everyone's (security review H1). A
 * scope with no job in the backlog is admitted and waits its turn; if the backlog is
 * everyone's (the workers are slow), its jobs show in the next samples, and it is
 * refused too.
 *
 * Jobs that were started before are left out: a killed worker's jobs come back to
 * the head of the queue as stalled, and a failed one after its backoff, each with
 * the age of its first enqueue. Their age says nothing of the wait a new job would
 * see (they are few, and first to go); counted, one worker's death made the api
 * refuse every create for as long as its recovered jobs waited.
 */
import type { Queue } from 'bullmq';
import type { Scope } from '../common/jobs.js';

/** How many of the oldest waiting jobs a sample reads, looking for one never started. */
const SAMPLE_JOBS = 32;

export interface AdmissionOptions {
  /** Creates are refused while the oldest waiting job has waited longer than this; 0 admits everything. */
  limitMs: number;
  intervalMs?: number;
  /** Epoch ms. */
  now: () => number;
}

export class CreateAdmission {
  /** Age of the oldest waiting create at the last sample; 0 when none, or unknown. */
  private oldestWaitMs = 0;
  /** The scopes (`scopeOf`) with a sampled job that has waited longer than the limit. */
  private overdue = new Set<string>();
  private timer: NodeJS.Timeout | null = null;
  private sampling = false;

  constructor(
    private readonly queue: Pick<Queue, 'getWaiting'>,
    private readonly options: AdmissionOptions,
  ) {}

  start(): void {
    if (this.options.limitMs <= 0 || this.timer) return;
    this.timer = setInterval(() => void this.sample(), this.options.intervalMs ?? 500);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** Takes a sample now (also what the timer does). */
  async sample(): Promise<void> {
    if (this.sampling) return;
    this.sampling = true;
    try {
      const waiting = await this.queue.getWaiting(0, SAMPLE_JOBS - 1);
      const fresh = waiting.filter((job) => !(job.attemptsStarted > 0));
      const now = this.options.now();
      const oldest = fresh[0];
      this.oldestWaitMs = oldest ? Math.max(0, now - oldest.timestamp) : 0;
      const overdue = new Set<string>();
      for (const job of fresh) {
        if (now - job.timestamp <= this.options.limitMs) continue;
        const data = job.data as Partial<Scope> | undefined;
        if (data && typeof data.project === 'string') overdue.add(scopeOf({ project: data.project, livemode: data.livemode === true }));
      }
      this.overdue = overdue;
    } catch {
      // Redis away: the enqueue itself answers 503 then; no stale refusal meanwhile.
      this.oldestWaitMs = 0;
      this.overdue = new Set();
    } finally {
      this.sampling = false;
    }
  }

  /**
   * Null when a create of `scope` may be accepted; else the seconds for `Retry-After`.
   * Without a scope, whether any create would be refused.
   */
  refusal(scope?: Scope): number | null {
    const limit = this.options.limitMs;
    if (limit <= 0 || this.oldestWaitMs <= limit) return null;
    if (scope && !this.overdue.has(scopeOf(scope))) return null;
    // Roughly when the backlog over the limit will have drained, if it drains as fast as it grew.
    return Math.min(10, Math.max(1, Math.ceil((this.oldestWaitMs - limit) / 1000)));
  }
}

function scopeOf(scope: Scope): string {
  return `${scope.livemode ? 'live' : 'test'}:${scope.project}`;
}
