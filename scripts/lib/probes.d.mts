// Types of probes.mjs for the TypeScript tests.

/** A server process as spawnServer() (processes.mjs) returns it. */
export interface ProbedServer {
  readonly exitInfo: { code: number | null; signal: NodeJS.Signals | null; error?: Error } | null;
  stop(timeoutMs?: number): Promise<unknown>;
}

/**
 * Sends one inline command to the Redis on `port` over a fresh connection and
 * resolves with the first line of the reply (`+PONG`, `-LOADING ...`).
 */
export function redisCommand(port: number, line: string, timeoutMs?: number): Promise<string>;

/** Resolves once the Redis on `port` answers PING. */
export function redisPing(port: number): Promise<void>;

/** Resolves once the MongoDB-compatible server on `port` answers `{ping: 1}` with ok: 1. */
export function mongoPing(port: number): Promise<void>;

/**
 * Polls `ping` until it succeeds. Fails early with the tail of `logFile` when
 * the server exits, and stops it when `timeoutMs` runs out.
 */
export function waitReady(
  server: ProbedServer,
  ping: () => Promise<void>,
  options: { name: string; logFile: string; timeoutMs: number },
): Promise<void>;
