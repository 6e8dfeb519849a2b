// Load test against a running api (the compose `loadtest` service runs it):
// creates payment intents through the queue with autocannon and prints a summary.
//
//   API_URL      base URL of the api (default http://127.0.0.1:3000)
//   API_KEY      a secret key (sk_test_…); without it, one is issued for project
//                LOADTEST_PROJECT (default "loadtest") with ADMIN_TOKEN
//   CONNECTIONS  concurrent connections (default 50)
//   DURATION     seconds (default 30)
//   IDEMPOTENCY  "1": a fresh Idempotency-Key on every request (default: none)
//   READY_TIMEOUT_MS  how long to wait for /readyz first (default 60000)
//
// Prints a human summary, then one JSON line (`{"loadtest": …}`). Exits 1 when no
// create succeeded or a request failed at the connection level.

import { randomUUID } from 'node:crypto';
import autocannon from 'autocannon';

const env = process.env;
const apiUrl = (env.API_URL || 'http://127.0.0.1:3000').replace(/\/+$/, '');
const connections = positiveInt('CONNECTIONS', 50);
const duration = positiveInt('DURATION', 30);
const readyTimeoutMs = positiveInt('READY_TIMEOUT_MS', 60_000);
const idempotency = env.IDEMPOTENCY === '1';

function positiveInt(name, fallback) {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value <= 0) die(`${name} must be a positive integer, got "${raw}"`);
  return value;
}

function die(message) {
  process.stderr.write(`loadtest: ${message}\n`);
  process.exit(1);
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitReady() {
  const deadline = Date.now() + readyTimeoutMs;
  for (;;) {
    const status = await fetch(`${apiUrl}/readyz`).then((r) => r.status, () => 0);
    if (status === 200) return;
    if (Date.now() > deadline) die(`${apiUrl}/readyz did not answer 200 within ${readyTimeoutMs} ms (last: ${status || 'no answer'})`);
    await sleep(500);
  }
}

async function apiKey() {
  if (env.API_KEY) return env.API_KEY;
  if (!env.ADMIN_TOKEN) die('set API_KEY, or ADMIN_TOKEN to issue one');
  const res = await fetch(`${apiUrl}/admin/v1/api_keys`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${env.ADMIN_TOKEN}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ project: env.LOADTEST_PROJECT || 'loadtest', livemode: false }),
  });
  if (res.status !== 200) die(`issuing an API key failed: HTTP ${res.status}`);
  return (await res.json()).secret;
}

await waitReady();
const key = await apiKey();
const body = JSON.stringify({ amount: 2500, currency: 'xof', description: 'load test', metadata: { source: 'loadtest' } });

process.stderr.write(`loadtest: POST ${apiUrl}/v1/payment_intents, ${connections} connections, ${duration} s${idempotency ? ', unique Idempotency-Key' : ''}\n`);
const result = await autocannon({
  url: `${apiUrl}/v1/payment_intents`,
  connections,
  duration,
  // A create may wait up to WRITE_TIMEOUT_MS (10 s by default) for its job.
  timeout: 30,
  requests: [
    {
      method: 'POST',
      headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
      body,
      setupRequest: (request) =>
        idempotency ? { ...request, headers: { ...request.headers, 'Idempotency-Key': randomUUID() } } : request,
    },
  ],
});

const statuses = Object.fromEntries(Object.entries(result.statusCodeStats ?? {}).map(([code, s]) => [code, s.count]));
const summary = {
  url: `${apiUrl}/v1/payment_intents`,
  connections,
  duration_s: result.duration,
  requests: result.requests.total,
  creates_per_s: result.requests.average,
  latency_ms: { p50: result.latency.p50, p90: result.latency.p90, p99: result.latency.p99, max: result.latency.max },
  statuses,
  ok: result['2xx'],
  non_2xx: result.non2xx,
  errors: result.errors,
  timeouts: result.timeouts,
};

process.stdout.write(
  [
    `creates:    ${summary.requests} in ${summary.duration_s} s (${summary.creates_per_s} /s)`,
    `latency:    p50 ${summary.latency_ms.p50} ms, p90 ${summary.latency_ms.p90} ms, p99 ${summary.latency_ms.p99} ms, max ${summary.latency_ms.max} ms`,
    `statuses:   ${Object.entries(statuses).map(([code, n]) => `${code}: ${n}`).join(', ') || 'none'}`,
    `errors:     ${summary.errors} (timeouts ${summary.timeouts})`,
    '',
  ].join('\n'),
);
process.stdout.write(`${JSON.stringify({ loadtest: summary })}\n`);
process.exit(summary.ok > 0 && summary.errors === 0 ? 0 : 1);
