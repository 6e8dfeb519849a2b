/**
 * Measuring: autocannon runs (timed, or a fixed number of requests), the resident
 * memory of the processes under test, and medians.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import autocannon from 'autocannon';
import { progress } from './progress.js';
import { settings } from './settings.js';

/** What one autocannon run measured. */
export interface Measurement {
  rps: number;
  p50_ms: number;
  p99_ms: number;
  /** Non-2xx answers plus connection errors and timeouts. */
  non2xx: number;
  requests: number;
  /** Answers that `verifyBody` rejected. */
  mismatches: number;
}

/** The requests of one autocannon run. */
export interface Load {
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

/** Rounds to `digits` decimals. */
export const round = (value: number, digits = 2) => Math.round(value * 10 ** digits) / 10 ** digits;

/** Runs autocannon once (for `durationS`, BENCH_DURATION_S by default, or `amount` requests). */
export async function cannon(load: Load): Promise<Measurement> {
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

/** A measurement as one line of progress. */
export function describe(m: Measurement): string {
  const extra = m.mismatches ? `, ${m.mismatches} unexpected bodies` : '';
  return `${m.rps} req/s, p50 ${m.p50_ms} ms, p99 ${m.p99_ms} ms, ${m.requests} requests, non-2xx/errors ${m.non2xx}${extra}`;
}

/** A timed scenario: a warm-up whose numbers are dropped, then the measured run. */
export async function timed(id: string, load: Load): Promise<Measurement> {
  if (settings.warmupS > 0) {
    progress(`${id}: warm-up ${settings.warmupS} s at ${load.connections} connections`);
    await cannon({ ...load, durationS: settings.warmupS });
  }
  progress(`${id}: ${settings.durationS} s at ${load.connections} connections`);
  const m = await cannon(load);
  progress(`${id}: ${describe(m)}`);
  return m;
}

/** The median, to 0.1; null for no values. */
export function median(values: number[]): number | null {
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

/**
 * Reads the RSS of each named process 4 times a second, in MiB, until `stop()`.
 * A single reading lands anywhere in V8's GC cycle (the heap swings by tens of MiB
 * under load); the {@link median} of the readings through a run is the steady state.
 */
export function sampleRss<Name extends string>(pids: Record<Name, number>): { readings: Record<Name, number[]>; stop(): void } {
  const names = Object.keys(pids) as Name[];
  const readings = Object.fromEntries(names.map((name) => [name, [] as number[]])) as Record<Name, number[]>;
  const timer = setInterval(() => {
    for (const name of names) {
      const mb = rssMb(pids[name]);
      if (mb !== null) readings[name].push(mb);
    }
  }, 250);
  return { readings, stop: () => clearInterval(timer) };
}
