/**
 * The chaos run's report: the verdicts first, then the figures behind them, printed
 * as text on stdout and written as JSON.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { CpuFigures } from './cpu.js';
import type { InjectedFault } from './faults.js';
import type { LogTally } from './fleet.js';
import type { KeyRecord } from './load.js';
import type { ChaosOptions } from './options.js';
import type { AllEventFigures, PaymentFigures, PaymentRecovery, SlowPayment } from './payments-verdicts.js';
import { queuesAroundFaults, STATES, type QueueCounts, type QueueSeries } from './queues.js';
import type { RunRow } from '../results-log.js';
import type { LedgerFigures } from './ledger-verdict.js';
import type { ConfirmFigures, EventFigures, KeyFigures, Recovery, RefundFigures, ReplayFigures, Verdict } from './verdicts.js';

export interface ChaosReport {
  when: string;
  shape: Omit<ChaosOptions, 'out' | 'runLog' | 'env'> & { env: Record<string, string> };
  pass: boolean;
  verdicts: Verdict[];
  keys: KeyFigures;
  events: EventFigures | null;
  replays: ReplayFigures;
  confirms: ConfirmFigures | null;
  refunds: RefundFigures | null;
  /** The ledger's sums per currency (ledger-verdict.ts); null without payments. */
  ledger: LedgerFigures | null;
  throughput: { baselinePerS: number; recoveries: Recovery[]; perSecond: number[] };
  /** With `--payments`: what the payment clients saw, and the payment path's recovery after each fault. */
  payments: (PaymentFigures & { baselinePerS: number; recoveries: PaymentRecovery[]; finalPerSecond: number[]; medianBySecondS: Array<number | null> }) | null;
  /** With `--payments` (endpoint on `*`): every event of the run against the receiver. */
  allEvents: AllEventFigures | null;
  /** With `--payouts`: the live payouts' counts (bench/chaos/payouts.ts). */
  payouts: Record<string, number> | null;
  /** The BullMQ queues' counts each second and the workers' stalled-job lines (null: no Redis of the run's to read). */
  queues: QueueSeries | null;
  faults: InjectedFault[];
  requests: {
    total: number;
    outcomes: Record<string, number>;
    /** The outcomes of the requests sent in each second of the run (JSON only): what the clients met when throughput fell. */
    outcomesPerSecond: Array<Record<string, number>>;
    latencyMs: { p50: number; p99: number; max: number };
  };
  /** Commands FerretDB was sent during the run, by name (when the run started FerretDB); includes retries and sweeps. */
  mongoCommands: Record<string, number> | null;
  cpu: CpuFigures;
  /** Event-loop delay of the tool (clients and receiver): a busy tool delays answers it then blames on the service. */
  toolLag: { p99Ms: number; maxMs: number };
  logs: Record<string, number>;
  logDir: string;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

export function requestFigures(keys: KeyRecord[], startMs: number): ChaosReport['requests'] {
  const outcomes: Record<string, number> = {};
  const outcomesPerSecond: Array<Record<string, number>> = [];
  const latencies: number[] = [];
  let total = 0;
  for (const record of keys) {
    for (const attempt of [...record.attempts, ...(record.replay?.attempts ?? [])]) {
      total++;
      outcomes[attempt.outcome] = (outcomes[attempt.outcome] ?? 0) + 1;
      const second = Math.max(0, Math.floor((attempt.sentMs - startMs) / 1000));
      for (let s = outcomesPerSecond.length; s <= second; s++) outcomesPerSecond.push({});
      const bucket = outcomesPerSecond[second] as Record<string, number>;
      bucket[attempt.outcome] = (bucket[attempt.outcome] ?? 0) + 1;
      if (attempt.outcome === '200') latencies.push(attempt.durationMs);
    }
  }
  latencies.sort((a, b) => a - b);
  return { total, outcomes, outcomesPerSecond, latencyMs: { p50: percentile(latencies, 50), p99: percentile(latencies, 99), max: latencies.at(-1) ?? 0 } };
}

/** The log tally, most frequent first, as a plain object. */
export function logFigures(tally: LogTally, limit = 25): Record<string, number> {
  return Object.fromEntries([...tally.entries()].sort((a, b) => b[1] - a[1]).slice(0, limit));
}

