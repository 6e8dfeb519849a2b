// Types of redis-cluster.mjs for the TypeScript tests.
import type { ExitInfo } from './servers.d.mts';

export interface ClusterNode {
  readonly port: number;
  readonly busPort: number;
  readonly pid: number | undefined;
  readonly bin: string;
  readonly logFile: string;
  readonly running: boolean;
  stop(timeoutMs?: number): Promise<ExitInfo>;
  /** SIGKILL by default: a crash. Resolves once the process has exited. */
  kill(signal?: NodeJS.Signals): Promise<ExitInfo>;
}

export interface RedisClusterOptions {
  dir: string;
  masters?: number;
  replicas?: number;
  bin?: string;
  /** cluster-node-timeout: how long a master may be silent before its replica takes over. Default 1000. */
  nodeTimeoutMs?: number;
}

export interface RunningCluster {
  readonly nodes: ClusterNode[];
  readonly cli: string;
  /** `127.0.0.1:PORT,…`: REDIS_CLUSTER_NODES. */
  readonly nodesEnv: string;
  masters(): Promise<ClusterNode[]>;
  waitOk(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

export function findRedisCli(serverBin?: string): string;
export function redisCli(cli: string, port: number, args: string[], timeoutMs?: number): Promise<string>;
export function nodeRole(cli: string, port: number): Promise<{ role: string; masterPort: number | null }>;
export function waitClusterOk(cli: string, nodes: ClusterNode[], masters: number, timeoutMs?: number): Promise<void>;
export function startRedisCluster(options: RedisClusterOptions): Promise<RunningCluster>;
