/**
 * Admission control for creates: a create whose job would wait in the queue longer
 * than its client waits for it (`CREATE_TIMEOUT_MS`) is refused at once, with 503
 * `service_unavailable` and `Retry-After`, instead of being accepted, timed out and
 * retried on top of the backlog. Under a fault that slows the workers, this keeps
 * the queue short and the retries spread out, so the service recovers as soon as
 * the fault ends (a retry storm would keep it down).
 *
 * The wait is measured cheaply, away from requests: every `intervalMs`, the age of
 * the oldest job waiting in the creates queue that has never been started (one
 * list read and a hash read per job, for the first `SAMPLE_JOBS` jobs in Redis). The
 * queue is first in, first out, so a job enqueued now waits about that long, and
 * longer if the queue is growing. A request only reads the last sample.
 *
 * Jobs that were started before are left out: a killed worker's jobs come back to
 * the head of the queue as stalled, and a failed one after its backoff, each with
 * the age of its first enqueue. Their age says nothing of the wait a new job would
 * see (they are few, and first to go); counted, one worker's death made the api
 * refuse every create for as long as its recovered jobs waited.
 *
 * Old jobs need not mean a long wait either: after the workers were down a while, the
 * oldest waiting job is old, but workers back at full speed may clear the queue in a
 * second. So a create is refused only while the queue would also not drain in time
 * at the rate it drains now: the jobs waiting (one more read) over the results heard
 * in the last `RATE_WINDOW_MS` (every api hears every job's result, results channel).
 * With no result heard, the age decides alone.
 */
import type { Queue } from 'bullmq';

/** How many of the oldest waiting jobs a sample reads, looking for one never started. */
const SAMPLE_JOBS = 32;

/** How far back the drain rate looks. */
const RATE_WINDOW_MS = 2000;

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
  /** Jobs waiting at the last sample. */
  private waitingCount = 0;
  /** When each result of the last RATE_WINDOW_MS was heard (epoch ms), oldest first. */
  private readonly finished: number[] = [];
  private timer: NodeJS.Timeout | null = null;
  private sampling = false;

  constructor(
    private readonly queue: Pick<Queue, 'getWaiting' | 'getWaitingCount'>,
    private readonly options: AdmissionOptions,
  ) {}

  /** A job of the queue finished (its result was heard): the drain rate counts it. */
  noteFinished(): void {
    this.finished.push(this.options.now());
    if (this.finished.length > 10_000) this.forgetBefore(this.options.now() - RATE_WINDOW_MS);
  }

  /** Jobs finished per second over the last RATE_WINDOW_MS. */
  drainPerS(): number {
    this.forgetBefore(this.options.now() - RATE_WINDOW_MS);
    return (this.finished.length * 1000) / RATE_WINDOW_MS;
  }

  private forgetBefore(ms: number): void {
    let old = 0;
    while (old < this.finished.length && (this.finished[old] as number) < ms) old++;
    if (old > 0) this.finished.splice(0, old);
  }

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
      const [waiting, count] = await Promise.all([this.queue.getWaiting(0, SAMPLE_JOBS - 1), this.queue.getWaitingCount()]);
      const oldest = waiting.find((job) => !(job.attemptsStarted > 0));
      this.oldestWaitMs = oldest ? Math.max(0, this.options.now() - oldest.timestamp) : 0;
      this.waitingCount = count;
    } catch {
      // Redis away: the enqueue itself answers 503 then; no stale refusal meanwhile.
      this.oldestWaitMs = 0;
    } finally {
      this.sampling = false;
    }
  }

  /** Null when a create may be accepted; else the seconds for `Retry-After`. */
  refusal(): number | null {
    const limit = this.options.limitMs;
    if (limit <= 0 || this.oldestWaitMs <= limit) return null;
    const rate = this.drainPerS();
    if (rate > 0 && (this.waitingCount / rate) * 1000 <= limit) return null;
    // Roughly when the backlog over the limit will have drained, if it drains as fast as it grew.
    return Math.min(10, Math.max(1, Math.ceil((this.oldestWaitMs - limit) / 1000)));
  }
}
