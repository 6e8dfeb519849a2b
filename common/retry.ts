/**
 * Backoff for infrastructure faults (a lost connection, a locked database): doubling
 * delays, capped, with jitter, so that processes that failed together do not retry
 * together and a fault is not turned into a synchronised burst of retries.
 */
import { isInfrastructureError } from './infra-errors.js';

export interface BackoffOptions {
  /** The delay after the first failure, before jitter. */
  baseMs: number;
  capMs: number;
  /** In [0, 1); default Math.random. */
  random?: () => number;
}

/**
 * The delay after `failures` failures (1 = the first): `baseMs · 2^(failures−1)`,
 * capped at `capMs`, then drawn uniformly from its upper half ("equal jitter"), so a
 * retry never comes sooner than half the schedule, and never in step with others.
 */
export function jitteredBackoff(failures: number, options: BackoffOptions): number {
  const ceiling = Math.min(options.baseMs * 2 ** Math.max(0, failures - 1), options.capMs);
  const random = options.random ?? Math.random;
  return Math.round(ceiling / 2 + (ceiling / 2) * random());
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Runs `work`, retrying it after an infrastructure fault (see `isInfrastructureError`)
 * up to `tries` times in all, with jittered backoff; any other error, or the last
 * fault, is thrown. For a step whose failure would otherwise redo more than itself
 * (a webhook delivery whose attempt could not be recorded would be sent again).
 */
export async function retryInfrastructure<T>(work: () => Promise<T>, options: BackoffOptions & { tries: number }): Promise<T> {
  for (let failures = 1; ; failures++) {
    try {
      return await work();
    } catch (err) {
      if (failures >= options.tries || !isInfrastructureError(err)) throw err;
      await sleep(jitteredBackoff(failures, options));
    }
  }
}
