/**
 * CI's dependency audit (.ci/run): a high or critical advisory in a production
 * dependency fails CI; an audit the registry cannot run is said plainly. The step
 * is run as CI runs it, with `npm` replaced by a stand-in that answers as the
 * registry would.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import test from 'ava';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../..');

function auditStep(): string {
  const script = fs.readFileSync(path.join(root, '.ci/run'), 'utf8');
  const start = script.indexOf('# --- dependency audit');
  const end = script.indexOf('\nesac\n', start);
  if (start < 0 || end < 0) throw new Error('.ci/run has no dependency audit step');
  return script.slice(start, end + '\nesac\n'.length);
}

/** Runs the step with a stand-in `npm` printing `report` and exiting with `status`. */
function run(report: unknown, status: number, env: Record<string, string> = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ci-audit-'));
  fs.writeFileSync(path.join(dir, 'npm'), `#!/bin/sh\ncase "$*" in *"audit --omit=dev --audit-level=high"*) ;; *) exit 99;; esac\ncat <<'JSON'\n${JSON.stringify(report)}\nJSON\nexit ${status}\n`, { mode: 0o755 });
  const harness = `LOG_DIR=${dir}; failures=(); warnings=()
step() { :; }
fail_step() { failures+=("$1"); }
${auditStep()}
echo "failures=\${#failures[@]} warnings=\${#warnings[@]}"`;
  const result = spawnSync('bash', ['-c', harness], { env: { PATH: `${dir}:${process.env.PATH}`, ...env }, encoding: 'utf8' });
  fs.rmSync(dir, { recursive: true, force: true });
  return result.stdout;
}

const finding = {
  auditReportVersion: 2,
  vulnerabilities: { badlib: { name: 'badlib', severity: 'high' } },
  metadata: { vulnerabilities: { info: 0, low: 0, moderate: 0, high: 1, critical: 0, total: 1 } },
};
const clean = { auditReportVersion: 2, vulnerabilities: {}, metadata: { vulnerabilities: { info: 0, low: 0, moderate: 0, high: 0, critical: 0, total: 0 } } };
const unavailable = { message: '405 Method Not Allowed - POST /-/npm/v1/security/advisories/bulk', statusCode: 405, error: { summary: '', detail: '' } };

test('a high advisory in a production dependency fails CI, and is named', (t) => {
  const out = run(finding, 1);
  t.regex(out, /badlib \(high\)/);
  t.regex(out, /failures=1 warnings=0/);
});

test('a clean audit passes', (t) => {
  t.regex(run(clean, 0), /failures=0 warnings=0/);
});

test('an audit endpoint that cannot answer is a warning that says so, or a failure when the audit is required', (t) => {
  const out = run(unavailable, 1);
  t.regex(out, /npm audit could not run: 405 Method Not Allowed/);
  t.regex(out, /failures=0 warnings=1/);
  t.regex(run(unavailable, 1, { AUDIT_REQUIRED: 'true' }), /failures=1 warnings=0/);
});
