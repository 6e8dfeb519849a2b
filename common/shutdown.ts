import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
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

/**
 * Runs a process's `main`; a failure to start is one line on stderr and exit code 1.
 * `moduleUrl` is the entry point's `import.meta.url`: when the process was started
 * from another file (a test that imports `startWorker`), `main` does not run.
 */
export function runEntryPoint(name: string, moduleUrl: string, main: () => Promise<void>): void {
  if (startedFromAnotherFile(moduleUrl)) return;
  main().catch((err: unknown) => {
    process.stderr.write(`${name} failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}

function startedFromAnotherFile(moduleUrl: string): boolean {
  const entry = process.argv[1];
  if (!entry) return false;
  try {
    return realpathSync(entry) !== realpathSync(fileURLToPath(moduleUrl));
  } catch {
    // Not a file we can resolve (e.g. `node dist/worker/main`): run, as before.
    return false;
  }
}
