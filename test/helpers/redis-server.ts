// A private redis-server for tests that stop, restart or flush their own Redis
// (outages, recovery). Uses $REDIS_SERVER_BIN (set by `npm test`) or
// `redis-server` from PATH, a free port of 127.0.0.1 and a temporary directory.
//
//   const redis = await startRedisServer({ persistent: true });
//   t.teardown(() => redis.dispose());
//   await redis.stop();     // clients now see connection errors
//   await redis.restart();  // same port (and data, when persistent)

import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

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

// Same directory prefix and pid file format as scripts/stack.mjs, so that
// `npm test` reaps a server whose test process was killed.
const TEMP_PREFIX = 'payments-test-stack-redis-';
const PID_FILE = 'stack.pid.json';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** Sends one inline command and resolves with the first reply line. */
function command(port: number, line: string, timeoutMs = 2000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    let buffer = '';
    const timer = setTimeout(() => finish(new Error(`redis ${line}: timeout`)), timeoutMs);
    function finish(error: Error | null, reply?: string): void {
      clearTimeout(timer);
      socket.destroy();
      if (error) reject(error);
      else resolve(reply ?? '');
    }
    socket.setEncoding('utf8');
    socket.on('connect', () => socket.write(`${line}\r\n`));
    socket.on('data', (chunk: string) => {
      buffer += chunk;
      const end = buffer.indexOf('\r\n');
      if (end >= 0) finish(null, buffer.slice(0, end));
    });
    socket.on('error', (error) => finish(error));
    socket.on('close', () => finish(new Error(`redis ${line}: connection closed`)));
  });
}

function tail(file: string, lines = 15): string {
  try {
    return fs.readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}

const live = new Set<ChildProcess>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const child of live) {
      try {
        child.kill('SIGKILL');
      } catch {
        // gone
      }
    }
  });
}

export async function startRedisServer(options: RedisServerOptions = {}): Promise<RedisServer> {
  const persistent = options.persistent ?? false;
  const startTimeoutMs = options.startTimeoutMs ?? 20_000;
  const bin = process.env.REDIS_SERVER_BIN || 'redis-server';
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), TEMP_PREFIX));
  const logFile = path.join(dir, 'redis-server.log');
  let port = await freePort();
  let child: ChildProcess | null = null;
  let exited: Promise<void> = Promise.resolve();
  let disposed = false;

  installExitHook();

  function writePidFile(pid: number | undefined): void {
    const record = {
      parent: process.pid,
      parentBin: process.execPath,
      parentArg: process.argv[1],
      children: pid === undefined ? [] : [{ name: 'redis-server (test helper)', pid, bin }],
    };
    fs.writeFileSync(path.join(dir, PID_FILE), `${JSON.stringify(record)}\n`);
  }

  async function launch(): Promise<void> {
    const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--daemonize', 'no'];
    if (persistent) args.push('--appendonly', 'yes');
    else args.push('--save', '', '--appendonly', 'no');
    const fd = fs.openSync(logFile, 'a');
    let proc: ChildProcess;
    try {
      proc = spawn(bin, args, { cwd: dir, stdio: ['ignore', fd, fd] });
    } finally {
      fs.closeSync(fd);
    }
    child = proc;
    live.add(proc);
    const state: { done: boolean; failure: Error | null } = { done: false, failure: null };
    exited = new Promise<void>((resolve) => {
      const gone = (failure: Error | null) => {
        state.done = true;
        state.failure = failure;
        live.delete(proc);
        if (child === proc) child = null;
        resolve();
      };
      proc.on('exit', () => gone(null));
      proc.on('error', (error) => gone(error));
    });
    writePidFile(proc.pid);

    const deadline = Date.now() + startTimeoutMs;
    while (Date.now() < deadline) {
      if (state.done) {
        const reason = state.failure?.message ?? `exited, log:\n${tail(logFile)}`;
        throw new Error(`redis-server (${bin}) on port ${port} ${reason}`);
      }
      try {
        if ((await command(port, 'PING', 1000)) === '+PONG') return;
      } catch {
        // not listening yet
      }
      await sleep(50);
    }
    await stop();
    throw new Error(`redis-server on port ${port} did not answer PING within ${startTimeoutMs} ms`);
  }

  async function stop(): Promise<void> {
    const proc = child;
    if (proc === null) return;
    proc.kill('SIGTERM');
    const timer = setTimeout(() => proc.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  }

  async function restart(): Promise<void> {
    if (disposed) throw new Error('redis-server was disposed');
    await stop();
    // The port was ours; a just-closed listening socket can be re-bound at
    // once (redis sets SO_REUSEADDR), but retry briefly in case of a race.
    let lastError: unknown;
    for (let attempt = 0; attempt < 20; attempt++) {
      try {
        await launch();
        return;
      } catch (error) {
        lastError = error;
        await sleep(250);
      }
    }
    throw lastError;
  }

  // First start: if the free port was taken in the meantime, pick another.
  for (let attempt = 0; ; attempt++) {
    try {
      await launch();
      break;
    } catch (error) {
      if (attempt >= 2) {
        fs.rmSync(dir, { recursive: true, force: true });
        throw error;
      }
      port = await freePort();
    }
  }

  return {
    get url() {
      return `redis://127.0.0.1:${port}`;
    },
    get port() {
      return port;
    },
    dir,
    get running() {
      return child !== null;
    },
    stop,
    restart,
    async flushAll() {
      const reply = await command(port, 'FLUSHALL');
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
