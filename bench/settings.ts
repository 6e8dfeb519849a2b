/**
 * The benchmark's settings: the scenario ids and what each is compared with, the
 * request shapes every group uses, and the knobs read from the environment (see
 * bench/README.md). Read once, when this module is first imported.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root; this file runs as dist/bench/settings.js. */
export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
/** Where each run's results go (git-ignored). */
export const RESULTS_FILE = path.join(ROOT, 'bench', 'results', 'latest.json');
/** The committed run log: one row per run (results-log.ts); smoke runs write none. */
export const RUNS_LOG = path.join(ROOT, 'bench', 'results', 'bench-runs.csv');
/**
 * One Redis beside a Redis Cluster (DESIGN section 19): the rows of runs on a cluster
 * (`REDIS_CLUSTER=1 npm run bench`), and of runs on one Redis that ask to be compared
 * with them (`BENCH_REDIS_COMPARE=1`), with which Redis and how many queue shards.
 */
export const REDIS_RUNS_LOG = path.join(ROOT, 'bench', 'results', 'redis-cluster-runs.csv');

/** Every scenario, in the order of the table and the JSON results. */
export const SCENARIO_IDS = [
  'S0', 'S1-c16', 'S1-c64', 'S2-c16', 'S2-c64', 'S2-keyed', 'S3-w1', 'S3-w2', 'S3-w4', 'S4', 'S5-10k', 'S5-1m', 'S5-1m-deep', 'S6', 'S6-steady', 'S7', 'S8', 'S9', 'S10',
] as const;
/** One of {@link SCENARIO_IDS}. */
export type ScenarioId = (typeof SCENARIO_IDS)[number];

/** What each scenario is compared with; S5 compares p50, the others rps. */
export const BASELINES: Record<ScenarioId, ScenarioId | null> = {
  S0: null,
  'S1-c16': null,
  'S1-c64': null,
  'S2-c16': 'S1-c16',
  'S2-c64': 'S1-c64',
  'S2-keyed': 'S2-c64',
  'S3-w1': null,
  'S3-w2': 'S3-w1',
  'S3-w4': 'S3-w1',
  S4: 'S0',
  'S5-10k': null,
  'S5-1m': 'S5-10k',
  'S5-1m-deep': 'S5-1m',
  S6: 'S2-c64',
  'S6-steady': 'S2-c64',
  S7: 'S2-c64',
  S8: null,
  S9: null,
  S10: null,
};

/** The project the benchmark's API key is issued for, and its seeded objects belong to. */
export const PROJECT = 'bench';
/** The body of every create, through the service (S2 to S4) and the baseline (S1). */
export const CREATE_BODY = JSON.stringify({ amount: 2000, currency: 'xof', description: 'Bench order', metadata: { order_id: 'bench-1' } });
/** The page size of the S5 lists. */
export const LIST_LIMIT = 100;

function envNumber(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0) throw new Error(`${name} must be a non-negative number, got ${JSON.stringify(raw)}`);
  return value;
}

function envFlag(name: string, fallback: boolean): boolean {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  return !['0', 'false', 'no', 'off'].includes(raw.toLowerCase());
}

function selectedScenarios(): Set<ScenarioId> {
  const raw = process.env.BENCH_SCENARIOS;
  if (!raw) return new Set(SCENARIO_IDS);
  const picked = raw.split(',').map((s) => s.trim()).filter(Boolean);
  const unknown = picked.filter((id) => !(SCENARIO_IDS as readonly string[]).includes(id));
  if (unknown.length) throw new Error(`BENCH_SCENARIOS: unknown scenario ${unknown.join(', ')} (known: ${SCENARIO_IDS.join(', ')})`);
  return new Set(picked as ScenarioId[]);
}

/**
 * BENCH_SMOKE=1: every scenario for about a second on small data (`npm run
 * bench:smoke`, run by .ci/run). It checks that the benchmark runs, not how fast:
 * the numbers mean nothing, no row goes to the run log, and the run fails when a
 * scenario asked for did not run or sent no request. Explicit knobs still win.
 */
