// npm start: install and build when needed, start local Redis and FerretDB
// (data in ./.data) unless REDIS_URL (or REDIS_CLUSTER_NODES) / MONGODB_URL are set, then one api and
// one worker. Ctrl-C stops everything: the api first, then the worker, then the servers.
// NPM_START_DATA_DIR names another data directory than .data/ (the tests use it).

import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';

import {
  BUNDLES,
  ROOT,
  clearPidFile,
  ensureBuild,
  ensureNodeModules,
  reapStale,
  recordChild,
  startStack,
} from './stack.mjs';
import { clearServiceEnv, recordServiceEnv } from './lib/service-env.mjs';

const DATA_DIR = process.env.NPM_START_DATA_DIR || path.join(ROOT, '.data');
// How the messages name it: `.data` in the checkout, the whole path elsewhere.
const relativeDataDir = path.relative(process.cwd(), DATA_DIR);
const DATA_SHOWN = relativeDataDir.startsWith('..') || path.isAbsolute(relativeDataDir) ? DATA_DIR : relativeDataDir;
const STOP_TIMEOUT_MS = 15_000;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function say(message) {
  process.stderr.write(`[start] ${message}\n`);
}

function die(error) {
  say(error instanceof Error ? error.message : String(error));
  process.exit(1);
}

// A secret kept in a file only its owner can read.
function readSecret(file) {
  try {
    const value = fs.readFileSync(file, 'utf8').trim();
    return value || null;
  } catch (error) {
    if (error.code === 'ENOENT') return null;
    throw error;
  }
}

function writeSecret(file, value) {
  fs.writeFileSync(file, `${value}\n`, { mode: 0o600 });
  fs.chmodSync(file, 0o600);
}

function adminToken() {
  if (process.env.ADMIN_TOKEN) return process.env.ADMIN_TOKEN;
  const file = path.join(DATA_DIR, 'admin-token');
  let token = readSecret(file);
  if (!token) {
    token = randomBytes(32).toString('hex');
    writeSecret(file, token);
  }
  return token;
}

// The first JSON object on stdout with a `secret` (the CLI may log other lines).
function parseSecret(stdout) {
  const candidates = [stdout, ...stdout.split('\n').reverse()];
  for (const text of candidates) {
    try {
      const value = JSON.parse(text.trim());
      if (value && typeof value.secret === 'string') return value.secret;
    } catch {
      // not this one
    }
  }
  return null;
}

function defaultTestKey(env) {
  const file = path.join(DATA_DIR, 'default-test-key');
  const existing = readSecret(file);
  if (existing) return existing;
  const result = spawnSync(
    process.execPath,
    ['dist/api/cli.js', 'keys', 'create', '--project', 'default', '--json'],
    { cwd: ROOT, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], timeout: 60_000 },
  );
  const secret = result.status === 0 ? parseSecret(result.stdout ?? '') : null;
  if (!secret) {
    say(
      'could not create the default test key (`node dist/api/cli.js keys create --project default --json` ' +
        `${result.error ? `failed: ${result.error.message}` : `exited with ${result.signal ?? result.status}`}); ` +
        'create one with `npm run --silent cli -- keys create --project default`',
    );
    return null;
  }
  writeSecret(file, secret);
  return secret;
}

function ping(url) {
  return new Promise((resolve) => {
    const request = http.get(url, { timeout: 1000 }, (response) => {
      response.resume();
      resolve(response.statusCode !== undefined && response.statusCode < 500);
    });
    request.on('timeout', () => request.destroy());
    request.on('error', () => resolve(false));
  });
}

// ---------------------------------------------------------------------------

try {
  ensureNodeModules();
  ensureBuild();
} catch (error) {
  die(error);
}

fs.mkdirSync(DATA_DIR, { recursive: true });
try {
  // Servers and processes left behind by an earlier run that was killed.
  await reapStale(DATA_DIR);
} catch (error) {
  die(error);
}

let stack = null;
// A Redis Cluster (REDIS_CLUSTER_NODES, DESIGN section 19) stands for REDIS_URL: no local Redis.
const clusterNodes = process.env.REDIS_CLUSTER_NODES || null;
let redisUrl = process.env.REDIS_URL || null;
let mongoUrl = process.env.MONGODB_URL || null;
const wantRedis = !redisUrl && !clusterNodes;
if (wantRedis || !mongoUrl) {
  say(`starting local ${[wantRedis && 'Redis', !mongoUrl && 'FerretDB'].filter(Boolean).join(' and ')} (data in ${DATA_SHOWN}/)`);
  try {
    stack = await startStack({ dataDir: DATA_DIR, persistent: true, redis: wantRedis, mongo: !mongoUrl });
  } catch (error) {
    die(error);
  }
  if (wantRedis) redisUrl = stack.redisUrl;
  mongoUrl ??= stack.mongoUrl;
}

const port = process.env.PORT || '3000';
// Local development: test-mode webhook endpoints may point at receivers on this
// machine or its network. Live mode never may; production leaves it unset.
const allowPrivateTargets = process.env.WEBHOOK_ALLOW_PRIVATE_TARGETS ?? 'true';
say(
  `WEBHOOK_ALLOW_PRIVATE_TARGETS=${allowPrivateTargets}: ${allowPrivateTargets === 'true' ? 'test-mode webhooks may reach loopback and private addresses (set it to false to refuse them)' : 'webhooks reach public addresses only'}`,
);
const env = {
  ...process.env,
  WEBHOOK_ALLOW_PRIVATE_TARGETS: allowPrivateTargets,
  ...(redisUrl ? { REDIS_URL: redisUrl } : {}),
  MONGODB_URL: mongoUrl,
  ADMIN_TOKEN: adminToken(),
  PORT: port,
};