export function printReport(report: ChaosReport): string {
  const lines: string[] = [];
  const s = report.shape;
  lines.push(
    `Chaos run ${report.when}: ${s.durationS} s at ${s.rate}/s, ${s.apis} apis, ${s.workers} workers, ` +
      `${s.endpoint ? 'one endpoint' : 'no endpoint'}, seed ${s.seed}`,
  );
  lines.push('');
  for (const v of report.verdicts) lines.push(`${v.pass ? 'PASS' : 'FAIL'}  ${v.name}: ${v.detail}`);
  lines.push('');
  const byKind = new Map<string, number>();
  for (const f of report.faults) byKind.set(f.kind, (byKind.get(f.kind) ?? 0) + 1);
  lines.push(`Faults: ${[...byKind].map(([k, n]) => `${n} ${k}`).join(', ') || 'none'}`);
  for (const f of report.faults.filter((f) => f.kind.startsWith('redis') || f.kind === 'store-restart' || f.error)) {
    const age = f.snapshotAgeMs !== undefined ? `, from a snapshot ${(f.snapshotAgeMs / 1000).toFixed(1)} s old` : '';
    const away = f.kind === 'redis-snapshot' ? ` (took ${f.tookMs} ms)` : ` (away ${f.tookMs} ms${age})`;
    lines.push(`  ${f.atS.toFixed(1)} s ${f.kind}${away}${f.error ? ` ERROR ${f.error}` : ''}`);
  }
  const slow = report.throughput.recoveries.filter((r) => r.recoveredAfterS === null || r.recoveredAfterS > 4);
  lines.push(`Recovery after each fault (s): ${report.throughput.recoveries.map((r) => `${r.kind}@${r.atS}=${r.recoveredAfterS ?? 'never'}`).join(' ')}`);
  if (slow.length) lines.push(`  slow: ${slow.map((r) => `${r.kind} ${r.target} at ${r.atS} s: ${r.recoveredAfterS ?? 'never'}`).join('; ')}`);
  lines.push(`Successes per second: ${report.throughput.perSecond.join(' ')}`);
  if (report.payments) lines.push(...paymentLines(report.payments));
  for (const e of report.allEvents?.missingExamples ?? []) {
    lines.push(`  undelivered: ${e._id} ${e.type} of ${e.object_id}, recorded ${new Date(e.created_ms).toISOString()}`);
  }
  if (report.queues) lines.push(...queueLines(report.queues, report.faults, s.recoveryS));
  const back = (kind: string) => {
    const times = report.faults.filter((f) => f.kind === kind && f.backAfterMs !== undefined).map((f) => f.backAfterMs ?? Infinity);
    if (times.length === 0) return null;
    times.sort((a, b) => a - b);
    const show = (ms: number) => (Number.isFinite(ms) ? `${(ms / 1000).toFixed(1)} s` : 'never');
    return `${kind} ready again after median ${show(times[Math.floor(times.length / 2)] as number)}, max ${show(times.at(-1) as number)}`;
  };
  const restarts = [back('api-kill'), back('worker-kill')].filter(Boolean);
  if (restarts.length) lines.push(`Restarts: ${restarts.join('; ')}`);
  if (report.mongoCommands) {
    const perCreate = (n: number) => (n / Math.max(1, report.keys.keys)).toFixed(2);
    const entries = Object.entries(report.mongoCommands).filter(([, n]) => n > 0).sort((a, b) => b[1] - a[1]);
    lines.push(`MongoDB commands per key (FerretDB counters, retries and sweeps included): ${entries.map(([c, n]) => `${c} ${perCreate(n)}`).join(', ')}`);
  }
  const c = report.cpu;
  lines.push(
    `CPU seconds over ${c.wallS} s (capacity ${c.capacity}): ${Object.entries(c.byKind).map(([k, v]) => `${k} ${v}`).join(', ')}; ` +
      `other processes on the machine ${c.others}; load average ${c.load[0]} → ${c.load[1]}; ` +
      `the tool's event-loop delay p99 ${report.toolLag.p99Ms} ms, max ${report.toolLag.maxMs} ms`,
  );
  const r = report.requests;
  lines.push(`Requests: ${r.total}; 200 latency p50 ${r.latencyMs.p50} ms, p99 ${r.latencyMs.p99} ms, max ${r.latencyMs.max} ms`);
  lines.push(`  outcomes: ${Object.entries(r.outcomes).sort((a, b) => b[1] - a[1]).map(([k, n]) => `${k} ×${n}`).join(', ')}`);
  const logs = Object.entries(report.logs);
  lines.push(`Log lines at warn or worse (api and worker, by message): ${logs.length ? '' : 'none'}`);
  for (const [message, count] of logs) lines.push(`  ${String(count).padStart(6)}  ${message}`);
  lines.push(`Logs: ${report.logDir}`);
  return lines.join('\n');
}

