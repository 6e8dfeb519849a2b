// A loopback Redis Cluster (DESIGN section 19): `masters` masters with `replicas`
// replicas each, every node a redis-server of its own on 127.0.0.1, joined by
// `redis-cli --cluster create`. For tests, the benchmark and the chaos run; a real
// deployment runs its own cluster and names it in REDIS_CLUSTER_NODES.

import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';

import { findRedisServer, which } from './binaries.mjs';
import { freePort } from './net.mjs';
import { spawnServer } from './processes.mjs';
import { redisPing, waitReady } from './probes.mjs';

const run = promisify(execFile);

/** redis-cli beside redis-server (the same Debian package), else on the PATH. */
export function findRedisCli(serverBin = findRedisServer()) {
  const beside = path.join(path.dirname(serverBin), 'redis-cli');
  if (fs.existsSync(beside)) return beside;
  const found = which('redis-cli');
  if (!found) throw new Error('redis-cli was not found (Debian package redis-tools): it creates the cluster');
  return found;
}

/** Runs `redis-cli -p PORT ARGS…` and resolves with its output. */
export async function redisCli(cli, port, args, timeoutMs = 5000) {
  const { stdout } = await run(cli, ['-h', '127.0.0.1', '-p', String(port), ...args], { timeout: timeoutMs });
  return stdout;
}

/** The `field:value` lines of CLUSTER INFO or INFO replication, as an object. */
function fields(text) {
  return Object.fromEntries(
    text
      .split(/\r?\n/)
      .map((line) => line.split(':'))
      .filter((parts) => parts.length >= 2)
      .map(([key, ...rest]) => [key.trim(), rest.join(':').trim()]),
  );
}

async function startNode({ dir, bin, nodeTimeoutMs }) {
  fs.mkdirSync(dir, { recursive: true });
  const logFile = path.join(dir, 'redis-server.log');
  const port = await freePort();
  // The cluster bus is on a port of its own (by default port + 10000, which may be
  // past 65535 or taken): asked for explicitly.
  let busPort = await freePort();
  while (busPort === port) busPort = await freePort();
  const args = [
    '--port', String(port),
    '--bind', '127.0.0.1',
    '--dir', path.resolve(dir),
    '--daemonize', 'no',
    '--save', '',
    '--appendonly', 'no',
    '--cluster-enabled', 'yes',
    '--cluster-port', String(busPort),
    '--cluster-config-file', 'nodes.conf',
    '--cluster-node-timeout', String(nodeTimeoutMs),
    // A replica whose master died takes over however long it lost touch.
    '--cluster-replica-validity-factor', '0',
  ];
  const server = spawnServer(bin, args, { logFile, cwd: dir });
  await waitReady(server, () => redisPing(port), { name: 'redis-server (cluster node)', logFile, timeoutMs: 30_000 });
  return {
    port,
    busPort,
    pid: server.child.pid,
    bin,
    logFile,
    get running() {
      return server.exitInfo === null;
    },
    stop: (timeoutMs) => server.stop(timeoutMs),
    kill: (signal = 'SIGKILL') => {
      server.child.kill(signal);
      return server.exited;
    },
  };
}

/** Resolves once every running node says `cluster_state:ok` and knows `masters` masters with slots. */
export async function waitClusterOk(cli, nodes, masters, timeoutMs = 60_000) {
  const until = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < until) {
    try {
      const running = nodes.filter((n) => n.running);
      const states = await Promise.all(running.map(async (n) => fields(await redisCli(cli, n.port, ['cluster', 'info']))));
      // A dead master still counts in cluster_size until its replica takes its slots:
      // the running masters are counted too.
      const roles = await Promise.all(running.map((n) => nodeRole(cli, n.port)));
      const liveMasters = roles.filter((r) => r.role === 'master').length;
      if (liveMasters === masters && states.every((s) => s.cluster_state === 'ok' && Number(s.cluster_size) === masters)) return;
      last = JSON.stringify({ liveMasters, states: states.map((s) => [s.cluster_state, s.cluster_size]) });
    } catch (error) {
      last = error.message;
    }
    await sleep(200);
  }
  throw new Error(`the Redis Cluster did not become ok in ${timeoutMs} ms (${last})`);
}

/** The role of the node on `port` (`master` or `slave`) and, for a replica, its master's port. */
export async function nodeRole(cli, port) {
  const info = fields(await redisCli(cli, port, ['info', 'replication']));
  return { role: info.role, masterPort: info.master_port ? Number(info.master_port) : null };
}

/**
 * Starts the cluster with its data under `dir` (one directory per node).
 * nodeTimeoutMs: how long a master may be silent before its replica takes over
 * (redis' cluster-node-timeout; 1 s here, so that a failover test is short).
 */
export async function startRedisCluster({ dir, masters = 3, replicas = 1, bin = findRedisServer(), nodeTimeoutMs = 1000 } = {}) {
  if (!dir) throw new Error('startRedisCluster: dir is required');
  const cli = findRedisCli(bin);
  const count = masters * (1 + replicas);
  const nodes = [];
  const stop = async () => {
    await Promise.all(nodes.map((n) => n.stop()));
  };
  try {
    for (let i = 0; i < count; i++) nodes.push(await startNode({ dir: path.join(dir, `node-${i}`), bin, nodeTimeoutMs }));
    await run(
      cli,
      ['--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-replicas', String(replicas), '--cluster-yes'],
      { timeout: 60_000 },
    );
    await waitClusterOk(cli, nodes, masters);
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    nodes,
    cli,
    /** `127.0.0.1:PORT,…`: REDIS_CLUSTER_NODES. */
    nodesEnv: nodes.map((n) => `127.0.0.1:${n.port}`).join(','),
    /** The nodes that are masters now (a failover changes them). */
    async masters() {
      const roles = await Promise.all(nodes.filter((n) => n.running).map(async (n) => ({ node: n, ...(await nodeRole(cli, n.port)) })));
      return roles.filter((r) => r.role === 'master').map((r) => r.node);
    },
    /** Resolves once the cluster is ok again (after a failover: a replica serves the dead master's slots). */
    waitOk: (timeoutMs) => waitClusterOk(cli, nodes, masters, timeoutMs),
    stop,
  };
}
