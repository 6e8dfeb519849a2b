/**
 * The api and worker processes of a chaos run (the bundles of dist/): started on
 * fixed ports, killed with SIGKILL and started again, their output appended to one
 * log file per slot and tallied by level and message, for the report; each line is
 * also offered to the fleet's line listener (the queue sampler counts stalled jobs).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { BUNDLES } from '#scripts/lib/build.mjs';
import { ROOT } from '../settings.js';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Log lines at warn level or above, by "level message (error)", over every process. */
export type LogTally = Map<string, number>;

const LEVELS: Record<number, string> = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'fatal' };

function tallyLine(tally: LogTally, line: string): void {
  let level = 'stderr';
  let key = line.slice(0, 120);
  if (line.startsWith('{')) {
    try {
      const entry = JSON.parse(line) as { level?: number; msg?: string; err?: unknown };
      level = LEVELS[entry.level ?? 0] ?? String(entry.level);
      if (level === 'info' || level === 'debug' || level === 'trace') return;
      const err = typeof entry.err === 'string' ? entry.err : (entry.err as { message?: string } | undefined)?.message;
      // Ids and numbers vary per line; the shape of the message is what counts.
      key = `${entry.msg ?? ''}${err ? `: ${err.replace(/\b[\w-]*\d[\w-]*\b/g, '#').slice(0, 100)}` : ''}`;
    } catch {
      // not JSON after all: counted as it is
    }
  }
  const name = `${level} ${key}`;
  tally.set(name, (tally.get(name) ?? 0) + 1);
}

/** One process slot (api 1, worker 2…): the process now running in it, and those before. */
export class Slot {
  private child: ChildProcess | null = null;
  private exitedPromise: Promise<void> = Promise.resolve();
  private readyPromise: Promise<number | null> = Promise.resolve(null);
  starts = 0;
  kills = 0;

  constructor(
    readonly name: string,
    private readonly entry: string,
    private readonly env: Record<string, string>,
    private readonly logFile: string,
    private readonly tally: LogTally,
    private readonly onLine: (line: string) => void,
    /** How the process says it is ready to work: a log line (`worker started`), or a URL that answers 200 (`/readyz`). */
    private readonly readiness: RegExp | string,
    private readonly dist: string,
    private readonly nodeArgs: string[] = [],
  ) {}

  /** Ms from the start of the current process until it logged its ready line; null if it died first. */
  ready(): Promise<number | null> {
    return this.readyPromise;
  }

  get running(): boolean {
    return this.child !== null;
  }

  /** The process now running in this slot, if any. */
  get pid(): number | null {
    return this.child?.pid ?? null;
  }

