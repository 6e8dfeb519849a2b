/**
 * The benchmark (issue 6): autocannon on loopback against the real api and worker
 * processes (compiled, from dist/) and a baseline Koa process, on the Redis and
 * MongoDB of REDIS_URL / MONGODB_URL. `npm run bench` (scripts/bench.mjs) starts a
 * throw-away stack and runs this; see bench/README.md for the scenarios and knobs.
 *
 * Prints progress on stderr, then a table and the goals on stdout, and writes
 * bench/results/latest.json. Timings are reported, never asserted: the exit code
 * is non-zero only when the benchmark itself could not run.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { Queue } from 'bullmq';
import { MongoClient } from 'mongodb';
import { seedPaymentIntents } from './seed.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const RESULTS_FILE = path.join(ROOT, 'bench', 'results', 'latest.json');

const SCENARIO_IDS = ['S0', 'S1-c16', 'S1-c64', 'S2-c16', 'S2-c64', 'S3-c64', 'S4', 'S5-10k', 'S5-1m', 'S5-1m-deep'] as const;
type ScenarioId = (typeof SCENARIO_IDS)[number];

/** What each scenario is compared with; S5 compares p50, the others rps. */
const BASELINES: Record<ScenarioId, ScenarioId | null> = {
  S0: null,
  'S1-c16': null,
  'S1-c64': null,
  'S2-c16': 'S1-c16',
  'S2-c64': 'S1-c64',
  'S3-c64': 'S1-c64',
  S4: 'S0',
  'S5-10k': null,
  'S5-1m': 'S5-10k',
  'S5-1m-deep': 'S5-1m',
};

const PROJECT = 'bench';
const CREATE_BODY = JSON.stringify({ amount: 2000, currency: 'usd', description: 'Bench order', metadata: { order_id: 'bench-1' } });
const LIST_LIMIT = 100;

// ---------------------------------------------------------------------------
// Settings

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

const settings = {
  redisUrl: process.env.REDIS_URL ?? '',
  mongoUrl: process.env.MONGODB_URL ?? '',
  durationS: envNumber('BENCH_DURATION_S', 10),
  warmupS: envNumber('BENCH_WARMUP_S', 2),
  s5With1m: envFlag('BENCH_S5_1M', true),
  s5SmallAmount: envNumber('BENCH_S5_10K_AMOUNT', 20),
  s5LargeAmount: envNumber('BENCH_S5_1M_AMOUNT', 3),
  s5TimeoutS: envNumber('BENCH_S5_TIMEOUT_S', 900),
  seedBatch: envNumber('BENCH_SEED_BATCH', 5000),
  selected: selectedScenarios(),
};

// ---------------------------------------------------------------------------
// Output

