// Types of pid-files.mjs for the TypeScript tests.

/** A process as the pid file records it. */
export interface RecordedProcess {
  name: string;
  pid: number | undefined;
  bin: string;
}

/**
 * Reaps the servers recorded in `dataDir` by a parent that no longer runs.
 * Throws when that parent still runs (the data dir is in use).
 */
export function reapStale(dataDir: string): Promise<boolean>;

/** Records `children` as the processes this process runs in `dataDir` (replacing the record). */
export function writePidFile(dataDir: string, children: readonly RecordedProcess[]): void;

/** Forgets the processes recorded in `dataDir` (after they were stopped). */
export function clearPidFile(dataDir: string): void;

/**
 * Adds a process to the pid file of `dataDir`, so that a later run stops it if
 * this one is killed. `arg`: a string its command line contains.
 */
export function recordChild(dataDir: string, child: RecordedProcess & { arg?: string }): void;

/** Removes throw-away stacks (`prefix*` dirs in the temp dir) of test runs that were killed. */
export function reapStaleTempStacks(prefix: string): Promise<void>;
