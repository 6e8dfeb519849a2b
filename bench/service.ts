/**
 * The processes under test: the real api and worker (compiled, from dist/) and the
 * baseline Koa server, each started on a free port with a fresh database and queue
 * prefix, and supervised so that none outlives the benchmark.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Queue } from 'bullmq';
import { parseClusterNodes } from '../common/config.js';
import { queueLayout, queueNames } from '../common/queue-shards.js';
import { createRedis } from '../common/redis.js';
import type { MongoClient } from 'mongodb';
import { BUNDLES } from '#scripts/lib/build.mjs';
import { freePort } from '#scripts/lib/net.mjs';
import { progress } from './progress.js';
import { PROJECT, ROOT, settings } from './settings.js';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * `BENCH_NODE_ARGS`: Node options for every process under test, split on spaces, for
 * example `--cpu-prof --cpu-prof-dir=/tmp/prof` to profile each (a profile is written
 * when the process exits, which the bench's stop does gracefully).
 */
const NODE_ARGS = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);

/** A child process of the benchmark, with the tail of its output kept for errors. */
export class Child {
  readonly lines: string[] = [];
  readonly exited: Promise<number | null>;
  private exitCode: number | null | undefined;
  private readonly child: ChildProcess;

  constructor(
    readonly name: string,
    entry: string,
    env: Record<string, string>,
  ) {
    this.child = spawn(process.execPath, [...NODE_ARGS, path.join(ROOT, entry)], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    live.add(this);
    const collect = (chunk: Buffer) => {
      for (const line of chunk.toString('utf8').split('\n')) {
        if (!line) continue;
        this.lines.push(line);
        if (this.lines.length > 200) this.lines.shift();
      }
    };
    this.child.stdout?.on('data', collect);
    this.child.stderr?.on('data', collect);
    this.exited = new Promise((resolve) => {
      this.child.on('exit', (code) => {
        this.exitCode = code;
        live.delete(this);
        resolve(code);
      });
    });
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  get running(): boolean {
    return this.exitCode === undefined;
  }

  kill(signal: NodeJS.Signals): void {
    if (this.running) this.child.kill(signal);
  }

  /** Asks the process to stop (SIGTERM), kills it after `timeoutMs`, and waits for its exit. */
  async stop(timeoutMs = 15_000): Promise<void> {
    this.kill('SIGTERM');
    const timer = setTimeout(() => this.kill('SIGKILL'), timeoutMs);
    await this.exited;
    clearTimeout(timer);
  }

  /** The last `n` lines the process printed, on stdout or stderr. */
  tail(n = 15): string {
    return this.lines.slice(-n).join('\n');
  }

  /** Throws with the output tail when the process has exited. */
  assertRunning(): void {
    if (!this.running) throw new Error(`${this.name} exited (code ${this.exitCode}):\n${this.tail()}`);
  }
}

const live = new Set<Child>();

/** Kills every child process still running, at once (SIGKILL). */
export function killAll(): void {
  for (const child of live) child.kill('SIGKILL');
}

/**
 * Makes the child processes die with the benchmark: killed when it exits, and asked
 * to stop (then the benchmark exits with 130) on SIGINT, SIGTERM or SIGHUP.
 */
export function stopChildrenOnExit(): void {
  process.on('exit', killAll);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(signal, () => {
      progress(`${signal}: stopping`);
      for (const child of live) child.kill('SIGTERM');
      setTimeout(() => process.exit(130), 3000).unref();
    });
  }
}

async function waitUntil(what: string, child: Child, probe: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    child.assertRunning();
    if (await probe().catch(() => false)) return;
    await sleep(100);
  }
  throw new Error(`${what} was not ready within ${timeoutMs / 1000} s:\n${child.tail()}`);
}

async function httpOk(url: string): Promise<boolean> {
  const res = await fetch(url);
  await res.arrayBuffer();
  return res.ok;
}

function uniqueName(prefix: string): string {
  return `${prefix}_${randomBytes(5).toString('hex')}`;
}

/** A running api with its workers, and an API key for {@link PROJECT}. */
export interface Service {
  baseUrl: string;
  dbName: string;
  api: Child;
  workers: Child[];
  key: string;
  /** Stops the processes and drops the database. */
  stop(): Promise<void>;
}

