/**
 * The servers of a chaos run: a FerretDB the run can crash and start again on the
 * same data, and a Redis the run can restart and roll back, both from
 * scripts/stack.mjs (the throw-away stack of `npm test`). Redis keeps an append-only
 * file, as in production, so a plain restart loses nothing; a rollback replaces its
 * data with an older snapshot, as a failover to a lagging replica does. FerretDB
 * writes through SQLite, so a crash loses nothing that was acknowledged.
 */
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import { ROOT } from '../settings.js';

interface ServerHandle {
  url: string;
  port: number;
  pid: number;
  stop(): Promise<unknown>;
  kill(signal: NodeJS.Signals): Promise<unknown>;
}

/** The part of scripts/stack.mjs used here (plain JavaScript, typed by hand). */
interface StackModule {
  findRedisServer(): string;
  startRedis(options: { dir: string; persistent?: boolean; port?: number | null; bin?: string }): Promise<ServerHandle>;
  startFerretDB(options: { dir: string; debugPort?: number | null; port?: number }): Promise<ServerHandle>;
  reapStaleTempStacks(prefix: string): Promise<void>;
}

export async function loadStack(): Promise<StackModule> {
  return (await import(pathToFileURL(path.join(ROOT, 'scripts', 'stack.mjs')).href)) as StackModule;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A local redis-server on a fixed port, restartable, with snapshots to roll back to. */
export class ControlledRedis {
  private snapshotFile: string | null = null;
  /** Epoch ms when the last snapshot was taken (its BGSAVE began). */
  snapshotMs: number | null = null;

  private constructor(
    private readonly stack: StackModule,
    private readonly dir: string,
    private readonly bin: string,
    private handle: ServerHandle,
  ) {}

  static async start(stack: StackModule, dir: string): Promise<ControlledRedis> {
    const bin = stack.findRedisServer();
    const handle = await stack.startRedis({ dir, persistent: true, bin });
    const redis = new ControlledRedis(stack, dir, bin, handle);
    await redis.configure();
    return redis;
  }

  /**
   * Append-only persistence alone, as production setups that rely on it run: no RDB
   * save points, so a restart does not write a full snapshot on the way down first.
   */
  private async configure(): Promise<void> {
    const client = new Redis(this.url, { maxRetriesPerRequest: 1 });
    try {
      await client.config('SET', 'save', '');
      await client.config('SET', 'appendonly', 'yes');
    } finally {
      client.disconnect();
    }
  }

  get url(): string {
    return this.handle.url;
  }

  get pid(): number {
    return this.handle.pid;
  }

  /** A clean restart: SIGTERM (Redis writes its append-only file), then start again on the same port. */
  async restart(): Promise<void> {
    await this.handle.stop();
    this.handle = await this.startOnPort(true);
    await this.configure();
  }

  /** Saves the current data set (BGSAVE) to a file the next `rollback` restores. */
  async snapshot(): Promise<void> {
    const client = new Redis(this.url, { maxRetriesPerRequest: 1, lazyConnect: true });
    try {
      await client.connect();
      const saves = (info: string) => Number(/rdb_saves:(\d+)/.exec(info)?.[1] ?? NaN);
      const before = saves(await client.info('persistence'));
      // SCHEDULE: if an append-only rewrite is running, the save follows it.
      const reply = String(await client.call('BGSAVE', 'SCHEDULE'));
      const startedMs = Date.now();
      const deadline = Date.now() + 30_000;
      for (;;) {
        const info = await client.info('persistence');
        if (saves(info) > before && /rdb_bgsave_in_progress:0/.test(info)) {
          if (!/rdb_last_bgsave_status:ok/.test(info)) throw new Error('BGSAVE failed');
          // A scheduled save began later than asked, at the latest when it finished.
          this.snapshotMs = /scheduled/i.test(reply) ? Date.now() : startedMs;
          break;
        }
        if (Date.now() > deadline) throw new Error('BGSAVE did not finish within 30 s');
        await sleep(20);
      }
    } finally {
      client.disconnect();
    }
    this.snapshotFile = path.join(this.dir, 'snapshot.rdb');
    fs.copyFileSync(path.join(this.dir, 'dump.rdb'), this.snapshotFile);
  }

  /**
   * Kills Redis (SIGKILL, a crash) and starts it again on the same port from the
   * last snapshot: whatever was written since is gone. Append-only persistence is
   * then switched on again, so a later restart keeps the data.
   */
  async rollback(): Promise<void> {
    if (!this.snapshotFile) throw new Error('rollback without a snapshot');
    await this.handle.kill('SIGKILL');
    fs.rmSync(path.join(this.dir, 'appendonlydir'), { recursive: true, force: true });
    fs.copyFileSync(this.snapshotFile, path.join(this.dir, 'dump.rdb'));
    // With append-only on, Redis would start from the (now missing) AOF and ignore the RDB.
    this.handle = await this.startOnPort(false);
    await this.configure();
  }

  async stop(): Promise<void> {
    await this.handle.stop();
  }

  private async startOnPort(persistent: boolean): Promise<ServerHandle> {
    // The port was just released; retry briefly if the kernel still holds it.
    let lastError: unknown;
    for (let attempt = 0; attempt < 20; attempt++) {
      try {
        return await this.stack.startRedis({ dir: this.dir, persistent, port: this.handle.port, bin: this.bin });
      } catch (err) {
        lastError = err;
        await sleep(250);
      }
    }
    throw lastError;
  }
}

/**
 * The run's FerretDB: its command counters (over its restarts), and a crash
 * (SIGKILL) followed by a start on the same data directory, port and debug port.
 */
export class ControlledFerretDB {
  /** The counters read just before each crash: a new process counts from zero. */
  private counted: Record<string, number> = {};

  private constructor(
    private readonly stack: StackModule,
    private readonly dir: string,
    private readonly debugPort: number,
    private handle: ServerHandle,
  ) {}

  static async start(stack: StackModule, dir: string, debugPort: number): Promise<ControlledFerretDB> {
    return new ControlledFerretDB(stack, dir, debugPort, await stack.startFerretDB({ dir, debugPort }));
  }

  get url(): string {
    return this.handle.url;
  }

  get pid(): number {
    return this.handle.pid;
  }

  /** Commands sent to FerretDB since it was first started, by name. */
  async commandCounts(): Promise<Record<string, number>> {
    return sumCounts(this.counted, await ferretCommandCounts(`http://127.0.0.1:${this.debugPort}`));
  }

  /** SIGKILL, as a crash or an OOM kill would; then, `downS` seconds later, a start on the same data and port. */
  async crashAndRestart(downS: number): Promise<void> {
    this.counted = await this.commandCounts().catch(() => this.counted);
    await this.handle.kill('SIGKILL');
    await sleep(downS * 1000);
    // The port was just released; retry briefly if the kernel still holds it.
    let lastError: unknown;
    for (let attempt = 0; attempt < 20; attempt++) {
      try {
        this.handle = await this.stack.startFerretDB({ dir: this.dir, debugPort: this.debugPort, port: this.handle.port });
        return;
      } catch (err) {
        lastError = err;
        await sleep(250);
      }
    }
    throw lastError;
  }

  async stop(): Promise<void> {
    await this.handle.stop();
  }
}

function sumCounts(a: Record<string, number>, b: Record<string, number>): Record<string, number> {
  const out = { ...a };
  for (const [command, count] of Object.entries(b)) out[command] = (out[command] ?? 0) + count;
  return out;
}

/** FerretDB's count of commands it was sent, by command name (from its debug handler). */
export async function ferretCommandCounts(debugUrl: string): Promise<Record<string, number>> {
  const text = await fetch(`${debugUrl}/debug/metrics`, { signal: AbortSignal.timeout(5000) }).then((res) => res.text());
  const counts: Record<string, number> = {};
  for (const match of text.matchAll(/^ferretdb_client_requests_total\{[^}]*command="([^"]+)"[^}]*\} (\S+)$/gm)) {
    counts[match[1] as string] = (counts[match[1] as string] ?? 0) + Number(match[2]);
  }
  return counts;
}

/** What was sent between two readings. */
export function countsSince(before: Record<string, number>, after: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [command, count] of Object.entries(after)) {
    const delta = count - (before[command] ?? 0);
    if (delta > 0) out[command] = delta;
  }
  return out;
}