const smoke = envFlag('BENCH_SMOKE', false);
const smokeDefault = (full: number, small: number) => (smoke ? small : full);

/** The knobs, with their defaults; an invalid value throws here, before anything starts. */
export const settings = {
  smoke,
  redisUrl: process.env.REDIS_URL ?? '',
  mongoUrl: process.env.MONGODB_URL ?? '',
  /** The service's knobs passed on to its processes when set (otherwise its defaults): the group commit ones, to measure what each buys. */
  serviceEnv: Object.fromEntries(
    ['WORKER_CONCURRENCY', 'WORKER_INTENTS_CONCURRENCY', 'CREATE_BATCH_MAX', 'CREATE_BATCH_WAIT_MS', 'WORKER_WRITES_IN_FLIGHT', 'WORKER_TRANSITION_WRITES_IN_FLIGHT', 'STORE_PROFILE', 'REDIS_CLUSTER_NODES', 'QUEUE_SHARDS']
      .map((name) => [name, process.env[name]] as const)
      .filter((entry): entry is readonly [string, string] => Boolean(entry[1])),
  ),
  durationS: envNumber('BENCH_DURATION_S', smokeDefault(10, 1)),
  warmupS: envNumber('BENCH_WARMUP_S', smokeDefault(2, 0)),
  s5With1m: envFlag('BENCH_S5_1M', !smoke),
  /** S5-10k: how many objects are seeded before the first list (10 000; 200 in a smoke run). */
  s5SmallCount: envNumber('BENCH_S5_10K_COUNT', smokeDefault(10_000, 200)),
  s5SmallAmount: envNumber('BENCH_S5_10K_AMOUNT', smokeDefault(20, 3)),
  s5LargeAmount: envNumber('BENCH_S5_1M_AMOUNT', 3),
  s5TimeoutS: envNumber('BENCH_S5_TIMEOUT_S', 900),
  seedBatch: envNumber('BENCH_SEED_BATCH', 5000),
  /** S6: how many intents are created, then confirmed once each. */
  s6Intents: envNumber('BENCH_S6_INTENTS', smokeDefault(500, 10)),
  /** S6-steady: confirms sent a second (0: half of what S6 completed a second in this run), and for how long. */
  s6Rate: envNumber('BENCH_S6_RATE', smokeDefault(0, 10)),
  s6SteadyS: envNumber('BENCH_S6_STEADY_S', smokeDefault(30, 1)),
  /** S7: how many intents are paid, then refunded once each. */
  s7Refunds: envNumber('BENCH_S7_REFUNDS', smokeDefault(300, 5)),
  /** S6 and S7 again, in this many pairs with the worker's postings off and on (bench/scenarios/ledger-cost.ts); 0: not run. */
  ledgerPairs: envNumber('BENCH_LEDGER_PAIRS', 0),
  /** S8: the transactions of the statement (100 000; 500 in a smoke run). */
  s8Rows: envNumber('BENCH_S8_ROWS', smokeDefault(100_000, 500)),
  /** S10: the payouts of the one batch (at most 1,000, the route's limit). */
  s10Payouts: Math.min(1000, envNumber('BENCH_S10_PAYOUTS', smokeDefault(1000, 10))),
  selected: selectedScenarios(),
  /** `REDIS_CLUSTER=1 npm run bench`: the test stack's cluster (scripts/lib/throwaway-stack.mjs). */
  redisClusterNodes: process.env.REDIS_CLUSTER_NODES ?? '',
  queueShards: envNumber('QUEUE_SHARDS', 1),
  /** The row also goes to REDIS_RUNS_LOG: a run on one Redis to set beside the cluster's. */
  redisCompare: envFlag('BENCH_REDIS_COMPARE', false),
};

/** True when any of the given scenarios was asked for (BENCH_SCENARIOS). */
export function wanted(...ids: ScenarioId[]): boolean {
  return ids.some((id) => settings.selected.has(id));
}