/**
 * Starts one api and `workerCount` worker processes on a fresh database and queue
 * prefix (named after `group`), waits until they are ready, and issues an API key.
 */
export async function startService(mongo: MongoClient, group: string, workerCount: number, extraEnv: Record<string, string> = {}): Promise<Service> {
  const port = await freePort();
  const dbName = uniqueName(`bench_${group}`);
  const prefix = uniqueName(`bench_${group}`);
  const adminToken = randomBytes(24).toString('hex');
  const env: Record<string, string> = {
    REDIS_URL: settings.redisUrl,
    MONGODB_URL: settings.mongoUrl,
    MONGODB_DB: dbName,
    QUEUE_PREFIX: prefix,
    ADMIN_TOKEN: adminToken,
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    RATE_LIMIT_PER_SECOND: '0',
    ...settings.serviceEnv,
    ...extraEnv,
  };
  const baseUrl = `http://127.0.0.1:${port}`;
  const api = new Child('api', BUNDLES.api, env);
  const workers = Array.from({ length: workerCount }, (_, i) => new Child(`worker${i + 1}`, BUNDLES.worker, env));
  const stop = async () => {
    await Promise.all([api, ...workers].map((c) => c.stop()));
    await mongo.db(dbName).dropDatabase().catch(() => undefined);
  };
  try {
    // At LOG_LEVEL=warn neither process prints that it is ready: ask the api, and
    // count the workers BullMQ sees on the writes queue.
    await waitUntil('the api', api, () => httpOk(`${baseUrl}/readyz`));
    if (workerCount > 0) {
      // On a cluster (REDIS_CLUSTER=1 npm run bench), the first shard of the writes queue on a cluster client.
      const nodes = settings.redisClusterNodes ? parseClusterNodes(settings.redisClusterNodes) : null;
      const connection = createRedis(nodes ? { cluster: nodes } : settings.redisUrl, 'failFast', 'bench');
      const name = queueNames('writes', queueLayout({ queueShards: settings.queueShards, redisClusterNodes: nodes }))[0]!;
      const queue = new Queue(name, { connection, prefix });
      try {
        await waitUntil(`${workerCount} worker(s)`, workers[0] as Child, async () => {
          for (const w of workers) w.assertRunning();
          return (await queue.getWorkersCount()) >= workerCount;
        });
      } finally {
        await queue.close();
        connection.disconnect();
      }
    }
    const res = await fetch(`${baseUrl}/admin/v1/api_keys`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${adminToken}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ project: PROJECT, livemode: false }),
    });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`issuing an API key failed: ${res.status} ${text}`);
    const key = (JSON.parse(text) as { secret: string }).secret;
    return { baseUrl, dbName, api, workers, key, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** Reports what a service process logged (at warn level: only trouble). */
export function reportLogs(children: Child[]): void {
  for (const child of children) {
    if (child.lines.length === 0) continue;
    progress(`${child.name} logged ${child.lines.length} line(s) (warn or worse); the last ones:\n${child.tail(5)}`);
  }
}

/** The running baseline server (bench/baseline-server.ts). */
export interface Baseline {
  baseUrl: string;
  proc: Child;
  /** Stops the process and drops its database. */
  stop(): Promise<void>;
}

/** Starts the baseline Koa server on a fresh database and waits until it listens. */
export async function startBaseline(mongo: MongoClient): Promise<Baseline> {
  const port = await freePort();
  const dbName = uniqueName('bench_baseline');
  // Compiled by tsc beside this file: dist/bench/baseline-server.js.
  const proc = new Child('baseline', path.relative(ROOT, fileURLToPath(new URL('./baseline-server.js', import.meta.url))), {
    MONGODB_URL: settings.mongoUrl,
    MONGODB_DB: dbName,
    PORT: String(port),
    HOST: '127.0.0.1',
  });
  const stop = async () => {
    await proc.stop();
    await mongo.db(dbName).dropDatabase().catch(() => undefined);
  };
  try {
    await waitUntil('the baseline server', proc, async () => proc.lines.some((l) => l.includes('baseline listening')));
    proc.lines.length = 0; // only what it says from now on is worth reporting
  } catch (err) {
    await stop();
    throw err;
  }
  return { baseUrl: `http://127.0.0.1:${port}`, proc, stop };
}
