/**
 * CI's smoke pass of the benchmark (.ci/run): `npm run bench:smoke` runs, and its
 * failure is a failed step, so CI fails. The step is run as CI runs it, with `npm`
 * replaced by a stand-in that exits as the benchmark would.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import test from 'ava';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../..');

function smokeStep(): string {
  const script = fs.readFileSync(path.join(root, '.ci/run'), 'utf8');
  const start = script.indexOf('# --- benchmark smoke pass');
  const end = script.indexOf('# --- end of the benchmark smoke pass', start);
  if (start < 0 || end < 0) throw new Error('.ci/run has no benchmark smoke pass');
  return script.slice(start, end);
}

/** Runs the step with a stand-in `npm` that records its arguments and exits with `status`. */
function run(status: number) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ci-bench-smoke-'));
  fs.writeFileSync(path.join(dir, 'npm'), `#!/bin/sh\necho "npm $*" >> ${dir}/calls\necho "[bench] smoke output"\nexit ${status}\n`, { mode: 0o755 });
  const harness = `LOG_DIR=${dir}; failures=()
step() { :; }
fail_step() { failures+=("$1"); }
${smokeStep()}
echo "failures=\${#failures[@]} \${failures[*]}"`;
  const result = spawnSync('bash', ['-c', harness], { env: { PATH: `${dir}:${process.env.PATH}` }, encoding: 'utf8' });
  const calls = fs.readFileSync(path.join(dir, 'calls'), 'utf8');
  const log = fs.readFileSync(path.join(dir, 'bench-smoke.log'), 'utf8');
  fs.rmSync(dir, { recursive: true, force: true });
  return { out: result.stdout, calls, log };
}

test('CI runs the benchmark smoke pass, and keeps its output', (t) => {
  const { out, calls, log } = run(0);
  t.is(calls, 'npm run bench:smoke\n');
  t.regex(log, /smoke output/);
  t.regex(out, /failures=0/);
});

test('a failing benchmark smoke pass fails CI', (t) => {
  const { out } = run(1);
  t.regex(out, /failures=1 npm run bench:smoke \(exit status 1/);
});

test('npm run bench:smoke is the benchmark with BENCH_SMOKE set', (t) => {
  const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  t.is(pkg.scripts['bench:smoke'], 'BENCH_SMOKE=1 node scripts/bench.mjs');
});
