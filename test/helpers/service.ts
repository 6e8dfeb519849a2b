/**
 * Black-box harness: starts the real api and worker processes (compiled, from
 * dist/) against the test stack's Redis and FerretDB, each test file in its own
 * database and BullMQ prefix, and speaks HTTP to them.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { MongoClient, type Db } from 'mongodb';
import { Cluster, Redis } from 'ioredis';
import type { Job, Queue } from 'bullmq';
import { parseClusterNodes } from '../../common/config.js';
import { openQueue, type QueueName } from '../../common/jobs.js';
import { queueLayout, queueNames } from '../../common/queue-shards.js';
import { BUNDLES } from '#scripts/lib/build.mjs';
import { freePort } from '#scripts/lib/net.mjs';
import { checkAgainstOpenApi } from './openapi-check.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

export function stackUrls(): { redisUrl: string; mongoUrl: string } {
  const redisUrl = process.env.REDIS_URL;
  const mongoUrl = process.env.MONGODB_URL;
  if (!redisUrl || !mongoUrl) throw new Error('REDIS_URL and MONGODB_URL must be set: run the tests with `npm test`');
  return { redisUrl, mongoUrl };
}

/**
 * The settings of the suite's run that every service it starts shares: the store
 * profile, when the run forces one (`STORE_PROFILE=mongodb npm test` runs the MongoDB
 * code paths against the test store; docs/storage.md).
 */
export function stackEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  // The run's settings a pass of the suite forces: the store profile, and the Redis
  // Cluster of `REDIS_CLUSTER=1 npm test` with its queue shards (DESIGN section 19).
  for (const name of ['STORE_PROFILE', 'REDIS_CLUSTER_NODES', 'QUEUE_SHARDS']) {
    const value = process.env[name];
    if (value) env[name] = value;
  }
  return env;
}

/** A client of the stack's Redis, or of its cluster when the run has one (typed as one Redis: see common/redis.ts). */
export function stackRedis(env: Record<string, string | undefined> = process.env, url = env.REDIS_URL): Redis {
  const nodes = env.REDIS_CLUSTER_NODES;
  if (nodes) return new Cluster(parseClusterNodes(nodes), { redisOptions: { maxRetriesPerRequest: 1 } }) as unknown as Redis;
  return new Redis(url as string, { maxRetriesPerRequest: 1 });
}

export function uniqueName(prefix: string): string {
  return `${prefix}_${randomBytes(5).toString('hex')}`;
}

/**
 * Queue `name` of a service, as its processes open it: on its Redis or cluster, its
 * shards together under `QUEUE_SHARDS` (common/queue-shards.ts). `close` ends its
 * connection too.
 */
export function serviceQueue(service: Pick<Service, 'env' | 'prefix' | 'redis'>, name: QueueName): Queue {
  const clustered = Boolean(service.env.REDIS_CLUSTER_NODES);
  const layout = queueLayout({ queueShards: Number(service.env.QUEUE_SHARDS ?? 1), redisClusterNodes: clustered ? [] : null });
  const client = clustered ? service.redis() : null;
  const queue = openQueue(name, { connection: client ?? { url: service.env.REDIS_URL }, prefix: service.prefix }, layout) as unknown as Queue;
  if (client) {
    const close = queue.close.bind(queue);
    queue.close = async () => {
      await close();
      client.disconnect();
    };
  }
  return queue;
}

/** A running child process with its output kept for assertions. */
export class Proc {
  readonly output: string[] = [];
  readonly exited: Promise<number | null>;
  private exitCode: number | null | undefined;

  constructor(
    readonly name: string,
    readonly child: ChildProcess,
  ) {
    // Whole lines only: a pipe's chunk may end in the middle of a line (a log line
    // cut in two would match no pattern, nor parse as JSON).
    for (const stream of [child.stdout, child.stderr]) {
      if (stream) createInterface({ input: stream, crlfDelay: Infinity }).on('line', (line) => line && this.output.push(line));
    }
    this.exited = new Promise((resolve) => {
      child.on('exit', (code) => {
        this.exitCode = code;
        resolve(code);
      });
    });
  }

