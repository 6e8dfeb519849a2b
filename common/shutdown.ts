import type { Logger } from './logger.js';

export type ShutdownStep = [name: string, run: () => Promise<unknown>];

/** Runs every step in order, each on its own: one failing does not skip the rest. */
export async function runShutdownSteps(steps: ShutdownStep[], logger: Logger): Promise<void> {
  for (const [name, run] of steps) {
    try {
      await run();
    } catch (err) {
      logger.warn({ step: name, err: (err as Error).message }, 'shutdown step failed');
    }
  }
}
