import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import type { Config, RedisNode } from './config.js';

/**
 * Two kinds of connection. `failFast` ones fail a command at once while Redis is
 * down: the api answers 503 rather than queueing requests in memory, and a worker's
 * job fails and is retried rather than hanging. `patient` ones queue commands and
 * retry forever, as BullMQ workers, queues and subscribers need. Both reconnect by
 * themselves.
 */
export type RedisKind = 'failFast' | 'patient';

/** Where Redis is: one server's URL, or some nodes of a Redis Cluster (`REDIS_CLUSTER_NODES`). */
export type RedisTarget = string | { cluster: RedisNode[] };

/** The target the configuration names: the cluster when `REDIS_CLUSTER_NODES` is set. */
export function redisTarget(config: Pick<Config, 'redisUrl' | 'redisClusterNodes'>): RedisTarget {
  return config.redisClusterNodes ? { cluster: config.redisClusterNodes } : config.redisUrl;
}

/**
 * How a cluster client rides out a failover (DESIGN section 19): while a dead
 * master's slots have no owner it retries every 200 ms (CLUSTERDOWN, TRYAGAIN, a
 * closed node), follows at most 16 redirections (MOVED, ASK) per command, and
 * refreshes the slot map every 5 s besides the refreshes redirections cause. A
 * failFast command still fails once its one retry is spent; a patient one waits.
 */
const CLUSTER_RETRY_MS = 200;

/**
 * `autoPipelining`: commands issued in the same tick share one round trip (ioredis's
 * own feature); used where many jobs finish together. On a cluster the commands are
 * grouped per node.
 *
 * A cluster client is typed as `Redis`: ioredis's `Cluster` answers the same
 * commands, and every key the service writes keeps a multi-key command, a
 * transaction, a pipeline or a script within one slot (hash tags, docs/scaling.md).
 */
export function createRedis(target: RedisTarget, kind: RedisKind, name: string, extra: { autoPipelining?: boolean } = {}): Redis {
  const retryStrategy = (times: number) => Math.min(times * 100, 2000);
  const maxRetriesPerRequest = kind === 'failFast' ? 1 : null;
  const enableOfflineQueue = kind !== 'failFast';
  let redis: Redis;
  if (typeof target === 'string') {
    const options: RedisOptions = {
      connectionName: name,
      retryStrategy,
      lazyConnect: false,
      enableAutoPipelining: extra.autoPipelining ?? false,
      maxRetriesPerRequest,
      enableOfflineQueue,
    };
    redis = new Redis(target, options);
  } else {
    const options: ClusterOptions = {
      clusterRetryStrategy: retryStrategy,
      enableOfflineQueue,
      enableAutoPipelining: extra.autoPipelining ?? false,
      maxRedirections: 16,
      retryDelayOnFailover: CLUSTER_RETRY_MS,
      retryDelayOnClusterDown: CLUSTER_RETRY_MS,
      retryDelayOnTryAgain: CLUSTER_RETRY_MS,
      slotsRefreshTimeout: 2000,
      slotsRefreshInterval: 5000,
      // The node connections' own: BullMQ reads maxRetriesPerRequest here.
      redisOptions: { connectionName: name, maxRetriesPerRequest },
    };
    redis = new Cluster(target.cluster, options) as unknown as Redis;
  }
  // Connection errors are reported through readiness and 503s; without a listener
  // ioredis would print each reconnect attempt as an unhandled error.
  redis.on('error', () => {});
  return redis;
}

/** Whether a client is a cluster's (ioredis sets `isCluster` on both kinds). */
export function isCluster(redis: Pick<Redis, 'isCluster'>): boolean {
  return redis.isCluster === true;
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

/**
 * On a cluster, runs `fn` once its nodes have settled after a change (a node lost, a
 * replica promoted: a failover). What a one-Redis client does on 'ready' after a
 * reconnect, a cluster client needs here too: its subscription may have moved to
 * another node (messages published meanwhile are gone), and a promoted replica may
 * lack the master's last writes. Nothing on one Redis. Returns a function that stops.
 */
export function onClusterChange(redis: Redis, fn: () => void, settleMs = 1000): () => void {
  if (!isCluster(redis)) return () => {};
  let timer: NodeJS.Timeout | null = null;
  const changed = () => {
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = null;
      fn();
    }, settleMs);
    timer.unref();
  };
  redis.on('+node', changed);
  redis.on('-node', changed);
  return () => {
    if (timer) clearTimeout(timer);
    redis.off('+node', changed);
    redis.off('-node', changed);
  };
}
