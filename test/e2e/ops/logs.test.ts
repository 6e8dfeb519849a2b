// Logs: one structured JSON line per request (request id, method, route, status,
// duration, project), the level from LOG_LEVEL, and no secret anywhere: a full
// black-box run is captured from every process and searched for every secret it
// created or used.

import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { BUNDLES } from '#scripts/lib/build.mjs';
import { freePort } from '#scripts/lib/net.mjs';
import { Proc, Service, sleep, stackUrls, uniqueName, type ApiResponse } from '../../helpers/service.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../..');

interface LogLine {
  level: number;
  msg: string;
  service: string;
  [field: string]: unknown;
}

function parseLines(lines: string[]): { json: LogLine[]; other: string[] } {
  const json: LogLine[] = [];
  const other: string[] = [];
  for (const line of lines) {
    try {
      json.push(JSON.parse(line) as LogLine);
    } catch {
      other.push(line);
    }
  }
  return { json, other };
}

/** A webhook receiver that fails the first delivery (so retries get logged) and accepts the rest. */
async function startReceiver(): Promise<{ server: Server; url: string; received: () => number }> {
  let count = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      count++;
      res.writeHead(count === 1 ? 500 : 200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, received: () => count };
}

test('a full black-box run logs no API key, webhook secret, client secret or admin credential', async (t) => {
  const receiver = await startReceiver();
  t.teardown(() => new Promise<void>((resolve) => receiver.server.close(() => resolve())));
  const service = await Service.start({ workers: 1, env: { LOG_LEVEL: 'trace', WEBHOOK_RETRY_SCHEDULE_MS: '200,200,200' } });
  t.teardown(() => service.stop());

  const secrets = new Set<string>([service.adminToken]);
  const remember = (value: unknown) => {
    if (typeof value !== 'string' || value.length < 8) throw new Error(`expected a secret, got ${String(value)}`);
    secrets.add(value);
    // A logger that cut off the prefix would still leak the random part.
    const underscore = value.lastIndexOf('_');
    if (underscore > 0 && value.length - underscore > 16) secrets.add(value.slice(underscore + 1));
  };
  const responses: ApiResponse[] = [];
  const call = async (...args: Parameters<Service['request']>) => {
    const res = await service.request(...args);
    responses.push(res);
    return res;
  };
  const admin = { Authorization: `Bearer ${service.adminToken}` };

  // Keys: test and live, one revoked.
  const testKey = await service.issueKey('logs');
  const liveKey = await service.issueKey('logs', true);
  remember(testKey);
  remember(liveKey);
  const doomed = await call('POST', '/admin/v1/api_keys', { headers: admin, body: { project: 'logs' } });
  remember(doomed.body.secret);
  await call('GET', '/admin/v1/api_keys?project=logs', { headers: admin });
  await call('DELETE', `/admin/v1/api_keys/${doomed.body.id}`, { headers: admin });
  t.is((await call('GET', '/v1/payment_intents', { key: doomed.body.secret })).status, 401);

  // Webhook endpoints (their secrets are generated in the worker and shown once).
  for (const key of [testKey, liveKey]) {
    const url = key === testKey ? receiver.url : 'https://hooks.invalid/payments';
    const endpoint = await call('POST', '/v1/webhook_endpoints', { key, body: { url, metadata: { team: 'ops' } } });
    t.is(endpoint.status, 200, endpoint.text);
    remember(endpoint.body.secret);
    await call('GET', `/v1/webhook_endpoints/${endpoint.body.id}`, { key });
  }
  await call('GET', '/v1/webhook_endpoints', { key: testKey });

  // Payment intents: plain, keyed, replayed, reused key, bad input, unknown id.
  for (let i = 0; i < 3; i++) {
    const pi = await call('POST', '/v1/payment_intents', { key: testKey, body: { amount: 100 + i, description: `order ${i}` } });
    t.is(pi.status, 200, pi.text);
    remember(pi.body.client_secret);
    await call('GET', `/v1/payment_intents/${pi.body.id}`, { key: testKey });
  }
  const keyed = await call('POST', '/v1/payment_intents', { key: liveKey, body: { amount: 5000 }, headers: { 'Idempotency-Key': 'logs-1' } });
  remember(keyed.body.client_secret);
  const replay = await call('POST', '/v1/payment_intents', { key: liveKey, body: { amount: 5000 }, headers: { 'Idempotency-Key': 'logs-1' } });
  t.is(replay.headers.get('idempotent-replayed'), 'true');
  t.is((await call('POST', '/v1/payment_intents', { key: liveKey, body: { amount: 1 }, headers: { 'Idempotency-Key': 'logs-1' } })).status, 400);
  t.is((await call('POST', '/v1/payment_intents', { key: testKey, body: { amount: 'lots' } })).status, 400);
  t.is((await call('POST', '/v1/payment_intents', { key: testKey, rawBody: '{not json', headers: { 'Content-Type': 'application/json' } })).status, 400);
  t.is((await call('GET', '/v1/payment_intents/pi_nosuchthing', { key: testKey })).status, 404);
  await call('GET', '/v1/payment_intents?limit=100', { key: testKey });

  // Events, and their delivery to the receiver (first attempt fails, then a retry succeeds).
  const events = await call('GET', '/v1/events', { key: testKey });
  t.true(events.body.data.length >= 3);
  await call('GET', `/v1/events/${events.body.data[0].id}`, { key: testKey });
  for (let i = 0; i < 200 && receiver.received() < 4; i++) await sleep(50);
  t.true(receiver.received() >= 4, 'deliveries reached the receiver, one after a retry');

  // Wrong credentials of every kind.
  const forged = `sk_test_${'Z'.repeat(40)}`;
  remember(forged);
  t.is((await call('GET', '/v1/payment_intents', { key: forged })).status, 401);
  t.is((await call('GET', '/admin/v1/api_keys', { headers: { Authorization: `Bearer ${forged}` } })).status, 401);
  const basic = Buffer.from(`admin:${service.adminToken}`).toString('base64');
  secrets.add(basic);
  t.is((await call('GET', '/admin/queues/api/queues', { headers: { Authorization: `Basic ${basic}` } })).status, 200);
  const wrongBasic = Buffer.from(`admin:${forged}`).toString('base64');
  secrets.add(wrongBasic);
  t.is((await call('GET', '/admin/queues', { headers: { Authorization: `Basic ${wrongBasic}` } })).status, 401);

  await call('GET', '/metrics');
  await call('GET', '/readyz');

  // Stop every process, so the shutdown logs are in too.
  await service.stop();
  const lines = service.logs();
  t.true(lines.length > responses.length, `captured ${lines.length} log lines`);
  for (const secret of secrets) {
    const leaks = lines.filter((line) => line.includes(secret));
    t.deepEqual(leaks, [], `secret ${secret.slice(0, 10)}… appears in no log line`);
  }
  t.false(lines.some((line) => /sk_(test|live)_[A-Za-z0-9]{8}|whsec_[A-Za-z0-9+/]{8}|_secret_[A-Za-z0-9]{8}/.test(line)), 'no secret-shaped string in any log');

  // Every line is JSON, and every request has exactly one line with its id.
  const { json, other } = parseLines(lines);
  t.deepEqual(other, [], 'every log line is JSON');
  const requestLines = json.filter((line) => line.msg === 'request');
  for (const res of responses) {
    const id = res.headers.get('request-id');
    const mine = requestLines.filter((line) => line.request_id === id);
    t.is(mine.length, 1, `one log line for ${id}`);
    const line = mine[0] as LogLine;
    t.is(line.status, res.status);
    t.is(line.service, 'api');
    t.is(typeof line.method, 'string');
    t.is(typeof line.route, 'string');
    t.is(typeof line.duration_ms, 'number');
    t.is(typeof line.time, 'string');
  }
  const authenticated = requestLines.filter((line) => line.status === 200 && String(line.route).startsWith('/v1/'));
  t.true(authenticated.length > 0);
  for (const line of authenticated) t.is(line.project, 'logs');
});

test('the log level comes from LOG_LEVEL', async (t) => {
  // The harness waits for the info line "api listening", so this api is started by hand.
  const { redisUrl, mongoUrl } = stackUrls();
  const port = await freePort();
  const child = spawn(process.execPath, [path.join(root, BUNDLES.api)], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', REDIS_URL: redisUrl, MONGODB_URL: mongoUrl, MONGODB_DB: uniqueName('t'), QUEUE_PREFIX: uniqueName('q'), PORT: String(port), LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const api = new Proc('api', child);
  t.teardown(() => api.stop('SIGTERM', 10_000).then(() => undefined));
  let health = 0;
  for (let i = 0; i < 300 && health !== 200; i++) {
    health = await fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.status, () => 0);
    if (health !== 200) await sleep(50);
  }
  t.is(health, 200);
  t.is((await fetch(`http://127.0.0.1:${port}/no/such/route`)).status, 404);
  t.is(await api.stop('SIGTERM', 10_000), 0);
  const { json, other } = parseLines(api.output);
  t.deepEqual(other, []);
  t.false(json.some((line) => line.msg === 'request' || line.msg === 'api listening'), 'no info lines at level warn');
  t.true(json.every((line) => line.level >= 40), 'only warn and above');
});
