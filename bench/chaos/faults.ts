/**
 * The faults of a chaos run: a schedule drawn once from a seeded generator (so a run
 * can be repeated with `--seed`), then injected on time. Faults fall between the end
 * of the warm-up and `recoveryS` before the end of the load, so that each one is
 * followed by enough load to see the service recover. The store restart
 * (`--store-restart`) falls half way through the load.
 */
import type { Fleet } from './fleet.js';
import type { ControlledFerretDB, ControlledRedis } from './servers.js';

export type FaultKind = 'worker-kill' | 'api-kill' | 'redis-restart' | 'redis-snapshot' | 'redis-rollback' | 'redis-master-kill' | 'store-restart';

/** The part of a loopback Redis Cluster (scripts/lib/redis-cluster.mjs) a master kill needs. */
export interface KillableCluster {
  masters(): Promise<Array<{ port: number; kill(signal?: NodeJS.Signals): Promise<unknown> }>>;
  waitOk(timeoutMs?: number): Promise<void>;
}

/** What the faults act on: the processes, and the servers the run started itself (null: given, not touched). */
export interface FaultTargets {
  fleet: Fleet;
  redis: ControlledRedis | null;
  store: ControlledFerretDB | null;
  /** `--redis-cluster`: the run's cluster, whose masters may be killed. */
  cluster?: KillableCluster | null;
}

export interface PlannedFault {
  /** Seconds from the start of the load. */
  atS: number;
  kind: FaultKind;
  /** A store restart: seconds between the SIGKILL and the new start. */
  downS?: number;
}

export interface InjectedFault extends PlannedFault {
  /** Epoch ms when the fault began. */
  startedMs: number;
  /** How long the injection took (a Redis restart: the time Redis was away). */
  tookMs: number;
  /** A killed process: ms from its replacement's start until it was ready again (null: not within a minute). */
  backAfterMs?: number | null;
  /** A rollback: how old the snapshot Redis restarted from was, in ms. */
  snapshotAgeMs?: number;
  target: string;
  error?: string;
}

/** mulberry32: small, fast, good enough to draw a schedule from a seed. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface ScheduleOptions {
  warmupS: number;
  durationS: number;
  recoveryS: number;
  workerKillS: [number, number] | null;
  apiKillS: [number, number] | null;
  redisRestart: boolean;
  rollbackS: number;
  /** False with an existing Redis: it cannot be restarted from here. */
  redisFaults: boolean;
  /** Seconds the store stays down after its SIGKILL; null: no store restart. */
  storeRestartS: number | null;
  /** `--redis-cluster`: a master of the cluster is killed half way through the load. */
  redisCluster?: boolean;
}

export function planFaults(options: ScheduleOptions, random: () => number): PlannedFault[] {
  const from = options.warmupS;
  const until = Math.max(from, options.durationS - options.recoveryS);
  const plan: PlannedFault[] = [];
  const every = (range: [number, number] | null, kind: FaultKind) => {
    if (!range) return;
    for (let at = from + range[0] + random() * (range[1] - range[0]); at <= until; at += range[0] + random() * (range[1] - range[0])) {
      plan.push({ atS: at, kind });
    }
  };
  every(options.workerKillS, 'worker-kill');
  every(options.apiKillS, 'api-kill');
  if (options.redisFaults) {
    const span = until - from;
    if (options.redisRestart) plan.push({ atS: from + span * 0.3, kind: 'redis-restart' });
    if (options.rollbackS > 0) {
      const at = from + span * 0.7;
      plan.push({ atS: Math.max(0.5, at - options.rollbackS), kind: 'redis-snapshot' });
      plan.push({ atS: at, kind: 'redis-rollback' });
    }
  }
  if (options.redisCluster) plan.push({ atS: from + (until - from) * 0.5, kind: 'redis-master-kill' });
  if (options.storeRestartS !== null) {
    plan.push({ atS: Math.min(until, Math.max(from, options.durationS / 2)), kind: 'store-restart', downS: options.storeRestartS });
  }
  return plan.sort((a, b) => a.atS - b.atS);
}

/** Injects the planned faults on time; resolves once the last one is done. */
export async function injectFaults(
  plan: PlannedFault[],
  startMs: number,
  targets: FaultTargets,
  random: () => number,
  onFault: (fault: InjectedFault) => void,
): Promise<void> {
  const pending: Array<Promise<void>> = [];
  // Process kills overlap the Redis faults, as they would in production; the Redis
  // faults follow one another (a snapshot cannot be taken of a Redis being restarted).
  let redisFaults: Promise<void> = Promise.resolve();
  for (const planned of plan) {
    const wait = startMs + planned.atS * 1000 - Date.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    if (planned.kind.startsWith('redis')) {
      redisFaults = redisFaults.then(() => inject(planned, targets, random).then(onFault));
      pending.push(redisFaults);
    } else {
      pending.push(inject(planned, targets, random).then(onFault));
    }
  }
  await Promise.all(pending);
}

async function inject(planned: PlannedFault, { fleet, redis, store, cluster }: FaultTargets, random: () => number): Promise<InjectedFault> {
  const startedMs = Date.now();
  let target = 'redis';
  let error: string | undefined;
  let backAfterMs: number | null | undefined;
  let snapshotAgeMs: number | undefined;
  try {
    switch (planned.kind) {
      case 'worker-kill':
      case 'api-kill': {
        const slots = planned.kind === 'worker-kill' ? fleet.workers : fleet.apis;
        const slot = slots[Math.floor(random() * slots.length)] ?? slots[0];
        if (!slot) break;
        target = slot.name;
        await fleet.crash(slot);
        backAfterMs = await Promise.race([slot.ready(), new Promise<null>((resolve) => setTimeout(() => resolve(null), 60_000))]);
        break;
      }
      case 'redis-restart':
        await redis?.restart();
        break;
      case 'redis-snapshot':
        await redis?.snapshot();
        break;
      case 'redis-rollback':
        if (redis?.snapshotMs) snapshotAgeMs = Date.now() - redis.snapshotMs;
        await redis?.rollback();
        break;
      case 'redis-master-kill': {
        // SIGKILL, not CLUSTER FAILOVER: the master is gone, its replica is promoted by
        // the cluster itself. `tookMs`: until every slot is served again.
        const masters = (await cluster?.masters()) ?? [];
        const victim = masters[Math.floor(random() * masters.length)];
        if (!victim) throw new Error('no master to kill');
        target = `redis master :${victim.port}`;
        await victim.kill('SIGKILL');
        await cluster?.waitOk(60_000);
        break;
      }
      case 'store-restart':
        target = 'ferretdb';
        await store?.crashAndRestart(planned.downS ?? 0);
        break;
    }
  } catch (err) {
    error = err instanceof Error ? err.message : String(err);
  }
  return {
    ...planned,
    startedMs,
    tookMs: Date.now() - startedMs,
    target,
    ...(backAfterMs !== undefined ? { backAfterMs } : {}),
    ...(snapshotAgeMs !== undefined ? { snapshotAgeMs } : {}),
    ...(error ? { error } : {}),
  };
}
