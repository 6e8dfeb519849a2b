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

/** Calls `stop` on the first SIGTERM or SIGINT; later signals are ignored while it runs. */
export function stopOnSignals(stop: (signal: NodeJS.Signals) => Promise<void>): void {
  let stopping = false;
  const once = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    void stop(signal);
  };
  process.on('SIGTERM', once);
  process.on('SIGINT', once);
}

/** Runs a process's `main`; a failure to start is one line on stderr and exit code 1. */
export function runEntryPoint(name: string, main: () => Promise<void>): void {
  main().catch((err: unknown) => {
    process.stderr.write(`${name} failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
