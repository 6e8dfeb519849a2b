import type { Redis } from 'ioredis';
import { resultsChannel, type CreateResultMessage } from '../common/jobs.js';

export interface Waiting {
  /** Resolves with the result, or null when `timeoutMs` passed first. */
  result(timeoutMs: number): Promise<CreateResultMessage | null>;
  cancel(): void;
}

/**
 * Waits for create results. Workers publish every result on one channel; each api
 * process holds one subscription and a map of the jobs its requests wait for. This
 * replaces a QueueEvents listener per job (a stream read per waiter) with one
 * message per result.
 */
export class ResultWaiter {
  private readonly waiters = new Map<string, Set<(message: CreateResultMessage) => void>>();
  private readonly hearers: Array<(message: CreateResultMessage) => void> = [];
  private readonly channel: string;

  constructor(private readonly subscriber: Redis, prefix: string) {
    this.channel = resultsChannel(prefix);
    subscriber.on('message', (channel: string, raw: string) => {
      if (channel !== this.channel) return;
      let message: CreateResultMessage;
      try {
        message = JSON.parse(raw) as CreateResultMessage;
      } catch {
        return;
      }
      for (const hear of this.hearers) hear(message);
      const set = this.waiters.get(message.jobId);
      if (!set) return;
      this.waiters.delete(message.jobId);
      for (const resolve of set) resolve(message);
    });
  }

  /** Is told every result published, whoever waits for it (the replay memory, idempotency/store.ts). */
  onEvery(hear: (message: CreateResultMessage) => void): void {
    this.hearers.push(hear);
  }

  async start(): Promise<void> {
    await this.subscriber.subscribe(this.channel);
  }

  /** Register before enqueueing, so a result that comes back at once is not missed. */
  register(jobId: string): Waiting {
    let resolveFn: ((m: CreateResultMessage | null) => void) | undefined;
    const arrived = new Promise<CreateResultMessage | null>((resolve) => {
      resolveFn = resolve;
    });
    const listener = (m: CreateResultMessage) => resolveFn?.(m);
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
