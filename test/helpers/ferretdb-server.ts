/**
 * A private FerretDB for tests that stop and restart their MongoDB. Started by
 * scripts/lib/servers.mjs, as `npm test`'s own FerretDB is, on a free port with
 * a temporary data directory that survives restarts.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { writePidFile } from '#scripts/lib/pid-files.mjs';
import { startFerretDB, type RunningServer } from '#scripts/lib/servers.mjs';

export interface FerretDBServer {
  readonly url: string;
  stop(): Promise<void>;
  restart(): Promise<void>;
  /** SIGKILLs it (a crash) and starts it again `awayMs` later, on the same data and port. */
  crash(awayMs?: number): Promise<void>;
  dispose(): Promise<void>;
}

// Under the prefix of `npm test`'s throw-away stacks and with a pid file, so
// that `npm test` reaps a server whose test process was killed.
const TEMP_PREFIX = 'payments-test-stack-ferretdb-';
const START_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 5000;

export async function startFerretDBServer(): Promise<FerretDBServer> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), TEMP_PREFIX));

  async function launch(port?: number, bin?: string): Promise<RunningServer> {
    const server = await startFerretDB({ dir, port, bin, timeoutMs: START_TIMEOUT_MS });
    writePidFile(dir, [{ name: 'ferretdb (test helper)', pid: server.pid, bin: server.bin }]);
    return server;
  }

  let current: RunningServer;
  try {
    current = await launch();
  } catch (error) {
    fs.rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  const { port, bin, url } = current;

  async function stop(): Promise<void> {
    await current.stop(STOP_TIMEOUT_MS);
  }

  return {
    url,
    stop,
    restart: async () => {
      await stop();
      current = await launch(port, bin);
    },
    crash: async (awayMs = 0) => {
      await current.kill('SIGKILL');
      await new Promise((resolve) => setTimeout(resolve, awayMs));
      current = await launch(port, bin);
    },
    dispose: async () => {
      await stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
