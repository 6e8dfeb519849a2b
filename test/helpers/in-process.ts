/**
 * In-process harness: the api and the worker built from their own modules, wired as
 * api/main.ts and worker/main.ts wire them, on the test stack's Redis and FerretDB,
 * with a clock the test moves by hand. Each stack has a database and a queue prefix
 * of its own, dropped when it closes.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Redis } from 'ioredis';
import { createApi } from '../../api/app.js';
import { ResultWaiter } from '../../api/result-waiter.js';
import { IdempotencyStore } from '../../api/idempotency/store.js';
import { ApiKeyCache, issueKey } from '../../common/api-keys.js';
import { loadConfig, type Config } from '../../common/config.js';
import { IdGenerator } from '../../common/ids.js';
import { ANSWER_KEY_ID, openQueues } from '../../common/jobs.js';
import { Seal } from '../../common/seal.js';
import { createLogger } from '../../common/logger.js';
import { connectMongo, type Mongo } from '../../common/mongo.js';
import { createRedis, redisTarget, waitReady } from '../../common/redis.js';
import { queueLayout } from '../../common/queue-shards.js';
import { resolveStoreProfile } from '../../common/store-profile.js';
import { startWorker } from '../../worker/main.js';
import { stackEnv, stackUrls, uniqueName, type ApiResponse } from './service.js';

/** Epoch ms that move only when the test says so. */
export class FakeClock {
  /** Ms added after each reading: with 1000, no two readings fall in the same second. */
  tickPerRead = 0;

  constructor(private ms = Date.now()) {}

  readonly now = (): number => {
    const ms = this.ms;
    this.ms += this.tickPerRead;
    return ms;
  };

  advance(ms: number): void {
    this.ms += ms;
  }
}

/** The config, clients and clock of one test file. */
export interface Stack {
  config: Config;
  clock: FakeClock;
  mongo: Mongo;
  /** A fail-fast command connection, as the api and the worker use. */
  redis: Redis;
  close(): Promise<void>;
}

/** Config from `env` over the test stack's servers, a fresh database and a fresh queue prefix. */
export async function openStack(env: Record<string, string> = {}): Promise<Stack> {
  const { redisUrl, mongoUrl } = stackUrls();
  const config = loadConfig({
    REDIS_URL: redisUrl,
    MONGODB_URL: mongoUrl,
    MONGODB_DB: uniqueName('t'),
    QUEUE_PREFIX: uniqueName('q'),
    LOG_LEVEL: 'silent',
    RATE_LIMIT_PER_SECOND: '0',
    ...stackEnv(),
    ...env,
  });
  const mongo = await connectMongo(config.mongodbUrl, config.mongodbDb, 'test', config.storeProfile);
  const redis = createRedis(redisTarget(config), 'failFast', 'test');
  await waitReady(redis);
  return {
    config,
    clock: new FakeClock(),
    mongo,
    redis,
    async close() {
      await deleteKeys(redis, `${config.queuePrefix}:*`).catch(() => undefined);
      await redis.quit().catch(() => redis.disconnect());
      await mongo.db.dropDatabase().catch(() => undefined);
      await mongo.client.close();
    },
  };
}

async function deleteKeys(redis: Redis, pattern: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    if (keys.length > 0) await redis.del(...keys);
    cursor = next;
  } while (cursor !== '0');
}

export interface RequestOptions {
  key?: string;
  body?: unknown;
  headers?: Record<string, string>;
}

/** The api on an HTTP server at 127.0.0.1 (a free port), and one worker, in this process. */
export interface InProcessService {
  baseUrl: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- response bodies are whatever JSON the test asserts on
  request(method: string, path: string, options?: RequestOptions): Promise<ApiResponse<any>>;
  /** Issues an API key for `project` directly in MongoDB, as the admin API would. */
  issueKey(project: string, livemode?: boolean): Promise<string>;
  /** Forgets the api's replays in memory: the next request with a key asks Redis (and MongoDB). */
  forgetReplays(): void;
  /** How many requests the api answered at the door, from a request kept as it was read (api/handlers/replay-from-memory.ts). */
  answeredAsSent(): number;
  /** Every request the api recorded (its log line's and metrics' fields), oldest first. */
  recorded(): Array<{ method: string; route: string; status: number }>;
  /** The api's result waiter: `recheckAll` is what it runs when its subscription is back after Redis went away. */
  results: ResultWaiter;
  stop(): Promise<void>;
}

export async function startInProcess(stack: Stack): Promise<InProcessService> {
  const { config, mongo, clock } = stack;
  const logger = createLogger(config.logLevel, 'test');
  const ids = new IdGenerator(clock.now);

  const subscriber = createRedis(redisTarget(config), 'patient', 'test-api-subscriber');
  const queueConnection = createRedis(redisTarget(config), 'failFast', 'test-api-queues');
  const queues = openQueues({ connection: queueConnection, prefix: config.queuePrefix }, queueLayout(config));
  const answerSeal = new Seal(mongo.collections.serviceKeys, ANSWER_KEY_ID);
  const results = new ResultWaiter(subscriber, config.queuePrefix, (jobId, sealed) => answerSeal.open(jobId, sealed));
  await results.start();
  const idempotency = new IdempotencyStore({ config, redis: stack.redis, collections: mongo.collections, now: clock.now });
  const recorded: Array<{ method: string; route: string; status: number }> = [];
  const listener = createApi({
    config,
    redis: stack.redis,
    queues,
    results,
    mongo,
    keys: new ApiKeyCache(mongo.collections, config.apiKeyCacheMs, clock.now),
    logger,
    ids,
    now: clock.now,
    onRequest: ({ method, route, status }) => recorded.push({ method, route, status }),
  }, { idempotency });
  const server = createServer(listener);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const workerRedis = {
    commands: createRedis(redisTarget(config), 'failFast', 'test-worker'),
    queues: createRedis(redisTarget(config), 'patient', 'test-worker-queues'),
    workers: createRedis(redisTarget(config), 'patient', 'test-worker-bullmq'),
  };
  const storeProfile = await resolveStoreProfile(config.storeProfile, mongo.db);
  const worker = await startWorker({ config, logger, mongo, redis: workerRedis, now: clock.now, ids: new IdGenerator(clock.now), storeProfile });

  return {
    baseUrl,
    forgetReplays: () => idempotency.replays.clear(),
    answeredAsSent: () => idempotency.replays.answeredAsSent,
    recorded: () => [...recorded],
    results,
    async request(method, path, options = {}) {
      const headers: Record<string, string> = { ...options.headers };
      if (options.key) headers.Authorization = `Bearer ${options.key}`;
      let body: string | undefined;
      if (options.body !== undefined) {
        body = JSON.stringify(options.body);
        headers['Content-Type'] ??= 'application/json';
      }
      const res = await fetch(baseUrl + path, { method, headers, body });
      const text = await res.text();
      let parsed: unknown;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        parsed = undefined;
      }
      return { status: res.status, headers: res.headers, text, body: parsed };
    },
    async issueKey(project, livemode = false) {
      return (await issueKey({ collections: mongo.collections, ids, now: clock.now }, project, livemode)).secret;
    },
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await worker.close();
      await results.close();
      await Promise.all(Object.values(queues).map((queue) => queue.close()));
      for (const client of [queueConnection, ...Object.values(workerRedis)]) await client.quit().catch(() => client.disconnect());
    },
  };
}