  get running(): boolean {
    return this.exitCode === undefined;
  }

  kill(signal: NodeJS.Signals = 'SIGTERM'): void {
    if (this.running) this.child.kill(signal);
  }

  async stop(signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 20_000): Promise<number | null> {
    this.kill(signal);
    const timer = setTimeout(() => this.kill('SIGKILL'), timeoutMs);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Waits until a line of output matches. */
  /** The default is generous: on a loaded two-core machine a process can take tens of seconds to start. */
  async waitFor(pattern: RegExp, timeoutMs = 60_000): Promise<string> {
    const started = Date.now();
    let seen = 0;
    for (;;) {
      for (; seen < this.output.length; seen++) {
        const line = this.output[seen] as string;
        if (pattern.test(line)) return line;
      }
      if (!this.running) throw new Error(`${this.name} exited before printing ${pattern}:\n${this.output.slice(-20).join('\n')}`);
      if (Date.now() - started > timeoutMs) throw new Error(`${this.name} did not print ${pattern} within ${timeoutMs} ms:\n${this.output.slice(-20).join('\n')}`);
      await sleep(25);
    }
  }
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Polls `fn` until it returns something other than undefined, or fails after
 * `timeoutMs`. A throw counts as "not yet" (a dependency may be down meanwhile).
 */
export async function until<T>(what: string, fn: () => Promise<T | undefined> | T | undefined, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await Promise.resolve()
      .then(fn)
      .catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

/**
 * Waits until `count` jobs named `name` have completed on `queue` since `sinceMs`:
 * the positive signal that the service has worked past a point (a sweep that ran, a
 * later job done), so an absence window after it can be short.
 */
export async function untilCompleted(
  queue: Pick<Queue, 'getJobs'>,
  name: string,
  count: number,
  sinceMs: number,
  options: { where?: (job: Job) => boolean; timeoutMs?: number } = {},
): Promise<void> {
  const where = options.where ?? (() => true);
  await until(
    `${count} ${name} job(s) completed`,
    async () => {
      const done = await queue.getJobs(['completed']);
      return done.filter((job) => job.name === name && (job.finishedOn ?? 0) > sinceMs && where(job)).length >= count ? true : undefined;
    },
    options.timeoutMs ?? 60_000,
  );
}

/** A delayed job due within this counts as work still to do (a delivery waiting for a slot); a retry an hour off does not. */
const DUE_SOON_MS = 30_000;

/**
 * Waits until each queue named has no job waiting or running and none delayed to run
 * soon, in order (a job of one may add to the next): whatever was set going has run.
 */
export async function untilIdle(service: Pick<Service, 'env' | 'prefix' | 'redis'>, names: QueueName[], timeoutMs = 60_000): Promise<void> {
  const layout = queueLayout({ queueShards: Number(service.env.QUEUE_SHARDS ?? 1), redisClusterNodes: service.env.REDIS_CLUSTER_NODES ? [] : null });
  const redis = service.redis();
  try {
    for (const name of names) {
      await until(
        `queue ${name} to have nothing to run`,
        async () => {
          let busy = 0;
          for (const shard of queueNames(name, layout)) {
            const key = (state: string) => `${service.prefix}:${shard}:${state}`;
            // BullMQ scores a delayed job by its due time × 4096 (plus a counter).
            const dueSoon = await redis.zcount(key('delayed'), 0, (Date.now() + DUE_SOON_MS) * 0x1000);
            busy += (await redis.llen(key('wait'))) + (await redis.llen(key('active'))) + (await redis.zcard(key('prioritized'))) + dueSoon;
          }
          return busy === 0 ? true : undefined;
        },
        timeoutMs,
      );
    }
  } finally {
    redis.disconnect();
  }
}

/**
 * A port found free may be taken before the api binds it: by another test's server,
 * or as the local end of any process's outgoing connection (the same ephemeral
 * range). The api then exits with EADDRINUSE, and starts again on another port.
 */
const PORT_ATTEMPTS = 3;

function portTaken(err: unknown): boolean {
  return err instanceof Error && err.message.includes('EADDRINUSE');
}

export interface ServiceOptions {
  /** Overrides of the stack's servers go in `env` (MONGODB_URL) or `redisUrl`. */
  workers?: number;
  /** Extra environment for every process (e.g. WRITE_TIMEOUT_MS). */
  env?: Record<string, string>;
  /** Override the Redis of the stack (a test's own restartable server). */
  redisUrl?: string;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- response bodies are whatever JSON the test asserts on
export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  text: string;
  body: T;
}

/** The service under test: one api process (restartable), N worker processes. */
export class Service {
  readonly env: Record<string, string>;
  readonly baseUrl: string;
  readonly adminToken: string;
  readonly dbName: string;
  readonly prefix: string;
  api!: Proc;
  readonly workers: Proc[] = [];
  private readonly retired: Proc[] = [];
  private mongoClient: MongoClient | null = null;

  private constructor(
    readonly port: number,
    options: ServiceOptions,
  ) {
    const { redisUrl, mongoUrl } = stackUrls();
    this.adminToken = randomBytes(16).toString('hex');
    this.dbName = uniqueName('t');
    this.prefix = uniqueName('q');
    this.baseUrl = `http://127.0.0.1:${port}`;
    this.env = {
      REDIS_URL: options.redisUrl ?? redisUrl,
      MONGODB_URL: mongoUrl,
      MONGODB_DB: this.dbName,
      QUEUE_PREFIX: this.prefix,
      ADMIN_TOKEN: this.adminToken,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      RATE_LIMIT_PER_SECOND: '0',
      // One address (127.0.0.1) sends every test's requests; the tests of this limit set it.
      ANONYMOUS_RATE_LIMIT_PER_SECOND: '0',
      JOB_LOCK_MS: '3000',
      // The webhook tests' receivers listen on 127.0.0.1: test mode may reach them.
      // Tests of the address guard turn it off.
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      ...stackEnv(),
      ...options.env,
    };
    // A test's own Redis stands for the stack's, cluster included.
    if (options.redisUrl) delete this.env.REDIS_CLUSTER_NODES;
    // Live operators call back the api under test: `PUBLIC_BASE_URL: 'self'` is its own URL.
    if (this.env.PUBLIC_BASE_URL === 'self') this.env.PUBLIC_BASE_URL = this.baseUrl;
  }

  static async start(options: ServiceOptions = {}): Promise<Service> {
    for (let attempt = 1; ; attempt++) {
      const service = new Service(await freePort(), options);
      const workers = options.workers ?? 1;
      try {
        await Promise.all([service.startApi(), ...Array.from({ length: workers }, () => service.startWorker())]);
        return service;
      } catch (err) {
        // Nobody else holds this service yet: stop what did start, or it outlives the test run.
        await service.stop();
        if (attempt < PORT_ATTEMPTS && portTaken(err)) continue;
        throw err;
      }
    }
  }

  private spawn(name: string, entry: string, extraEnv: Record<string, string> = {}): Proc {
    const child = spawn(process.execPath, [path.join(root, entry)], {
      cwd: root,
      env: { PATH: process.env.PATH ?? '', ...this.env, ...extraEnv },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    return new Proc(name, child);
  }

  async startApi(extraEnv: Record<string, string> = {}): Promise<Proc> {
    if (this.api) this.retired.push(this.api);
    this.api = this.spawn('api', BUNDLES.api, extraEnv);
    await this.api.waitFor(/api ready/);
    return this.api;
  }

  async startWorker(extraEnv: Record<string, string> = {}): Promise<Proc> {
    const worker = this.spawn(`worker${this.workers.length}`, BUNDLES.worker, extraEnv);
    this.workers.push(worker);
    await worker.waitFor(/worker started/);
    return worker;
  }

  /**
   * A second api process on its own port, sharing everything else (unless `env`
   * overrides it). Resolves once it logs `until` (by default, that it is ready).
   */
  async startExtraApi(env: Record<string, string> = {}, until: RegExp = /api ready/): Promise<{ proc: Proc; baseUrl: string }> {
    for (let attempt = 1; ; attempt++) {
      const port = await freePort();
      const proc = this.spawn('api-extra', BUNDLES.api, { ...env, PORT: String(port) });
      this.retired.push(proc);
      try {
        await proc.waitFor(until);
        return { proc, baseUrl: `http://127.0.0.1:${port}` };
      } catch (err) {
        if (attempt < PORT_ATTEMPTS && portTaken(err)) continue;
        throw err;
      }
    }
  }

  /** Every log line written so far by every process. */
  logs(): string[] {
    return [...this.retired, this.api, ...this.workers].flatMap((p) => p.output);
  }

  async db(): Promise<Db> {
    if (!this.mongoClient) {
      this.mongoClient = new MongoClient(this.env.MONGODB_URL as string);
      await this.mongoClient.connect();
    }
    return this.mongoClient.db(this.dbName);
  }

  /** A client of the service's Redis (its cluster, in the suite's cluster pass). */
  redis(): Redis {
    return stackRedis(this.env);
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- see ApiResponse
  async request<T = any>(
    method: string,
    urlPath: string,
    options: { key?: string; body?: unknown; rawBody?: string | Uint8Array; headers?: Record<string, string>; baseUrl?: string } = {},
  ): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = { ...options.headers };
    if (options.key) headers.Authorization = `Bearer ${options.key}`;
    let body: string | Uint8Array | undefined = options.rawBody;
    if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['Content-Type'] ??= 'application/json';
    }
    const res = await fetch((options.baseUrl ?? this.baseUrl) + urlPath, { method, headers, body });
    const text = await res.text();
    let parsed: unknown = undefined;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    const answer = { status: res.status, headers: res.headers, text, body: parsed as T };
    await checkAgainstOpenApi(options.baseUrl ?? this.baseUrl, method, urlPath, answer);
    return answer;
  }

  /** Issues an API key through the admin API. */
  async issueKey(project = 'acme', livemode = false): Promise<string> {
    const res = await this.request('POST', '/admin/v1/api_keys', {
      headers: { Authorization: `Bearer ${this.adminToken}` },
      body: { project, livemode },
    });
    if (res.status !== 200) throw new Error(`issuing a key failed: ${res.status} ${res.text}`);
    return res.body.secret as string;
  }

  async stop(): Promise<void> {
    await Promise.all([this.api, ...this.retired, ...this.workers].filter((p) => p?.running).map((p) => p.stop('SIGTERM', 10_000)));
    if (this.mongoClient) {
      await this.mongoClient.db(this.dbName).dropDatabase().catch(() => undefined);
      await this.mongoClient.close();
    }
  }
}

export interface WithServiceOptions extends ServiceOptions {
  /** Start of the project's name; a random suffix makes it unique. */
  project?: string;
  livemode?: boolean;
}

/**
 * The set-up of a test that needs a service of its own: starts it (stopped when the
 * test ends) and issues a key to a fresh project.
 */
export async function withService(
  t: import('ava').ExecutionContext,
  options: WithServiceOptions = {},
): Promise<{ service: Service; key: string; project: string }> {
  const { project: name = 'p', livemode = false, ...serviceOptions } = options;
  const service = await Service.start(serviceOptions);
  t.teardown(() => service.stop());
  const project = uniqueName(name);
  const key = await service.issueKey(project, livemode);
  return { service, key, project };
}