function progress(message: string): void {
  process.stderr.write(`[bench] ${new Date().toISOString().slice(11, 19)} ${message}\n`);
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

// ---------------------------------------------------------------------------
// Processes

/** A child process of the benchmark, with the tail of its output kept for errors. */
class Child {
  readonly lines: string[] = [];
  readonly exited: Promise<number | null>;
  private exitCode: number | null | undefined;
  private readonly child: ChildProcess;

  constructor(
    readonly name: string,
    entry: string,
    env: Record<string, string>,
  ) {
    this.child = spawn(process.execPath, [path.join(ROOT, 'dist', entry)], {
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

  async stop(timeoutMs = 15_000): Promise<void> {
    this.kill('SIGTERM');
    const timer = setTimeout(() => this.kill('SIGKILL'), timeoutMs);
    await this.exited;
    clearTimeout(timer);
  }

  tail(n = 15): string {
    return this.lines.slice(-n).join('\n');
  }

  /** Throws with the output tail when the process has exited. */
  assertRunning(): void {
    if (!this.running) throw new Error(`${this.name} exited (code ${this.exitCode}):\n${this.tail()}`);
  }
}

const live = new Set<Child>();

function killAll(): void {
  for (const child of live) child.kill('SIGKILL');
}
process.on('exit', killAll);
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.on(signal, () => {
    progress(`${signal}: stopping`);
    for (const child of live) child.kill('SIGTERM');
    setTimeout(() => process.exit(130), 3000).unref();
  });
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
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

/** The median, to 0.1; null for no values. */
function median(values: number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((x, y) => x - y);
  const mid = Math.floor(sorted.length / 2);
  const value = sorted.length % 2 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
  return Math.round(value * 10) / 10;
}

/** Resident set size of a process, in MiB, from /proc/<pid>/status. */
function rssMb(pid: number): number | null {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
    return match ? Math.round((Number(match[1]) / 1024) * 10) / 10 : null;
  } catch {
    return null;
  }
}

// ---------------------------------------------------------------------------
// The service under test, and the baseline process

interface Service {
  baseUrl: string;
  dbName: string;
  api: Child;
  workers: Child[];
  key: string;
  stop(): Promise<void>;
}

async function startService(mongo: MongoClient, group: string, workerCount: number): Promise<Service> {
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
  };
  if (process.env.WORKER_CONCURRENCY) env.WORKER_CONCURRENCY = process.env.WORKER_CONCURRENCY;
  const baseUrl = `http://127.0.0.1:${port}`;
  const api = new Child('api', 'api/main.js', env);
  const workers = Array.from({ length: workerCount }, (_, i) => new Child(`worker${i + 1}`, 'worker/main.js', env));
  const stop = async () => {
    await Promise.all([api, ...workers].map((c) => c.stop()));
    await mongo.db(dbName).dropDatabase().catch(() => undefined);
  };
  try {
    // At LOG_LEVEL=warn neither process prints that it is ready: ask the api, and
    // count the workers BullMQ sees on the creates queue.
    await waitUntil('the api', api, () => httpOk(`${baseUrl}/healthz`));
    if (workerCount > 0) {
      const queue = new Queue('creates', { connection: { url: settings.redisUrl }, prefix });
      try {
        await waitUntil(`${workerCount} worker(s)`, workers[0] as Child, async () => {
          for (const w of workers) w.assertRunning();
          return (await queue.getWorkersCount()) >= workerCount;
        });
      } finally {
        await queue.close();
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
function reportLogs(children: Child[]): void {
  for (const child of children) {
    if (child.lines.length === 0) continue;
    progress(`${child.name} logged ${child.lines.length} line(s) (warn or worse); the last ones:\n${child.tail(5)}`);
  }
}

async function startBaseline(mongo: MongoClient): Promise<{ baseUrl: string; proc: Child; stop(): Promise<void> }> {
  const port = await freePort();
  const dbName = uniqueName('bench_baseline');
  const proc = new Child('baseline', 'bench/baseline-server.js', {
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

// ---------------------------------------------------------------------------
// Measuring

interface Measurement {
  rps: number;
  p50_ms: number;
  p99_ms: number;
  non2xx: number;
  requests: number;
  mismatches: number;
}

interface Load {
  url: string;
  connections: number;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  /** A fresh `Idempotency-Key` per request. */
  uniqueKeys?: boolean;
  /** A fixed number of requests instead of a duration. */
  amount?: number;
  durationS?: number;
  timeoutS?: number;
  verifyBody?: (body: string) => boolean;
}

const round = (value: number, digits = 2) => Math.round(value * 10 ** digits) / 10 ** digits;

async function cannon(load: Load): Promise<Measurement> {
  const tag = randomBytes(6).toString('hex');
  let n = 0;
  const options: autocannon.Options = {
    url: load.url,
    connections: load.connections,
    method: load.method ?? 'GET',
    headers: load.headers ?? {},
    body: load.body,
    timeout: load.timeoutS ?? 30,
    ...(load.amount !== undefined ? { amount: load.amount } : { duration: load.durationS ?? settings.durationS }),
    ...(load.verifyBody ? { verifyBody: load.verifyBody as autocannon.Options['verifyBody'] } : {}),
  };
  if (load.uniqueKeys) {
    options.requests = [
      { setupRequest: (req) => ({ ...req, headers: { ...req.headers, 'idempotency-key': `bench-${tag}-${n++}` } }) },
    ];
  }
  const result = await autocannon(options);
  const rps = result.requests.total / Math.max(result.duration, 0.001);
  return {
    // Lists at 1M take minutes per request: keep a few significant digits there.
    rps: rps >= 10 ? round(rps, 1) : Number(rps.toPrecision(3)),
    p50_ms: round(result.latency.p50),
    p99_ms: round(result.latency.p99),
    non2xx: result.non2xx + result.errors,
    requests: result.requests.total,
    mismatches: result.mismatches,
  };
}

interface ScenarioRow {
  id: ScenarioId;
  rps: number | null;
  p50_ms: number | null;
  p99_ms: number | null;
  non2xx: number | null;
  baseline: ScenarioId | null;
  ratio: number | null;
  skipped?: true;
  reason?: string;
}

const measured = new Map<ScenarioId, Measurement>();
const skipped = new Map<ScenarioId, string>();
/** Extra rows for the printed table only (the second S2 run). */
const extraRows: Array<{ label: string; m: Measurement }> = [];

function wanted(...ids: ScenarioId[]): boolean {
  return ids.some((id) => settings.selected.has(id));
}

function describe(m: Measurement): string {
  const extra = m.mismatches ? `, ${m.mismatches} unexpected bodies` : '';
  return `${m.rps} req/s, p50 ${m.p50_ms} ms, p99 ${m.p99_ms} ms, ${m.requests} requests, non-2xx/errors ${m.non2xx}${extra}`;
}

/** A timed scenario: a warm-up whose numbers are dropped, then the measured run. */
async function timed(id: string, load: Load): Promise<Measurement> {
  if (settings.warmupS > 0) {
    progress(`${id}: warm-up ${settings.warmupS} s at ${load.connections} connections`);
    await cannon({ ...load, durationS: settings.warmupS });
  }
  progress(`${id}: ${settings.durationS} s at ${load.connections} connections`);
  const m = await cannon(load);
  progress(`${id}: ${describe(m)}`);
  return m;
}

// ---------------------------------------------------------------------------
// Scenario groups

async function baselineGroup(mongo: MongoClient): Promise<void> {
  if (!wanted('S0', 'S1-c16', 'S1-c64')) return;
  progress('baselines: starting the baseline Koa process');
  const baseline = await startBaseline(mongo);
  try {
    if (wanted('S0')) measured.set('S0', await timed('S0', { url: `${baseline.baseUrl}/ceiling`, connections: 64 }));
    // Any key-shaped token passes the baseline's header check.
    const headers = { Authorization: `Bearer sk_test_${'0'.repeat(40)}`, 'Content-Type': 'application/json' };
    for (const c of [16, 64] as const) {
      const id = `S1-c${c}` as const;
      if (!wanted(id)) continue;
      measured.set(id, await timed(id, { url: `${baseline.baseUrl}/direct`, method: 'POST', connections: c, headers, body: CREATE_BODY }));
    }
    baseline.proc.assertRunning();
  } finally {
    reportLogs([baseline.proc]);
    await baseline.stop();
  }
}

function createLoad(service: Service, connections: number): Load {
  return {
    url: `${service.baseUrl}/v1/payment_intents`,
    method: 'POST',
    connections,
    headers: { Authorization: `Bearer ${service.key}`, 'Content-Type': 'application/json' },
    body: CREATE_BODY,
    uniqueKeys: true,
  };
}

const rss: Record<'api' | 'worker' | 'api_second_run' | 'worker_second_run', number | null> = {
  api: null,
  worker: null,
  api_second_run: null,
  worker_second_run: null,
};

async function createGroup(mongo: MongoClient): Promise<void> {
  if (!wanted('S2-c16', 'S2-c64')) return;
  progress('S2: starting 1 api and 1 worker process');
  const service = await startService(mongo, 's2', 1);
  try {
    const worker = service.workers[0] as Child;
    for (const run of [1, 2]) {
      // A single reading lands anywhere in V8's GC cycle (the heap swings by tens of
      // MiB under load); the median of readings through the run is the steady state.
      const samples = { api: [] as number[], worker: [] as number[] };
      const sampler = setInterval(() => {
        const a = rssMb(service.api.pid);
        const w = rssMb(worker.pid);
        if (a !== null) samples.api.push(a);
        if (w !== null) samples.worker.push(w);
      }, 250);
      try {
        for (const c of [16, 64] as const) {
          const id = `S2-c${c}` as const;
          if (!wanted(id)) continue;
          const m = await timed(run === 1 ? id : `${id} (run 2)`, createLoad(service, c));
          if (run === 1) measured.set(id, m);
          else extraRows.push({ label: `${id} (run 2)`, m });
        }
      } finally {
        clearInterval(sampler);
      }
      service.api.assertRunning();
      worker.assertRunning();
      const api = median(samples.api);
      const wrk = median(samples.worker);
      if (run === 1) Object.assign(rss, { api, worker: wrk });
      else Object.assign(rss, { api_second_run: api, worker_second_run: wrk });
      progress(`S2 run ${run}: RSS api ${api} MiB, worker ${wrk} MiB`);
    }
  } finally {
    reportLogs([service.api, ...service.workers]);
    await service.stop();
  }
}

async function twoWorkerGroup(mongo: MongoClient): Promise<void> {
  if (!wanted('S3-c64')) return;
  progress('S3: starting 1 api and 2 worker processes');
  const service = await startService(mongo, 's3', 2);
  try {
    measured.set('S3-c64', await timed('S3-c64', createLoad(service, 64)));
    for (const child of [service.api, ...service.workers]) child.assertRunning();
  } finally {
    reportLogs([service.api, ...service.workers]);
    await service.stop();
  }
}

async function replayGroup(mongo: MongoClient): Promise<void> {
  if (!wanted('S4')) return;
  progress('S4: starting 1 api and 1 worker process');
  const service = await startService(mongo, 's4', 1);
  try {
    const headers = {
      Authorization: `Bearer ${service.key}`,
      'Content-Type': 'application/json',
      'Idempotency-Key': `bench-replay-${randomBytes(6).toString('hex')}`,
    };
    const first = await fetch(`${service.baseUrl}/v1/payment_intents`, { method: 'POST', headers, body: CREATE_BODY });
    const firstBody = await first.text();
    if (first.status !== 200) throw new Error(`S4: the first create failed: ${first.status} ${firstBody}`);
    const again = await fetch(`${service.baseUrl}/v1/payment_intents`, { method: 'POST', headers, body: CREATE_BODY });
    if ((await again.text()) !== firstBody || again.headers.get('idempotent-replayed') !== 'true') {
      throw new Error('S4: the second request with the key was not a byte-for-byte replay');
    }
    measured.set(
      'S4',
      await timed('S4', {
        url: `${service.baseUrl}/v1/payment_intents`,
        method: 'POST',
        connections: 64,
        headers,
        body: CREATE_BODY,
        verifyBody: (body) => body === firstBody,
      }),
    );
    service.api.assertRunning();
  } finally {
    reportLogs([service.api, ...service.workers]);
    await service.stop();
  }
}

function isFullPage(body: string): boolean {
  try {
    const page = JSON.parse(body) as { object?: string; data?: unknown[] };
    return page.object === 'list' && Array.isArray(page.data) && page.data.length === LIST_LIMIT;
  } catch {
    return false;
  }
}

async function listScenario(id: ScenarioId, service: Service, query: string, amount: number): Promise<void> {
  const url = `${service.baseUrl}/v1/payment_intents?${query}`;
  progress(`${id}: ${amount} request(s) at 1 connection (GET ?${query.replace(/starting_after=[^&]+/, 'starting_after=…')})`);
  const m = await cannon({
    url,
    connections: 1,
    amount,
    headers: { Authorization: `Bearer ${service.key}` },
    timeoutS: settings.s5TimeoutS,
    verifyBody: isFullPage,
  });
  progress(`${id}: ${describe(m)}`);
  measured.set(id, m);
}

async function listGroup(mongo: MongoClient): Promise<void> {
  if (!settings.s5With1m) {
    for (const id of ['S5-1m', 'S5-1m-deep'] as const) {
      if (wanted(id)) skipped.set(id, 'BENCH_S5_1M=0: the 1M seeding was not asked for');
    }
  }
  const want1m = settings.s5With1m && wanted('S5-1m', 'S5-1m-deep');
  if (!wanted('S5-10k') && !want1m) return;
  // Lists need no worker; only the api serves them.
  progress('S5: starting 1 api process');
  const service = await startService(mongo, 's5', 0);
  try {
    const db = mongo.db(service.dbName);
    const small = 10_000;
    const large = 1_000_000;
    const seedProgress = (label: string) => {
      let last = 0;
      const began = Date.now();
      return (done: number, count: number) => {
        if (done !== count && done - last < 50_000) return;
        last = done;
        const s = (Date.now() - began) / 1000;
        progress(`${label}: ${done}/${count} (${Math.round(done / Math.max(s, 0.001))} docs/s)`);
      };
    };
    // The 10k newest objects first; the older ones, for 1M, go underneath them.
    const recent = await seedPaymentIntents(db, {
      project: PROJECT,
      livemode: false,
      count: small,
      endMs: Date.now() - 60_000,
      batchSize: settings.seedBatch,
      onProgress: seedProgress('seeding 10k'),
    });
    progress(`seeded ${small} objects in ${recent.seconds.toFixed(1)} s`);

    if (wanted('S5-10k')) {
      const began = Date.now();
      const res = await fetch(`${service.baseUrl}/v1/payment_intents?limit=${LIST_LIMIT}`, { headers: { Authorization: `Bearer ${service.key}` } });
      const body = await res.text();
      if (res.status !== 200 || !isFullPage(body)) throw new Error(`S5: the first list failed: ${res.status} ${body.slice(0, 300)}`);
      progress(`S5-10k: warm-up request took ${Date.now() - began} ms`);
      await listScenario('S5-10k', service, `limit=${LIST_LIMIT}`, settings.s5SmallAmount);
    }

    if (want1m) {
      const older = await seedPaymentIntents(db, {
        project: PROJECT,
        livemode: false,
        count: large - small,
        endMs: recent.startMs - 1000,
        batchSize: settings.seedBatch,
        onProgress: seedProgress('seeding 1M'),
      });
      progress(`seeded ${large - small} more objects in ${older.seconds.toFixed(1)} s (${large} in the project)`);
      if (wanted('S5-1m')) await listScenario('S5-1m', service, `limit=${LIST_LIMIT}`, settings.s5LargeAmount);
      if (wanted('S5-1m-deep')) {
        await listScenario('S5-1m-deep', service, `limit=${LIST_LIMIT}&starting_after=${older.nearOldestId}`, settings.s5LargeAmount);
      }
    }
    service.api.assertRunning();
  } finally {
    reportLogs([service.api]);
    await service.stop();
  }
}

// ---------------------------------------------------------------------------
// Report

function rows(): ScenarioRow[] {
  return SCENARIO_IDS.map((id): ScenarioRow => {
    const baseline = BASELINES[id];
    const m = measured.get(id);
    if (!m) {
      const reason = skipped.get(id) ?? 'not in BENCH_SCENARIOS';
      return { id, rps: null, p50_ms: null, p99_ms: null, non2xx: null, baseline, ratio: null, skipped: true, reason };
    }
    const base = baseline ? measured.get(baseline) : undefined;
    let ratio: number | null = null;
    if (base) {
      const isList = id.startsWith('S5');
      const [num, den] = isList ? [m.p50_ms, base.p50_ms] : [m.rps, base.rps];
      ratio = den > 0 ? round(num / den, 3) : null;
    }
    return { id, rps: m.rps, p50_ms: m.p50_ms, p99_ms: m.p99_ms, non2xx: m.non2xx, baseline, ratio };
  });
}

function table(list: ScenarioRow[]): string {
  const header = ['id', 'rps', 'p50 ms', 'p99 ms', 'non2xx', 'baseline', 'ratio'];
  const measuredRows = list
    .filter((r) => !r.skipped)
    .map((r) => [r.id, String(r.rps), String(r.p50_ms), String(r.p99_ms), String(r.non2xx), r.baseline ?? '-', r.ratio === null ? '-' : String(r.ratio)]);
  for (const { label, m } of extraRows) measuredRows.push([label, String(m.rps), String(m.p50_ms), String(m.p99_ms), String(m.non2xx), '-', '-']);
  const idWidth = Math.max(...[header, ...measuredRows].map((r) => r[0]!.length), ...list.map((r) => r.id.length));
  const widths = header.map((_, i) => (i === 0 ? idWidth : Math.max(...[header, ...measuredRows].map((r) => r[i]!.length))));
  // Text columns to the left, numbers to the right.
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 || i === 5 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  const out = [line(header), line(widths.map((w) => '-'.repeat(w)))];
  for (const r of list) {
    out.push(r.skipped ? `${r.id.padEnd(idWidth)}  skipped: ${r.reason}` : line(measuredRows.find((row) => row[0] === r.id)!));
  }
  for (const row of measuredRows.slice(list.filter((r) => !r.skipped).length)) out.push(line(row));
  return out.join('\n');
}

interface Goal {
  goal: string;
  status: 'met' | 'NOT met' | 'n/a';
  detail: string;
}

function goals(list: ScenarioRow[]): Goal[] {
  const byId = new Map(list.map((r) => [r.id, r]));
  const out: Goal[] = [];
  const check = (goal: string, ok: boolean | null, detail: string) =>
    out.push({ goal, status: ok === null ? 'n/a' : ok ? 'met' : 'NOT met', detail: ok === null ? 'not measured' : detail });
  const pair = (a: ScenarioId, b: ScenarioId) => {
    const x = byId.get(a);
    const y = byId.get(b);
    return x && y && !x.skipped && !y.skipped ? [x, y] as const : null;
  };
  for (const c of [16, 64]) {
    const p = pair(`S2-c${c}` as ScenarioId, `S1-c${c}` as ScenarioId);
    check(
      `S2-c${c} rps >= 50% of S1-c${c}`,
      p ? (p[0].rps as number) >= 0.5 * (p[1].rps as number) : null,
      p ? `${p[0].rps} vs ${p[1].rps} req/s (${Math.round(((p[0].rps as number) / (p[1].rps as number)) * 100)}%)` : '',
    );
    check(
      `S2-c${c} p99 <= 3x S1-c${c} p99`,
      p ? (p[0].p99_ms as number) <= 3 * (p[1].p99_ms as number) : null,
      p ? `${p[0].p99_ms} vs ${p[1].p99_ms} ms (${round((p[0].p99_ms as number) / (p[1].p99_ms as number), 1)}x)` : '',
    );
  }
  const s4 = pair('S4', 'S0');
  check('S4 rps >= 50% of S0', s4 ? (s4[0].rps as number) >= 0.5 * (s4[1].rps as number) : null, s4 ? `${s4[0].rps} vs ${s4[1].rps} req/s` : '');
  const big = pair('S5-1m', 'S5-10k');
  check(
    'S5 p50 at 1M <= 1.5x p50 at 10k',
    big ? (big[0].p50_ms as number) <= 1.5 * (big[1].p50_ms as number) : null,
    big ? `${big[0].p50_ms} vs ${big[1].p50_ms} ms (${round((big[0].p50_ms as number) / (big[1].p50_ms as number), 1)}x)` : '',
  );
  const deep = pair('S5-1m-deep', 'S5-1m');
  check(
    'S5 deep page p50 <= 1.5x first page',
    deep ? (deep[0].p50_ms as number) <= 1.5 * (deep[1].p50_ms as number) : null,
    deep ? `${deep[0].p50_ms} vs ${deep[1].p50_ms} ms (${round((deep[0].p50_ms as number) / (deep[1].p50_ms as number), 2)}x)` : '',
  );
  const ran = list.filter((r) => !r.skipped);
  const failing = ran.filter((r) => (r.non2xx ?? 0) > 0);
  check(
    'no non-2xx anywhere',
    ran.length ? failing.length === 0 && extraRows.every((r) => r.m.non2xx === 0) : null,
    failing.length ? `non-2xx/errors in ${failing.map((r) => `${r.id} (${r.non2xx})`).join(', ')}` : 'none',
  );
  for (const name of ['api', 'worker'] as const) {
    const first = rss[name];
    const second = rss[`${name}_second_run`];
    check(
      `${name} RSS after the second S2 run <= 110% of the first`,
      first !== null && second !== null ? second <= 1.1 * first : null,
      `${first} -> ${second} MiB`,
    );
  }
  return out;
}

function machine(): string {
  const cpus = os.cpus();
  return `${cpus.length} × ${cpus[0]?.model ?? 'unknown CPU'}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, node ${process.version}`;
}

function loadAverage(): string {
  return os.loadavg().map((l) => l.toFixed(2)).join(' ');
}

// ---------------------------------------------------------------------------

async function main(): Promise<void> {
  if (!settings.redisUrl || !settings.mongoUrl) throw new Error('REDIS_URL and MONGODB_URL must be set: run the benchmark with `npm run bench`');
  const when = new Date().toISOString();
  progress(`${machine()}; scenarios ${[...settings.selected].join(', ')}; ${settings.durationS} s each (+${settings.warmupS} s warm-up)`);
  progress(`load average ${loadAverage()} (anything else running on the machine skews the numbers)`);
  const mongo = new MongoClient(settings.mongoUrl);
  await mongo.connect();
  try {
    await baselineGroup(mongo);
    await createGroup(mongo);
    await twoWorkerGroup(mongo);
    await replayGroup(mongo);
    await listGroup(mongo);
  } finally {
    await mongo.close();
  }

  const list = rows();
  const report = { machine: machine(), when, scenarios: list, rss_mb: rss };
  fs.mkdirSync(path.dirname(RESULTS_FILE), { recursive: true });
  const json = `${JSON.stringify(report, null, 2)}\n`;
  fs.writeFileSync(RESULTS_FILE, json);
  // A copy per run, since the next run (anyone's, in this tree) replaces latest.json.
  const copy = path.join(path.dirname(RESULTS_FILE), `run-${when.replace(/[:.]/g, '-')}.json`);
  fs.writeFileSync(copy, json);

  const out: string[] = ['', table(list), ''];
  out.push(`RSS during S2, median of 4 readings a second (MiB): api ${rss.api} -> ${rss.api_second_run}, worker ${rss.worker} -> ${rss.worker_second_run} (first -> second run)`);
  out.push(`Load average at the end: ${loadAverage()}`);
  out.push('', 'Goals (reported, not asserted):');
  for (const g of goals(list)) out.push(`  [${g.status.padEnd(7)}] ${g.goal}: ${g.detail}`);
  out.push('', `Written to ${path.relative(process.cwd(), RESULTS_FILE)} (and ${path.relative(process.cwd(), copy)})`);
  process.stdout.write(`${out.join('\n')}\n`);
}

main().catch((err: unknown) => {
  progress(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  killAll();
  process.exit(1);
});
