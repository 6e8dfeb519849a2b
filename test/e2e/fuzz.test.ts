/**
 * Property-based fuzzing of the real api (fast-check): arbitrary methods, paths,
 * query strings, headers and bodies (JSON values, strings, near-valid creates, deep
 * nesting) at every route. Whatever the input: no 5xx but 503, every error in the
 * contract's envelope with a catalogued code and its status, a Request-Id on every
 * answer, and the process still up at the end.
 *
 * `npm test` runs FUZZ_RUNS cases (default 150); raise it for a longer campaign,
 * e.g. `FUZZ_RUNS=5000 npm test -- dist/test/e2e/fuzz.test.js`. FUZZ_SEED replays a run.
 */
import test from 'ava';
import fc from 'fast-check';
import { ERROR_CODES, type ErrorCode } from '../../common/errors.js';
import { Service, uniqueName } from '../helpers/service.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 150);
const SEED = process.env.FUZZ_SEED === undefined ? undefined : Number(process.env.FUZZ_SEED);

let service: Service;
const ids: Record<string, string> = {};
const auth: Record<string, string | null> = {};

test.before(async () => {
  service = await Service.start({ workers: 1 });
  const project = uniqueName('fuzz');
  const [testKey, liveKey] = [await service.issueKey(project), await service.issueKey(project, true)];
  const pi = await service.request('POST', '/v1/payment_intents', { key: testKey, body: { amount: 100 } });
  const we = await service.request('POST', '/v1/webhook_endpoints', { key: testKey, body: { url: 'https://example.com/fuzz' } });
  ids.pi = pi.body.id;
  ids.we = we.body.id;
  ids.evt = `evt_${String(pi.body.id).slice(3)}`;
  Object.assign(auth, {
    none: null,
    test: `Bearer ${testKey}`,
    live: `Bearer ${liveKey}`,
    admin: `Bearer ${service.adminToken}`,
    basic: `Basic ${Buffer.from(`admin:${service.adminToken}`).toString('base64')}`,
    unknownKey: `Bearer sk_test_${'Z'.repeat(40)}`,
    garbage: 'Bearer nonsense',
    malformed: 'Basic ###',
  });
});

test.after.always(async () => {
  await service?.stop();
});

/** Characters a header value may carry over HTTP (no CR, LF or NUL; Latin-1). */
const headerValue = fc.string({ unit: fc.constantFrom(...'abcXYZ019 -_.:;,/=+*%$#!?"\'{}[]()<>@\\\t~é\u00ff'.split('')), maxLength: 40 });

const anyId = fc.oneof(
  fc.constantFrom(() => ids.pi, () => ids.we, () => ids.evt).map((f) => f() as string),
  fc.constantFrom('pi_', 'we_', 'evt_', 'key_', 'att_', '', '%00', '%ZZ', '..', '.', '%2F', 'pi_%2e%2e', 'a'.repeat(300)),
  fc.string({ maxLength: 30 }).map((s) => encodeURIComponent(s)),
);

/** Every route of the api, with the credential it expects; `{id}` and `{queue}` are filled in. */
const ROUTES: ReadonlyArray<readonly [method: string, template: string, auth: string]> = [
  ['POST', '/v1/payment_intents', 'test'],
  ['GET', '/v1/payment_intents', 'test'],
  ['GET', '/v1/payment_intents/{id}', 'test'],
  ['POST', '/v1/webhook_endpoints', 'test'],
  ['GET', '/v1/webhook_endpoints', 'live'],
  ['GET', '/v1/webhook_endpoints/{id}', 'test'],
  ['GET', '/v1/webhook_endpoints/{id}/attempts', 'test'],
  ['GET', '/v1/events', 'test'],
  ['GET', '/v1/events/{id}', 'test'],
  ['GET', '/v1/operators', 'live'],
  ['GET', '/v1/operators/resolve?phone_number={id}', 'test'],
  ['POST', '/admin/v1/api_keys', 'admin'],
  ['GET', '/admin/v1/api_keys', 'admin'],
  ['DELETE', '/admin/v1/api_keys/{id}', 'admin'],
  ['GET', '/healthz', 'none'],
  ['GET', '/readyz', 'none'],
  ['GET', '/metrics', 'none'],
  ['GET', '/docs/errors', 'none'],
  ['GET', '/admin/queues', 'basic'],
  ['GET', '/admin/queues/api/queues', 'basic'],
  ['GET', '/admin/queues/api/queues/{queue}/{id}', 'basic'],
  ['PUT', '/admin/queues/api/queues/{queue}/retry/failed', 'basic'],
  ['PUT', '/admin/queues/api/queues/{queue}/clean/completed', 'basic'],
  ['POST', '/admin/queues/api/queues/{queue}/add', 'basic'],
];

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'] as const;
const AUTHS = ['none', 'test', 'live', 'admin', 'basic', 'unknownKey', 'garbage', 'malformed'] as const;
const queue = fc.oneof(fc.constantFrom('writes', 'events', 'webhooks', 'maintenance'), fc.string({ maxLength: 10 }).map(encodeURIComponent));

