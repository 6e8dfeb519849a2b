// The run logs that `npm run bench` and `npm run chaos` append to
// (bench/results/*-runs.csv), and what a smoke run of the benchmark checks.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';

import { RUN_LOG_COLUMNS as CHAOS_COLUMNS, runLogRow, type ChaosReport } from '../../bench/chaos/report.js';
import type { Measurement } from '../../bench/measure.js';
import { REDIS_RUN_LOG_COLUMNS, RUN_LOG_COLUMNS, smokeProblems, type GroupResult } from '../../bench/report.js';
import { RUNS_LOG } from '../../bench/settings.js';
import { appendRunRow, csvLine, gitSha } from '../../bench/results-log.js';

function tempFile(t: { teardown(fn: () => void): void }): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'payments-results-log-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  return path.join(dir, 'runs.csv');
}

test('a run log gets its header once, then one line per run, quoted where needed', (t) => {
  const file = tempFile(t);
  const columns = ['when', 'sha', 'note'] as const;
  appendRunRow(file, columns, { when: '2026-11-26T10:00:00Z', sha: 'abc', note: 'S2 NOT met; "slow", again' });
  appendRunRow(file, columns, { when: '2026-11-26T11:00:00Z', sha: 'def', note: null });
  t.is(
    fs.readFileSync(file, 'utf8'),
    'when,sha,note\n2026-11-26T10:00:00Z,abc,"S2 NOT met; ""slow"", again"\n2026-11-26T11:00:00Z,def,\n',
  );
});

test('a run log with other columns is left alone', (t) => {
  const file = tempFile(t);
  fs.writeFileSync(file, 'when,other\n1,2\n');
  t.throws(() => appendRunRow(file, ['when', 'sha'], { when: 'x', sha: 'y' }), { message: /other columns/ });
  t.is(fs.readFileSync(file, 'utf8'), 'when,other\n1,2\n');
});

test('csvLine keeps the column order and leaves missing values empty', (t) => {
  t.is(csvLine(['b', 'a', 'c'], { a: 1, b: true }), 'true,1,');
});

test('gitSha names the checked-out commit', (t) => {
  t.regex(gitSha(process.cwd()), /^([0-9a-f]{12}(-dirty)?|unknown)$/);
  t.is(gitSha(os.tmpdir()), 'unknown');
});

test("a chaos run's row holds its verdicts as figures", (t) => {
  const report = {
    when: '2026-11-26T10:00:00.000Z',
    shape: { durationS: 60, rate: 50, apis: 2, workers: 3, confirmFraction: 0.2, seed: 1966166622, env: { WORKER_CONCURRENCY: '16' }, dist: '/old/dist' },
    pass: false,
    keys: { keys: 3000, answered200: 3000, duplicated: 0, lost: 0, orphans: 0 },
    events: { expected: 3000, delivered: 2999 },
    replays: { replaysAnswered: 3000, replaysFlagged: 3000 },
    confirms: null,
    throughput: { recoveries: [{ recoveredAfterS: 2.2 }, { recoveredAfterS: 6.5 }, { recoveredAfterS: null }] },
    requests: { latencyMs: { p99: 92 } },
    cpu: { load: [1.5, 2.5], others: 10.2, wallS: 100, capacity: 200 },
  } as unknown as ChaosReport;
  const row = runLogRow(report, 'abc123', '/repo');
  t.is(csvLine(CHAOS_COLUMNS, row).split(',').length, CHAOS_COLUMNS.length);
  t.like(row, {
    sha: 'abc123',
    seed: 1966166622,
    env: 'WORKER_CONCURRENCY=16',
    dist: '/old/dist',
    pass: false,
    keys_200: '3000/3000',
    events_delivered: '2999/3000',
    replays_flagged: '3000/3000',
    confirms_succeeded: null,
    faults_recovered: '2/3',
    slowest_recovery_s: 'never',
    p99_ms: 92,
  });
  t.is(runLogRow({ ...report, shape: { ...report.shape, env: {}, dist: '/repo/dist' } }, 'abc123', '/repo').dist, '', 'the checkout\'s own build');
});

const measurement = (requests: number, mismatches = 0): Measurement => ({ rps: requests, p50_ms: 1, p99_ms: 2, non2xx: 0, requests, mismatches });

test('a smoke run passes when every scenario asked for ran or was skipped for a reason', (t) => {
  const groups: GroupResult[] = [
    { measured: new Map([['S0', measurement(100)]]) },
    { measured: new Map(), skipped: new Map([['S5-1m', 'BENCH_S5_1M=0']]) },
  ];
  t.deepEqual(smokeProblems(groups, new Set(['S0', 'S5-1m'])), []);
});

test('a smoke run fails on a scenario that did not run, sent nothing, or got wrong answers', (t) => {
  const groups: GroupResult[] = [{ measured: new Map([['S0', measurement(0)], ['S4', measurement(50, 3)]]) }];
  t.deepEqual(smokeProblems(groups, new Set(['S0', 'S4', 'S6'])), [
    'S0 sent no request',
    'S4: 3 unexpected answer bodies',
    'S6 did not run',
  ]);
});

test('the committed run logs carry the columns the bench and the chaos write today, so a run is never refused for its header', (t) => {
  const results = path.dirname(RUNS_LOG);
  const header = (file: string) => fs.readFileSync(path.join(results, file), 'utf8').split('\n', 1)[0];
  t.is(header('bench-runs.csv'), RUN_LOG_COLUMNS.join(','), 'a new scenario changes the columns: rewrite the header (and pad the rows) with it');
  t.is(header('redis-cluster-runs.csv'), REDIS_RUN_LOG_COLUMNS.join(','));
  t.is(header('chaos-runs.csv'), CHAOS_COLUMNS.join(','));
});