  start(): void {
    const child = spawn(process.execPath, [...this.nodeArgs, path.join(this.dist, this.entry)], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', ...this.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.starts++;
    const out = fs.createWriteStream(this.logFile, { flags: 'a' });
    let rest = '';
    const collect = (chunk: Buffer) => {
      out.write(chunk);
      const text = rest + chunk.toString('utf8');
      const lines = text.split('\n');
      rest = lines.pop() ?? '';
      for (const line of lines) {
        if (!line) continue;
        tallyLine(this.tally, line);
        this.onLine(line);
      }
    };
    child.stdout?.on('data', collect);
    child.stderr?.on('data', collect);
    const spawnedAt = Date.now();
    let exited = false;
    this.readyPromise = new Promise((resolve) => {
      child.once('exit', () => {
        exited = true;
        resolve(null);
      });
      const readiness = this.readiness;
      if (typeof readiness === 'string') {
        void (async () => {
          while (!exited) {
            const ok = await fetch(readiness, { signal: AbortSignal.timeout(1000) })
              .then(async (res) => (await res.arrayBuffer(), res.ok))
              .catch(() => false);
            if (ok) return resolve(Date.now() - spawnedAt);
            await sleep(100);
          }
        })();
        return;
      }
      const watch = (chunk: Buffer) => {
        if (!readiness.test(chunk.toString('utf8'))) return;
        child.stdout?.off('data', watch);
        resolve(Date.now() - spawnedAt);
      };
      child.stdout?.on('data', watch);
    });
    this.child = child;
    this.exitedPromise = new Promise((resolve) => {
      child.on('exit', () => {
        if (this.child === child) this.child = null;
        out.end();
        resolve();
      });
    });
  }

  /** SIGKILL, as a crash or an OOM kill would; resolves once the process is gone. */
  async kill(): Promise<void> {
    if (!this.child) return;
    this.kills++;
    this.child.kill('SIGKILL');
    await this.exitedPromise;
  }

  async stop(timeoutMs = 15_000): Promise<void> {
    const child = this.child;
    if (!child) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    await this.exitedPromise;
    clearTimeout(timer);
  }
}

export interface FleetOptions {
  apis: number;
  workers: number;
  apiPorts: number[];
  env: Record<string, string>;
  /** Node options put before the entry point (`--node-args`). */
  nodeArgs?: string[];
  /** The build to run: its bundles (bundle/api.mjs, bundle/worker.mjs), or in an older build without them, api/main.js and worker/main.js. */
  dist: string;
  logDir: string;
}

export class Fleet {
  readonly apis: Slot[];
  readonly workers: Slot[];
  readonly tally: LogTally = new Map();
  /** Called with every line any process logs. */
  onLine: (line: string) => void = () => undefined;

  constructor(readonly options: FleetOptions) {
    const entry = (bundle: string, compiled: string) => (fs.existsSync(path.join(options.dist, bundle)) ? bundle : compiled);
    const [api, worker] = [entry(path.relative('dist', BUNDLES.api), 'api/main.js'), entry(path.relative('dist', BUNDLES.worker), 'worker/main.js')];
    this.apis = options.apiPorts.map(
      (port, i) =>
        new Slot(
          `api${i + 1}`,
          api,
          { ...options.env, PORT: String(port) },
          path.join(options.logDir, `api${i + 1}.log`),
          this.tally,
          (line) => this.onLine(line),
          `http://127.0.0.1:${port}/readyz`,
          options.dist,
          options.nodeArgs,
        ),
    );
    this.workers = Array.from(
      { length: options.workers },
      (_, i) =>
        new Slot(`worker${i + 1}`, worker, options.env, path.join(options.logDir, `worker${i + 1}.log`), this.tally, (line) => this.onLine(line), /worker started/, options.dist, options.nodeArgs),
    );
  }

  get apiUrls(): string[] {
    return this.options.apiPorts.map((port) => `http://127.0.0.1:${port}`);
  }

  startAll(): void {
    for (const slot of [...this.apis, ...this.workers]) slot.start();
  }

  /** Waits until every api answers /readyz with 200. */
  async waitReady(timeoutMs = 120_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (const url of this.apiUrls) {
      for (;;) {
        const ok = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2000) })
          .then(async (res) => {
            await res.arrayBuffer();
            return res.ok;
          })
          .catch(() => false);
        if (ok) break;
        if (Date.now() > deadline) throw new Error(`${url} was not ready within ${timeoutMs / 1000} s (see the logs in ${this.options.logDir})`);
        await sleep(200);
      }
    }
  }

  private readonly crashing = new Map<Slot, Promise<void>>();

  /**
   * Kills the process of `slot` and starts a new one in its place at once. Crashes of
   * one slot follow one another: two at once would each start a process, and the
   * slot would lose track of one.
   */
  crash(slot: Slot): Promise<void> {
    const done = (this.crashing.get(slot) ?? Promise.resolve()).then(async () => {
      await slot.kill();
      slot.start();
    });
    this.crashing.set(slot, done);
    return done;
  }

  async stopAll(): Promise<void> {
    await Promise.all([...this.apis, ...this.workers].map((slot) => slot.stop()));
  }

  killAllNow(): void {
    for (const slot of [...this.apis, ...this.workers]) void slot.kill();
  }
}