/** A route of the api, mostly with its own method and credential, sometimes with another. */
const routed = fc
  .tuple(fc.constantFrom(...ROUTES), anyId, queue, fc.constantFrom(...METHODS), fc.constantFrom(...AUTHS), fc.nat({ max: 9 }))
  .map(([[method, template, routeAuth], id, queueName, otherMethod, otherAuth, dice]) => ({
    method: dice === 0 ? otherMethod : method,
    path: template.replace('{id}', id).replace('{queue}', queueName),
    auth: dice === 1 ? otherAuth : routeAuth,
  }));

/** Anywhere at all. */
const stray = fc
  .tuple(
    fc.oneof(
      fc.webPath().map((p) => `/${p.replace(/^\/+/, '')}`),
      fc.tuple(fc.constantFrom('/v1/', '/admin/', '/admin/queues/', '/docs/', '/v1/payment_intents/'), fc.string({ maxLength: 20 })).map(([a, b]) => a + encodeURIComponent(b)),
    ),
    fc.constantFrom(...METHODS),
    fc.constantFrom(...AUTHS),
  )
  .map(([path, method, auth]) => ({ method, path, auth }));

const queryName = fc.oneof(fc.constantFrom('limit', 'starting_after', 'ending_before', 'type', 'project', 'expand[]', ''), fc.string({ maxLength: 8 }));
const queryValue = fc.oneof(fc.constantFrom('0', '1', '100', '101', '-1', '1e2', '', 'payment_intent.created', '*'), anyId, fc.string({ maxLength: 20 }));
const query = fc.oneof(
  fc.constant(''),
  fc.array(fc.tuple(queryName, queryValue), { maxLength: 4 }).map((pairs) => new URLSearchParams(pairs).toString()),
  fc.string({ maxLength: 30 }).map((s) => s.replace(/#/g, '')),
);

/** Bodies of every kind: near-valid creates are what reach the queue and the worker. */
const createBody = fc.record(
  {
    amount: fc.oneof(fc.integer({ min: -5, max: 2_000_000_000_000 }), fc.jsonValue()),
    currency: fc.oneof(fc.constantFrom('usd', 'EUR', 'xof', 'zzz'), fc.jsonValue()),
    description: fc.oneof(fc.string({ maxLength: 50 }), fc.jsonValue()),
    metadata: fc.oneof(fc.dictionary(fc.string({ maxLength: 45 }), fc.string({ maxLength: 20 }), { maxKeys: 5 }), fc.jsonValue()),
    allowed_operators: fc.oneof(fc.subarray(['mtn_momo', 'wave', 'mpesa', 'nope']), fc.jsonValue()),
    selected_operator: fc.oneof(fc.constantFrom('wave', 'mpesa', null), fc.jsonValue()),
    automatic_operator: fc.oneof(fc.boolean(), fc.jsonValue()),
    expires_at: fc.oneof(fc.integer(), fc.jsonValue()),
    url: fc.oneof(fc.constantFrom('https://example.com/h', 'http://127.0.0.1:1/', 'https://[::1]/', 'ftp://x'), fc.webUrl(), fc.jsonValue()),
    enabled_events: fc.oneof(fc.constantFrom(['*'], ['payment_intent.created'], [], ['x']), fc.jsonValue()),
    project: fc.oneof(fc.constantFrom('fuzzed', 'BAD NAME'), fc.jsonValue()),
    livemode: fc.oneof(fc.boolean(), fc.jsonValue()),
  },
  { requiredKeys: [] },
);
const body = fc.oneof(
  fc.constant(undefined),
  createBody.map((b) => JSON.stringify(b)),
  fc.jsonValue().map((v) => JSON.stringify(v)),
  fc.string({ maxLength: 200 }),
  fc.nat({ max: 100 }).map((n) => `{"metadata":${'{"a":'.repeat(n)}1${'}'.repeat(n)}}`),
  fc.constantFrom('{', '{"amount":1,}', '\u0000', '{"__proto__":{"x":1}}', '{"amount":1e400}', 'amount=100&currency=usd', '{"a":"\\ud800"}'),
);

const request = fc.record({
  target: fc.oneof({ weight: 5, arbitrary: routed }, { weight: 1, arbitrary: stray }),
  query,
  contentType: fc.oneof(fc.constantFrom(undefined, 'application/json', 'application/json; charset=utf-8', 'APPLICATION/JSON', 'text/plain', 'application/x-www-form-urlencoded'), headerValue),
  idempotencyKey: fc.option(fc.oneof(fc.constantFrom('k1', 'k2', ''), headerValue), { nil: undefined }),
  extraHeaders: fc.dictionary(fc.stringMatching(/^[A-Za-z][A-Za-z0-9-]{0,15}$/), headerValue, { maxKeys: 3 }),
  body,
});

type FuzzRequest = typeof request extends fc.Arbitrary<infer T> ? T : never;

const tally = new Map<number, number>();
let cases = 0;

async function send(r: FuzzRequest): Promise<void> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(r.extraHeaders)) {
    if (!/^(host|content-length|transfer-encoding|connection|expect|upgrade|te|keep-alive|trailer)$/i.test(name)) headers[name] = value;
  }
  const { method, path, auth: credential } = r.target;
  const authorization = auth[credential];
  if (authorization) headers.Authorization = authorization;
  if (r.contentType !== undefined) headers['Content-Type'] = r.contentType;
  if (r.idempotencyKey !== undefined) headers['Idempotency-Key'] = r.idempotencyKey;
  const withBody = r.body !== undefined && method !== 'GET' && method !== 'HEAD';
  const url = `${service.baseUrl}${path}${r.query ? `?${r.query}` : ''}`;
  const res = await fetch(url, { method, headers, body: withBody ? r.body : undefined, redirect: 'manual' });
  const text = await res.text();
  cases++;
  tally.set(res.status, (tally.get(res.status) ?? 0) + 1);
  const where = `${method} ${path}${r.query ? `?${r.query}` : ''} → ${res.status} ${text.slice(0, 300)}`;

  if (res.status >= 500 && res.status !== 503) throw new Error(`5xx: ${where}`);
  const requestId = res.headers.get('request-id');
  if (!requestId?.startsWith('req_')) throw new Error(`no Request-Id: ${where}`);
  if (res.status < 400 || method === 'HEAD') return;
  let envelope: { error?: Record<string, unknown> };
  try {
    envelope = JSON.parse(text);
  } catch {
    throw new Error(`error body is not JSON: ${where}`);
  }
  const error = envelope.error;
  if (!error || typeof error !== 'object') throw new Error(`no error envelope: ${where}`);
  for (const member of ['type', 'code', 'message', 'request_id', 'doc_url']) {
    if (typeof error[member] !== 'string') throw new Error(`error.${member} missing: ${where}`);
  }
  const info = ERROR_CODES[error.code as ErrorCode];
  if (!info) throw new Error(`uncatalogued code ${String(error.code)}: ${where}`);
  if (info.type !== error.type) throw new Error(`type ${String(error.type)} is not the code's: ${where}`);
  const cursorMissing = error.code === 'resource_missing' && res.status === 400;
  if (info.status !== res.status && !cursorMissing) throw new Error(`status is not the code's (${info.status}): ${where}`);
  if (error.request_id !== requestId) throw new Error(`request_id is not the Request-Id header: ${where}`);
}

test('no input gets a 5xx but 503, every error has the envelope, and the api stays up', async (t) => {
  t.timeout(Math.max(180_000, RUNS * 400));
  const run = await fc.check(fc.asyncProperty(request, send), { numRuns: RUNS, seed: SEED });
  if (run.failed) {
    const error = run.errorInstance instanceof Error ? run.errorInstance.message : String(run.errorInstance);
    t.fail(`seed ${run.seed} (FUZZ_SEED replays it), after ${run.numRuns} cases, shrunk ${run.numShrinks} times:\n${JSON.stringify(run.counterexample)}\n${error}`);
  }
  t.true(service.api.running, 'the api process is still running');
  const health = await service.request('GET', '/healthz');
  t.is(health.status, 200);
  t.log(`${cases} requests; statuses: ${[...tally].sort(([a], [b]) => a - b).map(([s, n]) => `${s}×${n}`).join(' ')}`);
  t.true(cases >= RUNS);
});
