/**
 * Deliveries yield to creates. A create has a client waiting on it (for at most
 * `WRITE_TIMEOUT_MS`, then it retries), a delivery has nobody waiting: while creates
 * queue up, this worker takes fewer deliveries at once, so that its share of the CPU
 * goes to the backlog that clients time out on. Deliveries are only later, never
 * fewer: every one stays in the queue.
 *
 * Measured in the chaos run: after a storm of kills the workers had a few thousand
 * deliveries to catch up with while creates waited, and both went slowly.
 *
 * The signal is the number of creates waiting, one LLEN every `intervalMs`; BullMQ
 * applies a lower concurrency as the worker's active deliveries finish.
 */
import type { Queue } from 'bullmq';
import type { Logger } from '../../common/logger.js';

export interface YieldOptions {
  /** The creates queue, for its waiting count. */
  creates: Pick<Queue, 'getWaitingCount'>;
  /** The webhook worker, whose concurrency is set. */
  deliveries: { concurrency: number };
  /** Concurrency while creates do not queue up. */
  full: number;
  /** Concurrency while they do. */
  reduced: number;
  /** More creates waiting than this is a backlog; it is over at half as many. */
  backlog: number;
  intervalMs?: number;
  logger: Logger;
}

/** Starts sampling; returns a function that stops it. */
export function yieldToCreates(options: YieldOptions): () => void {
  let yielding = false;
  let sampling = false;
  const sample = async () => {
    if (sampling) return;
    sampling = true;
    try {
      const waiting = await options.creates.getWaitingCount();
      // Half the backlog to come back: a queue hovering at the threshold does not flap.
      const backlog = yielding ? waiting > Math.floor(options.backlog / 2) : waiting > options.backlog;
      if (backlog === yielding) return;
      yielding = backlog;
      options.deliveries.concurrency = backlog ? options.reduced : options.full;
      options.logger.info({ creates_waiting: waiting, delivery_concurrency: options.deliveries.concurrency }, backlog ? 'creates queue up: deliveries yield' : 'creates flow: deliveries at full concurrency');
    } catch {
      // Redis away: keep the current setting until it answers.
    } finally {
      sampling = false;
    }
  };
  const timer = setInterval(() => void sample(), options.intervalMs ?? 500);
  timer.unref();
  return () => clearInterval(timer);
}
