// A private redis-server for tests that stop, restart or flush their own Redis
// (outages, recovery). Started by scripts/lib/servers.mjs, as `npm test`'s own
// Redis is, on a free port of 127.0.0.1 with a temporary directory.
//
//   const redis = await startRedisServer({ persistent: true });
//   t.teardown(() => redis.dispose());
//   await redis.stop();     // clients now see connection errors
//   await redis.restart();  // same port (and data, when persistent)

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

import { writePidFile } from '#scripts/lib/pid-files.mjs';
import { redisCommand } from '#scripts/lib/probes.mjs';
import { startRedis, type RunningServer } from '#scripts/lib/servers.mjs';

export interface RedisServerOptions {
  /** Keep data across restart() (append-only file). Default false: nothing is written to disk. */
  persistent?: boolean;
  /** Milliseconds to wait for the server to answer PING. Default 20000. */
  startTimeoutMs?: number;
}

export interface RedisServer {
  /** `redis://127.0.0.1:PORT` (stays the same across restarts). */
  readonly url: string;
  readonly port: number;
  /** Temporary directory holding the data and `redis-server.log`. */
  readonly dir: string;
  /** True while the server process runs. */
  readonly running: boolean;
  /** Stops the server (SIGTERM, then SIGKILL after 5 s); the port and data stay reserved. */
  stop(): Promise<void>;
  /** Starts the server again on the same port (stopping it first if it runs). */
  restart(): Promise<void>;
  /** FLUSHALL. */
  flushAll(): Promise<void>;
  /** Stops the server for good and removes its directory. */
  dispose(): Promise<void>;
}

// Under the prefix of `npm test`'s throw-away stacks and with a pid file, so
// that `npm test` reaps a server whose test process was killed.
const TEMP_PREFIX = 'payments-test-stack-redis-';
const STOP_TIMEOUT_MS = 5000;

export async function startRedisServer(options: RedisServerOptions = {}): Promise<RedisServer> {
  const persistent = options.persistent ?? false;
  const timeoutMs = options.startTimeoutMs ?? 20_000;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), TEMP_PREFIX));

  async function launch(port?: number): Promise<RunningServer> {
    const server = await startRedis({ dir, persistent, port, timeoutMs });
    writePidFile(dir, [{ name: 'redis-server (test helper)', pid: server.pid, bin: server.bin }]);
    return server;
  }

  let current: RunningServer;
  try {
    current = await launch();
  } catch (error) {
    fs.rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  const { port, url } = current;
  let disposed = false;

  async function stop(): Promise<void> {
    await current.stop(STOP_TIMEOUT_MS);
  }

  async function restart(): Promise<void> {
    if (disposed) throw new Error('redis-server was disposed');
    await stop();
    // The port was ours; a just-closed listening socket can be re-bound at
    // once (redis sets SO_REUSEADDR), but retry briefly in case of a race.
    let lastError: unknown;
    for (let attempt = 0; attempt < 20; attempt++) {
      try {
        current = await launch(port);
        return;
      } catch (error) {
        lastError = error;
        await sleep(250);
      }
    }
    throw lastError;
  }

  return {
    url,
    port,
    dir,
    get running() {
      return current.running;
    },
    stop,
    restart,
    async flushAll() {
      const reply = await redisCommand(port, 'FLUSHALL', 2000);
      if (reply !== '+OK') throw new Error(`FLUSHALL: ${reply}`);
    },
    async dispose() {
      if (disposed) return;
      disposed = true;
      await stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
