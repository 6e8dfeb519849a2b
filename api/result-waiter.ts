import type { Redis } from 'ioredis';
import { resultsChannel, type WriteResultMessage } from '../common/jobs.js';

export interface Waiting {
  /** Resolves with the result, or null when `timeoutMs` passed first. */
  result(timeoutMs: number): Promise<WriteResultMessage | null>;
  cancel(): void;
}

/**
 * Waits for create results. Workers publish every result on one channel; each api
 * process holds one subscription and a map of the jobs its requests wait for. This
 * replaces a QueueEvents listener per job (a stream read per waiter) with one
 * message per result.
 *
 * Pub/sub keeps nothing: a result published while the subscription was down (Redis
 * restarted, or failed over) never arrives. So each time the subscription is ready
 * again, every waiter with a `recheck` runs it: it looks for the result where the
 * worker also keeps it, and enqueues its job again if Redis lost it (a restart from
 * an older snapshot). Without this, each of those requests waited out its whole
 * timeout, and its client retried only then.
 */
/** Looks again for a result that may have been missed; null when there is none yet. */
export type Recheck = () => Promise<WriteResultMessage | null>;

interface Listener {
  resolve: (message: WriteResultMessage) => void;
  recheck?: Recheck;
}

/** Told every result published; `wants` says, before a sealed body is opened, whether it would use it. */
interface Hearer {
  hear: (message: WriteResultMessage) => void;
  wants: (message: Omit<WriteResultMessage, 'body'>) => boolean;
}

/** A recheck that fails (Redis not quite back) is tried again this many times, this far apart. */
const RECHECK_TRIES = 5;
const RECHECK_RETRY_MS = 500;

export class ResultWaiter {
  private readonly waiters = new Map<string, Set<Listener>>();
  private readonly hearers: Hearer[] = [];
  private readonly channel: string;

  /**
   * `open`: opens an answer the worker sealed (every answer is:
   * worker/processors/create.ts `publishResult`). Only an answer this process waits
   * for, or one a hearer wants, is opened: every api hears every answer. Without
   * `open`, or when it fails, a sealed answer is dropped: its waiters time out, and a
   * retry is answered from the key's record in MongoDB.
   */
  constructor(
    private readonly subscriber: Redis,
    prefix: string,
    private readonly open?: (jobId: string, sealed: string) => Promise<string>,
  ) {
    this.channel = resultsChannel(prefix);
    subscriber.on('message', (channel: string, raw: string) => {
      if (channel !== this.channel) return;
      let message: WriteResultMessage;
      try {
        message = JSON.parse(raw) as WriteResultMessage;
      } catch {
        return;
      }
      const { sealed, ...plain } = message;
      if (!sealed) return this.deliver(message);
      if (!this.waiters.has(message.jobId) && !this.hearers.some((h) => h.wants(plain))) return;
      this.open?.(message.jobId, message.body).then(
        (body) => this.deliver({ ...plain, body }),
        () => undefined,
      );
    });
    subscriber.on('ready', () => void this.recheckAll());
  }

  private deliver(message: WriteResultMessage): void {
    for (const { hear } of this.hearers) hear(message);
    const set = this.waiters.get(message.jobId);
    if (!set) return;
    this.waiters.delete(message.jobId);
    for (const listener of set) listener.resolve(message);
  }

  /** Runs every waiter's recheck; one that finds its result gets it. */
  async recheckAll(): Promise<void> {
    const listeners = [...this.waiters.values()].flatMap((set) => [...set]);
    await Promise.all(
      listeners.map(async (listener) => {
        if (!listener.recheck) return;
        for (let tries = 1; tries <= RECHECK_TRIES; tries++) {
          try {
            const message = await listener.recheck();
            if (message) listener.resolve(message);
            return;
          } catch {
            await new Promise((resolve) => setTimeout(resolve, RECHECK_RETRY_MS));
          }
        }
      }),
    );
  }

  /**
   * Is told every result published, whoever waits for it (the replay memory,
   * idempotency/store.ts); of the sealed ones, those `wants` asks for (by default all).
   */
  onEvery(hear: (message: WriteResultMessage) => void, wants: (message: Omit<WriteResultMessage, 'body'>) => boolean = () => true): void {
    this.hearers.push({ hear, wants });
  }

  async start(): Promise<void> {
    await this.subscriber.subscribe(this.channel);
  }

  /**
   * Register before enqueueing, so a result that comes back at once is not missed.
   * `recheck` is run each time the subscription comes back (see above).
   */
  register(jobId: string, recheck?: Recheck): Waiting {
    let resolveFn: ((m: WriteResultMessage | null) => void) | undefined;
    const arrived = new Promise<WriteResultMessage | null>((resolve) => {
      resolveFn = resolve;
    });
    const listener: Listener = { resolve: (m: WriteResultMessage) => resolveFn?.(m), ...(recheck ? { recheck } : {}) };
    let set = this.waiters.get(jobId);
    if (!set) {
      set = new Set();
      this.waiters.set(jobId, set);
    }
    set.add(listener);
    const cancel = () => {
      const current = this.waiters.get(jobId);
      current?.delete(listener);
      if (current && current.size === 0) this.waiters.delete(jobId);
    };
    return {
      cancel,
      result: async (timeoutMs) => {
        let timer: NodeJS.Timeout | undefined;
        const timeout = new Promise<null>((resolve) => {
          timer = setTimeout(() => resolve(null), timeoutMs);
        });
        try {
          return await Promise.race([arrived, timeout]);
        } finally {
          clearTimeout(timer);
          cancel();
        }
      },
    };
  }

  async close(): Promise<void> {
    this.waiters.clear();
    await this.subscriber.quit().catch(() => this.subscriber.disconnect());
  }
}
