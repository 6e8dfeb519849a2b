/**
 * The report: the rows of every scenario with their ratios to their baselines, the
 * JSON results (bench/results/), and the table and the goals on stdout. Goals are
 * reported, never asserted.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { round, type Measurement } from './measure.js';
import { appendRunRow, gitSha, type RunRow } from './results-log.js';
import { BASELINES, REDIS_RUNS_LOG, RESULTS_FILE, ROOT, RUNS_LOG, SCENARIO_IDS, settings, type ScenarioId } from './settings.js';

/** The median RSS (MiB) of the api and the worker through each of the two S2 runs. */
export type RssReadings = Record<'api' | 'worker' | 'api_second_run' | 'worker_second_run', number | null>;

/** A row for the printed table only, not the JSON (the second S2 run). */
export interface ExtraRow {
  label: string;
  m: Measurement;
}

/** What a scenario group hands back to the report. */
export interface GroupResult {
  measured: Map<ScenarioId, Measurement>;
  /** Scenarios asked for but not run, with the reason (the default reason is BENCH_SCENARIOS). */
  skipped?: Map<ScenarioId, string>;
  extraRows?: ExtraRow[];
  rss?: RssReadings;
  /** Figures of a scenario beyond rps and latency (S6: confirm to event), written and printed as they are. */
  details?: Record<string, Record<string, number | string | null>>;
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

interface Goal {
  goal: string;
  status: 'met' | 'NOT met' | 'n/a';
  detail: string;
}

function rows(measured: Map<ScenarioId, Measurement>, skipped: Map<ScenarioId, string>): ScenarioRow[] {
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

function table(list: ScenarioRow[], extraRows: ExtraRow[]): string {
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

function goals(list: ScenarioRow[], extraRows: ExtraRow[], rss: RssReadings): Goal[] {
  const byId = new Map(list.map((r) => [r.id, r]));
  const out: Goal[] = [];
  const check = (goal: string, ok: boolean | null, detail: string) =>
    out.push({ goal, status: ok === null ? 'n/a' : ok ? 'met' : 'NOT met', detail: ok === null ? 'not measured' : detail });
  const pair = (a: ScenarioId, b: ScenarioId) => {
    const x = byId.get(a);
    const y = byId.get(b);
    return x && y && !x.skipped && !y.skipped ? [x, y] as const : null;
  };
  // Group commit: through the queue at least as fast as the naive direct insert.
  for (const [c, factor] of [[16, 1], [64, 1.5]] as const) {
    const p = pair(`S2-c${c}` as ScenarioId, `S1-c${c}` as ScenarioId);
    check(
      `S2-c${c} rps >= ${factor}x S1-c${c}`,
      p ? (p[0].rps as number) >= factor * (p[1].rps as number) : null,
      p ? `${p[0].rps} vs ${p[1].rps} req/s (${round((p[0].rps as number) / (p[1].rps as number), 2)}x)` : '',
    );
    check(
      `S2-c${c} p99 <= 2x S1-c${c} p99`,
      p ? (p[0].p99_ms as number) <= 2 * (p[1].p99_ms as number) : null,
      p ? `${p[0].p99_ms} vs ${p[1].p99_ms} ms (${round((p[0].p99_ms as number) / (p[1].p99_ms as number), 1)}x)` : '',
    );
  }
  const s4 = pair('S4', 'S0');
  check('S4 rps >= 50% of S0', s4 ? (s4[0].rps as number) >= 0.5 * (s4[1].rps as number) : null, s4 ? `${s4[0].rps} vs ${s4[1].rps} req/s` : '');
  // A payment (a refund) end to end, against the creates of the same run.
  for (const id of ['S6', 'S7'] as const) {
    const p = pair(id, 'S2-c64');
    check(
      `${id} completed a second >= 0.25x S2-c64`,
      p ? (p[0].rps as number) >= 0.25 * (p[1].rps as number) : null,
      p ? `${p[0].rps} vs ${p[1].rps} a second (${round((p[0].rps as number) / (p[1].rps as number), 3)}x)` : '',
    );
  }
  const paced = byId.get('S6-steady');
  check(
    'S6-steady confirm → succeeded event p99 <= 2000 ms',
    paced && !paced.skipped ? (paced.p99_ms as number) <= 2000 : null,
    paced && !paced.skipped ? `${paced.p99_ms} ms` : '',
  );
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

/** The machine, as recorded with the results: CPUs, memory and Node.js version. */
export function machine(): string {
  const cpus = os.cpus();
  return `${cpus.length} × ${cpus[0]?.model ?? 'unknown CPU'}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, node ${process.version}`;
}

/** The 1, 5 and 15 minute load averages. */
export function loadAverage(): string {
  return os.loadavg().map((l) => l.toFixed(2)).join(' ');
}

/** The columns of bench/results/bench-runs.csv: one row per run, its key figures. */
export const RUN_LOG_COLUMNS = [
  'when', 'sha', 'load_avg_1m', 'cpus', 'duration_s',
  // rps of each scenario; for S5, the p50 in ms (what its goal compares).
  ...SCENARIO_IDS.map((id) => (id.startsWith('S5') ? `${id}_p50_ms` : `${id}_rps`)),
  'goals_met', 'goals_not_met',
] as const;

/** The columns of bench/results/redis-cluster-runs.csv: the run log's, with which Redis and how many queue shards. */
export const REDIS_RUN_LOG_COLUMNS = [...RUN_LOG_COLUMNS.slice(0, 4), 'redis', 'queue_shards', ...RUN_LOG_COLUMNS.slice(4)] as const;

function runLogRow(list: ScenarioRow[], goalList: Goal[], when: string, loadAtStart: number): RunRow {
  const row: RunRow = {
    when,
    sha: gitSha(ROOT),
    load_avg_1m: loadAtStart,
    cpus: os.cpus().length,
    duration_s: settings.durationS,
    goals_met: goalList.filter((g) => g.status === 'met').length,
    goals_not_met: goalList.filter((g) => g.status === 'NOT met').map((g) => g.goal).join('; '),
  };
  for (const r of list) row[r.id.startsWith('S5') ? `${r.id}_p50_ms` : `${r.id}_rps`] = r.id.startsWith('S5') ? r.p50_ms : r.rps;
  return row;
}

/**
 * Writes the results of every group to bench/results/latest.json and a copy named
 * after `when` (the run's start), appends the run's row to bench/results/bench-runs.csv
 * (not for a smoke run), then prints the table and the goals on stdout.
 */
export function writeReport(groups: GroupResult[], when: string, loadAtStart: number): void {
  const measured = new Map(groups.flatMap((g) => [...g.measured]));
  const skipped = new Map(groups.flatMap((g) => [...(g.skipped ?? [])]));
  const extraRows = groups.flatMap((g) => g.extraRows ?? []);
  const rss: RssReadings = groups.find((g) => g.rss)?.rss ?? { api: null, worker: null, api_second_run: null, worker_second_run: null };

  const list = rows(measured, skipped);
  const details = Object.assign({}, ...groups.map((g) => g.details ?? {})) as Record<string, Record<string, number | string | null>>;
  const report = { machine: machine(), when, scenarios: list, rss_mb: rss, details };
  fs.mkdirSync(path.dirname(RESULTS_FILE), { recursive: true });
  const json = `${JSON.stringify(report, null, 2)}\n`;
  fs.writeFileSync(RESULTS_FILE, json);
  // A copy per run, since the next run (anyone's, in this tree) replaces latest.json.
  const copy = path.join(path.dirname(RESULTS_FILE), `run-${when.replace(/[:.]/g, '-')}.json`);
  fs.writeFileSync(copy, json);

  const goalList = goals(list, extraRows, rss);
  let logged = 'smoke run: no row in the run log';
  if (!settings.smoke) {
    try {
      const row = runLogRow(list, goalList, when, loadAtStart);
      if (settings.redisClusterNodes || settings.redisCompare) {
        // A cluster's row goes to the cluster's log only: bench-runs.csv stays one Redis.
        const redis = settings.redisClusterNodes ? `cluster of ${settings.redisClusterNodes.split(',').length} nodes` : 'one';
        appendRunRow(REDIS_RUNS_LOG, REDIS_RUN_LOG_COLUMNS, { ...row, redis, queue_shards: settings.queueShards });
        logged = `a row appended to ${path.relative(process.cwd(), REDIS_RUNS_LOG)}`;
      }
      if (!settings.redisClusterNodes) {
        appendRunRow(RUNS_LOG, RUN_LOG_COLUMNS, row);
        logged = `${settings.redisCompare ? `${logged}, and ` : ''}a row appended to ${path.relative(process.cwd(), RUNS_LOG)}`;
      }
    } catch (err) {
      logged = `no row appended: ${(err as Error).message}`;
    }
  }

  const out: string[] = ['', table(list, extraRows), ''];
  out.push(`RSS after each S2 run, median of 4 readings a second for 2 s (MiB): api ${rss.api} -> ${rss.api_second_run}, worker ${rss.worker} -> ${rss.worker_second_run} (first -> second run)`);
  for (const [name, figures] of Object.entries(details)) {
    out.push(`${name}: ${Object.entries(figures).map(([k, v]) => `${k} ${v}`).join(', ')}`);
  }
  out.push(`Load average at the end: ${loadAverage()}`);
  out.push('', 'Goals (reported, not asserted):');
  for (const g of goalList) out.push(`  [${g.status.padEnd(7)}] ${g.goal}: ${g.detail}`);
  out.push('', `Written to ${path.relative(process.cwd(), RESULTS_FILE)} (and ${path.relative(process.cwd(), copy)}); ${logged}`);
  process.stdout.write(`${out.join('\n')}\n`);
}

/**
 * What a smoke run checks (BENCH_SMOKE): every scenario asked for ran, or was skipped
 * for a stated reason, and sent requests whose answers were as expected. Speed is not
 * checked. Returns the problems found.
 */
export function smokeProblems(groups: GroupResult[], selected: ReadonlySet<ScenarioId>): string[] {
  const measured = new Map(groups.flatMap((g) => [...g.measured]));
  const skipped = new Set(groups.flatMap((g) => [...(g.skipped ?? new Map()).keys()]));
  const problems: string[] = [];
  for (const id of selected) {
    const m = measured.get(id);
    if (!m) {
      if (!skipped.has(id)) problems.push(`${id} did not run`);
    } else if (m.requests === 0) {
      problems.push(`${id} sent no request`);
    } else if (m.mismatches > 0) {
      problems.push(`${id}: ${m.mismatches} unexpected answer bodies`);
    }
  }
  return problems;
}
