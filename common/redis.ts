import { Redis, type RedisOptions } from 'ioredis';

/**
 * Two kinds of connection. `failFast` ones fail a command at once while Redis is
 * down: the api answers 503 rather than queueing requests in memory, and a worker's
 * job fails and is retried rather than hanging. `patient` ones queue commands and
 * retry forever, as BullMQ workers, queues and subscribers need. Both reconnect by
 * themselves.
 */
export type RedisKind = 'failFast' | 'patient';

/**
 * `autoPipelining`: commands issued in the same tick share one round trip (ioredis's
 * own feature); used where many jobs finish together.
 */
export function createRedis(url: string, kind: RedisKind, name: string, extra: { autoPipelining?: boolean } = {}): Redis {
  const options: RedisOptions = {
    connectionName: name,
    retryStrategy: (times) => Math.min(times * 100, 2000),
    lazyConnect: false,
    enableAutoPipelining: extra.autoPipelining ?? false,
  };
  if (kind === 'failFast') {
    options.enableOfflineQueue = false;
    options.maxRetriesPerRequest = 1;
  } else {
    options.maxRetriesPerRequest = null;
    options.enableOfflineQueue = true;
  }
  const redis = new Redis(url, options);
  // Connection errors are reported through readiness and 503s; without a listener
  // ioredis would print each reconnect attempt as an unhandled error.
  redis.on('error', () => {});
  return redis;
}

/** Resolves once the connection is ready, or rejects after `timeoutMs`. */
export async function waitReady(redis: Redis, timeoutMs = 10_000): Promise<void> {
  if (redis.status === 'ready') return;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      redis.off('ready', onReady);
      reject(new Error(`Redis not ready after ${timeoutMs} ms`));
    }, timeoutMs);
    const onReady = () => {
      clearTimeout(timer);
      resolve();
    };
    redis.once('ready', onReady);
  });
}