function paymentLines(p: NonNullable<ChaosReport['payments']>): string[] {
  const ms = (t: { p50: number; p99: number; max: number } | null) => (t ? `p50 ${t.p50} ms, p99 ${t.p99} ms, max ${t.max} ms` : 'never');
  return [
    `Payments: ${p.payments} confirmed, final ${JSON.stringify(p.final)}; confirm → final ${ms(p.confirmToFinalMs)}; ` +
      `${p.polls} polls (${p.pollFailures} unanswered)`,
    `  of which confirm → its 200 ${ms(p.confirmAnswerMs ?? null)}; its 200 → final ${ms(p.answerToFinalMs ?? null)}`,
    `Payment recovery after each fault (s; longest stretch without a payment final): ` +
      p.recoveries.map((r) => `${r.kind}@${r.atS}=${r.recoveredAfterS ?? 'never'} (${r.stalledS})`).join(' '),
    `Payments final per second: ${p.finalPerSecond.join(' ')}`,
    `Goodput: ${goodput(p.finalPerSecond)} payments final a second over the load, for ${p.baselinePerS.toFixed(1)} a second before the first fault`,
    `Confirm → final, median by the second of the confirm (s): ${p.medianBySecondS.map((m) => m ?? '-').join(' ')}`,
    ...(p.slowest?.length ? ['Slowest payments (s into the run: confirm sent, its attempts, its 200, the transitions recorded, seen final):', ...p.slowest.map(slowLine)] : []),
  ];
}

/** Payments final a second, from the first second one was final to the last. */
function goodput(perSecond: number[]): string {
  const first = perSecond.findIndex((n) => n > 0);
  let last = perSecond.length - 1;
  while (last > first && (perSecond[last] ?? 0) === 0) last--;
  if (first < 0) return '0';
  const span = perSecond.slice(first, last + 1);
  return (span.reduce((sum, n) => sum + n, 0) / span.length).toFixed(1);
}

function slowLine(p: SlowPayment): string {
  const steps = p.steps.map((step) => `${step.type} ${step.atS}`).join(', ');
  return `  ${p.id} ${p.tookMs === null ? 'never final' : `${seconds(p.tookMs)} s`}: confirm ${p.confirmS} (${p.attempts}), 200 ${p.answeredS ?? '-'}; ${steps || 'no transition'}; final ${p.finalS ?? '-'}`;
}

function seconds(ms: number): string {
  return (ms / 1000).toFixed(ms < 10_000 ? 2 : 1);
}

function countsText(counts: QueueCounts | null): string {
  return counts ? STATES.map((state) => counts[state]).join('/') : '-';
}

/** The queues' peaks over the run, and around each Redis and store fault (wait/active/delayed/due60s/overdue/failed). */
export function queueLines(series: QueueSeries, faults: InjectedFault[], windowS: number): string[] {
  const lines: string[] = [];
  const read = series.samples.filter((s) => s.queues);
  const names = Object.keys(read[0]?.queues ?? {});
  const peaks = names.map((name) => {
    const peak = Object.fromEntries(STATES.map((state) => [state, Math.max(0, ...read.map((s) => s.queues![name]?.[state] ?? 0))])) as QueueCounts;
    return `${name} ${countsText(peak)}`;
  });
  const stalled = series.stalledPerSecond.flatMap((counts, second) => {
    const n = Object.values(counts).reduce((a, b) => a + b, 0);
    return n ? [`${second}s:${n}`] : [];
  });
  lines.push(
    `Queues, peak ${STATES.join('/')} (delayed jobs due within 60 s; overdue: due, not yet moved to wait) over ${series.samples.length} s ` +
      `(${series.samples.length - read.length} unread): ${peaks.join(', ')}`,
  );
  lines.push(`Stalled-job log lines per second: ${stalled.join(' ') || 'none'}`);
  if (series.intentsJobs?.length) {
    const cells = series.intentsJobs.map((b) => `${b.fromS}s:${b.jobs} ${seconds(b.waitMs.p50)}/${seconds(b.waitMs.p90)} ${seconds(b.runMs.p50)}/${seconds(b.runMs.p90)}${b.again ? ` ×${b.again}` : ''}`);
    lines.push(`Intents jobs completed, by the 2 s they came due in (jobs, wait p50/p90 s, last attempt's run p50/p90 s, ×run again): ${cells.join(' | ')}`);
  }
  for (const around of queuesAroundFaults(series, faults, windowS)) {
    const moved = Object.entries(around.queues)
      .filter(([, q]) => STATES.some((state) => q.peak[state] > (q.before?.[state] ?? 0)))
      .map(([name, q]) => {
        const grew = Object.entries(q.peakAtS).filter(([state]) => q.peak[state as keyof QueueCounts] > (q.before?.[state as keyof QueueCounts] ?? 0));
        const when = grew.map(([state, at]) => `${state} +${at} s`).join(', ');
        return `${name} ${countsText(q.before)} → peak ${countsText(q.peak)} (${when}) → ${countsText(q.after)}`;
      });
    const stalledN = Object.entries(around.stalled).map(([q, n]) => `${q} ${n}`).join(', ');
    lines.push(
      `  ${around.kind}@${around.atS}: ${moved.join('; ') || 'no queue grew'}; ${around.unreadS} s unread; stalled lines ${stalledN || 'none'}`,
    );
  }
  return lines;
}

