import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Logger } from './logger.js';

export type ShutdownStep = [name: string, run: () => Promise<unknown>];

/** Runs every step in order, each on its own: one failing does not skip the rest. */
/** How long Redis must stay unreachable before a step that waits on it is abandoned. */
export const ABANDON_AFTER_MS = 3000;
const POLL_MS = 250;

/**
 * Runs the steps in order, each on its own: a step that fails is logged and the next
 * runs. `unreachable`: whether what the steps wait on (Redis) is out of reach now.
 * While it is, a step cannot end (a queue's close, a worker's wait for its active
 * jobs: those jobs cannot finish either, and their locks expire so that another
 * process takes them again); once it has been for ABANDON_AFTER_MS, the step is
 * abandoned and the next runs, so a SIGTERM always ends the process.
 */
export async function runShutdownSteps(steps: ShutdownStep[], logger: Logger, unreachable: () => boolean = () => false): Promise<void> {
  // Over all the steps: once Redis has been out of reach long enough, each later step
  // that finds it still so is abandoned at once.
  let downSince: number | null = null;
  const givenUp = () => {
    if (!unreachable()) {
      downSince = null;
      return false;
    }
    downSince ??= Date.now();
    return Date.now() - downSince >= ABANDON_AFTER_MS;
  };
  for (const [name, run] of steps) {
    let timer: NodeJS.Timeout | undefined;
    const abandoned = new Promise<'abandoned'>((resolve) => {
      if (givenUp()) resolve('abandoned');
      timer = setInterval(() => {
        if (givenUp()) resolve('abandoned');
      }, POLL_MS);
    });
    try {
      const outcome = await Promise.race([run(), abandoned]);
      if (outcome === 'abandoned') logger.warn({ step: name }, 'shutdown step abandoned: Redis unreachable');
    } catch (err) {
      logger.warn({ step: name, err: (err as Error).message }, 'shutdown step failed');
    } finally {
      clearInterval(timer);
    }
  }
}

/** A Redis client's end: QUIT when it is connected, else a disconnect (QUIT would wait for a connection). */
export async function closeRedis(client: { status: string; quit(): Promise<unknown>; disconnect(): void }): Promise<void> {
  if (client.status === 'ready') await client.quit();
  else client.disconnect();
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