const testKey = defaultTestKey(env);
// For `npm run cli` beside this start: the servers' URLs, removed again on stop.
recordServiceEnv(DATA_DIR, env);

const children = [];
let shuttingDown = null;

function launch(name, script) {
  // Own process group: a terminal's Ctrl-C reaches only this script, which
  // then stops the api and the worker (SIGTERM) before the servers.
  const child = spawn(process.execPath, [script], { cwd: ROOT, env, stdio: 'inherit', detached: true });
  const entry = { name, child, exited: null };
  entry.exited = new Promise((resolve) => {
    child.on('exit', (code, signal) => resolve({ code, signal }));
    child.on('error', (error) => resolve({ code: null, signal: null, error }));
  });
  entry.exited.then(({ code, signal, error }) => {
    if (shuttingDown) return;
    say(`${name} ${error ? `failed to start: ${error.message}` : `exited (${signal ?? `code ${code}`})`}; stopping`);
    shutdown(1);
  });
  if (child.pid) recordChild(DATA_DIR, { name, pid: child.pid, bin: process.execPath, arg: script });
  children.push(entry);
  return entry;
}

async function shutdown(exitCode = 0) {
  if (shuttingDown) return shuttingDown;
  shuttingDown = (async () => {
    // The api first: its requests in flight wait for jobs that the worker, still
    // running, finishes. Then the worker, which finishes its active jobs.
    for (const name of ['api', 'worker']) {
      const stopping = children.filter((c) => c.name === name);
      say(`stopping the ${name}`);
      for (const { child } of stopping) {
        try {
          child.kill('SIGTERM');
        } catch {
          // gone
        }
      }
      const killTimer = setTimeout(() => {
        for (const { child } of stopping) {
          if (child.exitCode === null && child.signalCode === null) {
            say(`${name} did not stop within ${STOP_TIMEOUT_MS / 1000} s: killing it`);
            child.kill('SIGKILL');
          }
        }
      }, STOP_TIMEOUT_MS);
      await Promise.all(stopping.map((c) => c.exited));
      clearTimeout(killTimer);
    }
    if (stack) {
      say('stopping local servers');
      await stack.stop();
    }
    clearServiceEnv(DATA_DIR);
    clearPidFile(DATA_DIR);
    process.exit(exitCode);
  })();
  return shuttingDown;
}

let signals = 0;
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => {
    signals += 1;
    if (signals > 1 && signal === 'SIGINT') {
      // Second Ctrl-C: do not wait for a graceful stop.
      for (const { child } of children) child.kill('SIGKILL');
    }
    shutdown(0);
  });
}

// One bundled file each: they start in about half the CPU time (scripts/lib/bundle.mjs).
launch('api', BUNDLES.api);
launch('worker', BUNDLES.worker);

const host = !process.env.HOST || ['0.0.0.0', '::', '[::]'].includes(process.env.HOST)
  ? 'localhost'
  : process.env.HOST.includes(':') ? `[${process.env.HOST}]` : process.env.HOST;
const baseUrl = `http://${host}:${port}`;

// Wait (a while) for the api to answer before printing where it is.
const deadline = Date.now() + 30_000;
let ready = false;
while (!shuttingDown && Date.now() < deadline && !(ready = await ping(`${baseUrl}/readyz`))) await sleep(250);

if (!shuttingDown) {
  const lines = [
    '',
    `  Payments API     ${baseUrl}${ready ? '' : '   (not ready yet: see /readyz)'}`,
    `  Test API key     ${testKey ?? '(none: see above)'}${testKey ? `   (kept in ${DATA_SHOWN}/default-test-key)` : ''}`,
    `  Admin token      ${env.ADMIN_TOKEN}`,
    `  Queue dashboard  ${baseUrl}/admin/queues   (sign in as user "admin", password: the admin token)`,
    `  Webhooks         ${allowPrivateTargets === 'true' ? 'test mode may reach local and private addresses (WEBHOOK_ALLOW_PRIVATE_TARGETS=true)' : 'public addresses only'}`,
    clusterNodes
      ? `  Redis Cluster    ${clusterNodes}${process.env.QUEUE_SHARDS ? ` (QUEUE_SHARDS=${process.env.QUEUE_SHARDS})` : ''}`
      : `  Redis            ${redisUrl}${stack?.redisUrl ? ` (local, ${DATA_SHOWN}/redis)` : ''}`,
    `  MongoDB          ${mongoUrl}${stack?.mongoUrl ? ` (local FerretDB, ${DATA_SHOWN}/ferretdb)` : ''}`,
    // The embedded store scans a whole collection for every query but a look-up by id (docs/storage.md).
    ...(stack?.mongoUrl
      ? [
          '  Store            FerretDB over SQLite is for one tenant\'s development, not for serving several:',
          '                   every list scans a whole collection. Serve tenants from a MongoDB (MONGODB_URL; docs/operating.md).',
        ]
      : []),
    '',
    `  Try: curl ${baseUrl}/v1/payment_intents -u ${testKey ?? 'sk_test_...'}:`,
    '  Ctrl-C stops everything.',
    '',
  ];
  process.stdout.write(lines.join(os.EOL) + os.EOL);
}
