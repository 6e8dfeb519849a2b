// Types of servers.mjs for the TypeScript tests.

/** How a server process ended (its 'exit' event, or the 'error' of a failed spawn). */
export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
  error?: Error;
}

/** A started redis-server or FerretDB. */
export interface RunningServer {
  /** `redis://127.0.0.1:PORT` or `mongodb://127.0.0.1:PORT/`. */
  readonly url: string;
  readonly port: number;
  readonly pid: number | undefined;
  /** The executable that runs. */
  readonly bin: string;
  /** False once the process has exited. */
  readonly running: boolean;
  /** SIGTERM, then SIGKILL after `timeoutMs` (default 10 s); resolves once it has exited. */
  stop(timeoutMs?: number): Promise<ExitInfo>;
  /** Sends `signal` (SIGKILL: a crash) and resolves once it has exited. */
  kill(signal: NodeJS.Signals): Promise<ExitInfo>;
}

export interface ServerOptions {
  /** Data and log directory (created when missing). */
  dir: string;
  /** The executable. Default: findRedisServer() or findFerretDB() (binaries.mjs). */
  bin?: string;
  /** Listen on this port, tried once. Default: a free port (another one if it was taken meanwhile). */
  port?: number;
  /** How long to wait for the server to answer. Default 30 s (Redis), 60 s (FerretDB). */
  timeoutMs?: number;
}

export interface FerretDBOptions extends ServerOptions {
  /** Serve FerretDB's debug handler (Prometheus metrics at /debug/metrics) on this port. */
  debugPort?: number | null;
  /** Give every collection the `_id` index FerretDB's own queries can use (ferretdb-indexes.mjs). Default true. */
  idPathIndexes?: boolean;
}

export interface RedisOptions extends ServerOptions {
  /** Append-only file in `dir`. Default false: nothing is written to disk. */
  persistent?: boolean;
}

/** Starts redis-server on 127.0.0.1 (data and `redis-server.log` in `dir`). */
export function startRedis(options: RedisOptions): Promise<RunningServer>;

/** How long a FerretDB write waits for SQLite's lock before it fails. */
export const SQLITE_BUSY_TIMEOUT_MS: number;

/** Starts FerretDB on 127.0.0.1 (SQLite handler; data and `ferretdb.log` in `dir`). */
export function startFerretDB(options: FerretDBOptions): Promise<RunningServer>;

export interface StackOptions {
  dataDir: string;
  /** Redis keeps an append-only file (FerretDB always persists). Default false. */
  persistent?: boolean;
  /** False to skip Redis (its URL is then null). Default true. */
  redis?: boolean;
  /** False to skip FerretDB (its URL is then null). Default true. */
  mongo?: boolean;
}

export interface Stack {
  redisUrl: string | null;
  mongoUrl: string | null;
  redisBin: string | null;
  ferretBin: string | null;
  dataDir: string;
  /** Stops both servers and removes the pid file (once, however often it is called). */
  stop(): Promise<void>;
}

/** Starts Redis and FerretDB with data in `dataDir`, recorded in its pid file. */
export function startStack(options: StackOptions): Promise<Stack>;
