/**
 * A loopback Redis Cluster of its own for a test file (scripts/lib/redis-cluster.mjs):
 * started before the file's tests, stopped and its data removed after them.
 */
import type { TestFn } from 'ava';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { redisCli, startRedisCluster, type RunningCluster } from '#scripts/lib/redis-cluster.mjs';

/** The file's cluster, once its `before` hook has run. */
export function useRedisCluster<Context>(test: TestFn<Context>, name: string): () => RunningCluster {
  let cluster: RunningCluster | undefined;
  let dir: string | undefined;
  test.before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), `${name}-`));
    cluster = await startRedisCluster({ dir });
  });
  test.after.always(async () => {
    await cluster?.stop();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });
  return () => {
    if (!cluster) throw new Error('the Redis Cluster is not started yet');
    return cluster;
  };
}

/** The port of the master that serves `key`'s slot now. */
export async function masterOf(cluster: RunningCluster, key: string): Promise<number> {
  const [any] = await cluster.masters();
  const slot = Number((await redisCli(cluster.cli, any!.port, ['cluster', 'keyslot', key])).trim());
  const lines = (await redisCli(cluster.cli, any!.port, ['cluster', 'nodes'])).split(/\r?\n/).filter(Boolean);
  for (const line of lines) {
    const [, address, flags, , , , , , ...ranges] = line.split(' ');
    if (!flags!.includes('master') || flags!.includes('fail')) continue;
    for (const range of ranges) {
      if (range.startsWith('[')) continue;
      const [from, to = from] = range.split('-').map(Number);
      if (slot >= from! && slot <= to!) return Number(address!.split('@')[0]!.split(':')[1]);
    }
  }
  throw new Error(`no master serves slot ${slot} of ${key}`);
}
