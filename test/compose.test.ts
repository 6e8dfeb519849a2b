// docker-compose.yml and the Dockerfile cannot run here (no Docker on our machines):
// this test holds them to the code instead. Services, images, commands, ports,
// health checks and dependencies, and every environment variable against the
// configuration keys of common/config.ts (and the load script's own variables).

import { readFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { parse } from 'yaml';
import { ConfigError, loadConfig } from '../common/config.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

interface ComposeService {
  image?: string;
  build?: string | { context: string; target?: string };
  command?: string[] | string;
  environment?: Record<string, string | number | null>;
  ports?: string[];
  expose?: string[];
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[] };
  profiles?: string[];
  init?: boolean;
  stop_grace_period?: string;
}

const compose = parse(readFileSync(path.join(root, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
  services: Record<string, ComposeService>;
};
const services = compose.services;

const required = { REDIS_URL: 'redis://127.0.0.1:6379', MONGODB_URL: 'mongodb://127.0.0.1:27017' };

/**
 * Does common/config.ts read this variable? Asked of loadConfig itself: every variable
 * it validates refuses the empty string or a two-character value, naming itself, while
 * one it ignores accepts anything.
 */
function isConfigKey(name: string): boolean {
  return ['', 'x!'].some((value) => {
    try {
      loadConfig({ ...required, [name]: value });
      return false;
    } catch (err) {
      return err instanceof ConfigError && err.problems.some((problem) => problem.includes(`"${name}"`));
    }
  });
}

/** Compose interpolation, as `docker compose` does it with an empty environment. */
function interpolate(value: string | number | null, overrides: Record<string, string> = {}): string {
  return String(value ?? '').replace(/\$\{([A-Z0-9_]+)(?::?-([^}]*))?\}/g, (_, name: string, fallback?: string) => overrides[name] ?? fallback ?? '');
}

function envOf(name: string, overrides: Record<string, string> = {}): Record<string, string> {
  return Object.fromEntries(Object.entries(services[name]?.environment ?? {}).map(([k, v]) => [k, interpolate(v, overrides)]));
}

function seconds(duration: string | undefined): number {
  const match = /^(\d+)(s|m)$/.exec(duration ?? '');
  if (!match) return 0;
  return Number(match[1]) * (match[2] === 'm' ? 60 : 1);
}

test('loadConfig tells the variables it reads from those it ignores', (t) => {
  for (const key of ['PORT', 'HOST', 'REDIS_URL', 'MONGODB_URL', 'MONGODB_DB', 'ADMIN_TOKEN', 'WORKER_CONCURRENCY', 'METRICS_PORT', 'LOG_LEVEL', 'PUBLIC_BASE_URL']) {
    t.true(isConfigKey(key), key);
  }
  for (const key of ['PATH', 'NODE_ENV', 'API_URL', 'port', 'MONGODB']) t.false(isConfigKey(key), key);
});

test('services: mongo, redis, api, worker, and loadtest under a profile', (t) => {
  t.deepEqual(Object.keys(services).sort(), ['api', 'loadtest', 'mongo', 'redis', 'worker']);
  for (const name of ['mongo', 'redis', 'api', 'worker']) t.is(services[name]?.profiles, undefined, `${name} runs by default`);
  t.deepEqual(services.loadtest?.profiles, ['loadtest']);
});

test('mongo is the official image 7 or 8; redis 7 is append-only and never evicts', (t) => {
  t.regex(services.mongo?.image ?? '', /^mongo:(7|8)(\.|$)/);
  t.regex(services.redis?.image ?? '', /^redis:7(\.|$)/);
  const command = (services.redis?.command as string[]).join(' ');
  t.regex(command, /--appendonly yes/);
  t.regex(command, /--maxmemory-policy noeviction/);
});

test('api and worker run the compiled entry points from the runtime image', (t) => {
  t.deepEqual(services.api?.command, ['node', 'dist/bundle/api.mjs']);
  t.deepEqual(services.worker?.command, ['node', 'dist/bundle/worker.mjs']);
  for (const name of ['api', 'worker']) {
    const entry = (services[name]?.command as string[])[1] as string;
    t.true(existsSync(path.join(root, entry)), `${entry} is what the build produces`);
    t.deepEqual(services[name]?.build, { context: '.', target: 'runtime' });
    t.true(services[name]?.init, `${name} runs under an init, so SIGTERM reaches node`);
  }
});

test('every variable given to api and worker is a configuration key, and the values pass validation', (t) => {
  for (const name of ['api', 'worker']) {
    const env = envOf(name);
    for (const key of Object.keys(env)) t.true(isConfigKey(key), `${name}: ${key} is read by common/config.ts`);
    t.is(env.HOST, '0.0.0.0', `${name} listens on every interface of its container`);
    t.is(env.REDIS_URL, 'redis://redis:6379');
    t.is(env.MONGODB_URL, 'mongodb://mongo:27017');
    t.notThrows(() => loadConfig(envOf(name)), `${name} starts with the defaults`);
    t.notThrows(() => loadConfig(envOf(name, { ADMIN_TOKEN: 'x'.repeat(32) })), `${name} starts with an admin token`);
  }
  t.is(loadConfig(envOf('api')).adminToken, null, 'no ADMIN_TOKEN set: admin API and dashboard are off');
});

test('the api publishes its PORT, and the worker serves metrics on METRICS_PORT without a host port', (t) => {
  const api = loadConfig(envOf('api'));
  t.is(api.port, 3000);
  const published = (services.api?.ports ?? []).map((p) => /^(?:[\d.]+:)?([\d-]+):(\d+)$/.exec(p));
  t.is(published.length, 1);
  t.is(Number(published[0]?.[2]), api.port, 'container port = PORT');
  t.regex(published[0]?.[1] ?? '', /^3000(-\d+)?$/, 'host port 3000 (a range, so api replicas each get one)');
  t.true(JSON.stringify(services.api?.healthcheck?.test).includes(`127.0.0.1:${api.port}/readyz`));

  const worker = loadConfig(envOf('worker'));
  t.true(worker.metricsPort > 0);
  t.is(services.worker?.ports, undefined, 'no host port, so `--scale worker=N` works');
  t.deepEqual(services.worker?.expose, [String(worker.metricsPort)]);
  t.true(JSON.stringify(services.worker?.healthcheck?.test).includes(`127.0.0.1:${worker.metricsPort}/healthz`));
});

test('health checks everywhere, and depends_on waits for them', (t) => {
  for (const name of ['mongo', 'redis', 'api', 'worker']) t.truthy(services[name]?.healthcheck?.test, `${name} has a health check`);
  for (const name of ['api', 'worker']) {
    t.deepEqual(services[name]?.depends_on, { mongo: { condition: 'service_healthy' }, redis: { condition: 'service_healthy' } });
  }
  t.deepEqual(services.loadtest?.depends_on, { api: { condition: 'service_healthy' }, worker: { condition: 'service_healthy' } });
});

test('stop grace periods cover the drain: the api waits up to WRITE_TIMEOUT_MS plus its own 5 s margin', (t) => {
  const api = loadConfig(envOf('api'));
  t.true(seconds(services.api?.stop_grace_period) * 1000 > api.writeTimeoutMs + 5000);
  t.true(seconds(services.worker?.stop_grace_period) * 1000 > api.webhooks.timeoutMs);
});

test('the loadtest service runs the load script against the api with variables the script reads', (t) => {
  const script = readFileSync(path.join(root, 'bench', 'loadtest.mjs'), 'utf8');
  t.deepEqual(services.loadtest?.command, ['node', 'bench/loadtest.mjs']);
  t.deepEqual(services.loadtest?.build, { context: '.', target: 'loadtest' });
  t.regex(script, /from 'autocannon'/);
  const env = envOf('loadtest');
  for (const key of Object.keys(env)) t.true(script.includes(`env.${key}`) || script.includes(`'${key}'`), `bench/loadtest.mjs reads ${key}`);
  t.is(env.API_URL, `http://api:${loadConfig(envOf('api')).port}`);
});

test('the Dockerfile builds with dev dependencies and runs with production ones, as a non-root user', (t) => {
  const dockerfile = readFileSync(path.join(root, 'Dockerfile'), 'utf8');
  const stages = new Map<string, string>();
  const parts = dockerfile.split(/^FROM /m).slice(1);
  for (const part of parts) {
    const name = /^\S+ AS (\S+)/.exec(part)?.[1];
    if (name) stages.set(name, part);
  }
  t.deepEqual([...stages.keys()].sort(), ['build', 'loadtest', 'prod-deps', 'runtime']);
  t.regex(stages.get('build') ?? '', /RUN npm ci --no-audit/);
  // The processes run from the bundles that npm run build makes; the context lets in the two files it needs.
  t.regex(stages.get('build') ?? '', /^RUN npm run build$/m);
  const dockerignore = readFileSync(path.join(root, '.dockerignore'), 'utf8');
  for (const file of ['scripts/bundle.mjs', 'scripts/lib/bundle.mjs']) {
    t.true(dockerignore.includes(`!${file}`), `${file} reaches the build`);
    t.regex(stages.get('build') ?? '', new RegExp(`^COPY ${file} ${file}$`, 'm'));
  }
  t.regex(stages.get('prod-deps') ?? '', /RUN npm ci --omit=dev/);
  const runtime = stages.get('runtime') ?? '';
  t.regex(runtime, /COPY --from=prod-deps \/app\/node_modules node_modules/);
  t.regex(runtime, /COPY --from=build \/app\/dist dist/);
  t.notRegex(runtime, /--from=build \/app\/node_modules/);
  t.regex(runtime, /^USER node$/m);
  t.regex(stages.get('loadtest') ?? '', /^USER node$/m);
  t.true(parts.at(-1)?.includes(' AS runtime'), 'runtime is the default (last) target');
});