export function writeReport(report: ChaosReport, file: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
}

/**
 * The columns of bench/results/chaos-runs.csv, one row per run: when, which commit, how
 * loaded the machine was, the run's shape, the five verdicts as figures (`n/m`, empty
 * when the verdict did not apply), the slowest recovery (`never` when a fault did not
 * recover within the run's limit) and the 200s' p99 latency.
 */
export const RUN_LOG_COLUMNS = [
  'when', 'sha', 'load_avg_1m_start', 'load_avg_1m_end', 'cpus', 'other_cpu_s',
  'duration_s', 'rate', 'apis', 'workers', 'confirms_fraction', 'seed', 'env', 'dist',
  'pass', 'keys_200', 'duplicated', 'lost', 'orphans', 'events_delivered', 'replays_flagged', 'confirms_succeeded',
  'faults_recovered', 'slowest_recovery_s', 'p99_ms',
] as const;

/**
 * The row of `report` for the run log, `sha` being the commit checked out in `root`;
 * `dist` is set only when the run ran another build (`--dist`), `env` when `--env`
 * configured the processes (and `--node-args`, as `node-args=…`: a profiled run is slower).
 */
export function runLogRow(report: ChaosReport, sha: string, root: string): RunRow {
  const s = report.shape;
  const recoveries = report.throughput.recoveries;
  const recovered = recoveries.filter((r) => r.recoveredAfterS !== null);
  const slowest = recoveries.some((r) => r.recoveredAfterS === null)
    ? 'never'
    : recovered.length ? Math.max(...recovered.map((r) => r.recoveredAfterS as number)) : null;
  const k = report.keys;
  const e = report.events;
  const r = report.replays;
  const c = report.confirms;
  const p = report.payments;
  return {
    when: report.when,
    sha,
    load_avg_1m_start: report.cpu.load[0],
    load_avg_1m_end: report.cpu.load[1],
    cpus: os.cpus().length,
    other_cpu_s: report.cpu.others,
    duration_s: s.durationS,
    rate: s.rate,
    apis: s.apis,
    workers: s.workers,
    confirms_fraction: s.confirmFraction,
    seed: s.seed,
    env: [...Object.entries(s.env ?? {}).map(([k, v]) => `${k}=${v}`), ...(s.nodeArgs?.length ? [`node-args=${s.nodeArgs.join(' ')}`] : []), ...(s.cpuHog ? [`cpu-hog=${s.cpuHog}`] : []), ...(s.redisCluster ? ['redis-cluster'] : []), ...(s.payouts ? [`payouts=${s.payouts}`] : [])].join(' '),
    dist: path.resolve(s.dist) === path.join(root, 'dist') ? '' : s.dist,
    pass: report.pass,
    keys_200: `${k.answered200}/${k.keys}`,
    duplicated: k.duplicated,
    lost: k.lost,
    orphans: k.orphans,
    events_delivered: e ? `${e.delivered}/${e.expected}` : null,
    replays_flagged: `${r.replaysFlagged}/${r.replaysAnswered}`,
    confirms_succeeded: p ? `${p.final.succeeded ?? 0}/${p.payments}` : c ? `${c.succeeded}/${c.confirms}` : null,
    faults_recovered: `${recovered.length}/${recoveries.length}`,
    slowest_recovery_s: slowest,
    p99_ms: report.requests.latencyMs.p99,
  };
}
