// npm run operator-smoke -- --operator mtn_momo|mpesa|wave [options]: one live payment
// and one refund against a real operator (its sandbox, or production with a small
// amount), through a local stack started as `npm start` starts it: Redis and FerretDB
// (data in .data/operator-smoke/), one api, one worker, a live key of project `smoke`.
// Not part of CI: it needs the operator's credentials in the environment and reaches
// the operator over the network. docs/operating.md, "Smoke-testing an operator
// account", says how to run it and what it proves.
//
// Exit codes: 0 the payment and its refund succeeded; 1 they did not (or the stack
// failed); 2 refused before anything started (usage, missing variables).
// It prints no secret: no API key, no credential, phone numbers masked.

import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

import { BUNDLES, ROOT, ensureBuild, ensureNodeModules } from './lib/build.mjs';
import { freePort } from './lib/net.mjs';
import { clearPidFile, reapStale, recordChild } from './lib/pid-files.mjs';
import { startStack } from './lib/servers.mjs';

const USAGE = `usage: npm run operator-smoke -- --operator mtn_momo|mpesa|wave [options]

Runs ONE live payment and, if it succeeds, ONE full refund against the operator
account whose variables are set in the environment, through a local stack (Redis,
FerretDB, one api, one worker; data in .data/operator-smoke/). Real money moves
outside a sandbox: keep the amount small.

options:
  --operator NAME     mtn_momo, mpesa or wave (required)
  --phone +E164       the payer's number (required for Wave and for production
                      accounts; defaults: MTN sandbox +46733123459, Daraja sandbox
                      +254708374149)
  --amount N          in the currency's smallest unit (default: the sandbox's or the
                      catalog's minimum: 100 = 1.00 EUR / 1 KES, 100 XOF)
  --currency C        ISO 4217 code (default: eur on MTN's sandbox, the country's
                      currency on an MTN production account, kes, xof)
  --return-url URL    Wave: where Wave sends the payer back (https; default: the
                      api's /operators/wave/return page under PUBLIC_BASE_URL)
  --no-callbacks      no public URL: PUBLIC_BASE_URL becomes the local api, callbacks
                      are lost and polling alone decides (not enough for M-Pesa
                      refunds, whose answers only arrive as callbacks)
  --wait MINUTES      how long to wait for the payment, then for the refund (default 5)
  -h, --help          this text

environment: the operator's variables (docs/live-operators.md):
  mtn_momo  MTN_MOMO_BASE_URL MTN_MOMO_TARGET_ENVIRONMENT
            MTN_MOMO_{COLLECTION,DISBURSEMENT}_{SUBSCRIPTION_KEY,USER_ID,API_KEY}
  mpesa     MPESA_BASE_URL MPESA_CONSUMER_KEY MPESA_CONSUMER_SECRET MPESA_SHORTCODE
            MPESA_PASSKEY MPESA_INITIATOR_NAME MPESA_SECURITY_CREDENTIAL
  wave      WAVE_BASE_URL WAVE_API_KEY WAVE_WEBHOOK_SECRET [WAVE_COUNTRY, default SN]
and PUBLIC_BASE_URL (https, routed to this machine's api port: set PORT to fix it),
unless --no-callbacks. REDIS_URL and MONGODB_URL are ignored: the smoke always
runs on its own local servers. OPERATOR_ACCOUNTS_FILE and the other operators'
variables are not passed on.

exit codes: 0 payment and refund succeeded, 1 they did not, 2 refused (usage,
missing variables)`;

/** The section-12 group of each operator with a connector (common/config.ts, OPERATOR_GROUPS). */
const GROUPS = {
  mtn_momo: [
    'MTN_MOMO_BASE_URL',
    'MTN_MOMO_TARGET_ENVIRONMENT',
    'MTN_MOMO_COLLECTION_SUBSCRIPTION_KEY',
    'MTN_MOMO_COLLECTION_USER_ID',
    'MTN_MOMO_COLLECTION_API_KEY',
    'MTN_MOMO_DISBURSEMENT_SUBSCRIPTION_KEY',
    'MTN_MOMO_DISBURSEMENT_USER_ID',
    'MTN_MOMO_DISBURSEMENT_API_KEY',
  ],
  mpesa: [
    'MPESA_BASE_URL',
    'MPESA_CONSUMER_KEY',
    'MPESA_CONSUMER_SECRET',
    'MPESA_SHORTCODE',
    'MPESA_PASSKEY',
    'MPESA_INITIATOR_NAME',
    'MPESA_SECURITY_CREDENTIAL',
  ],
  wave: ['WAVE_BASE_URL', 'WAVE_API_KEY', 'WAVE_WEBHOOK_SECRET'],
};
/** Optional variables of a group, passed on when set. */
const OPTIONAL = { mtn_momo: [], mpesa: [], wave: ['WAVE_COUNTRY'] };
const PREFIXES = { mtn_momo: 'MTN_MOMO_', mpesa: 'MPESA_', wave: 'WAVE_' };

/** MTN's sandbox payer that succeeds; see docs/operating.md, "Getting MTN MoMo sandbox credentials". */
const MTN_SANDBOX_PAYER = '+46733123459';
/** Daraja's documented sandbox test MSISDN. */
const DARAJA_SANDBOX_PAYER = '+254708374149';

const DATA_DIR = process.env.OPERATOR_SMOKE_DATA_DIR || path.join(ROOT, '.data', 'operator-smoke');
const POLL_MS = 3000;
const STOP_TIMEOUT_MS = 15_000;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const say = (message) => process.stdout.write(`[smoke] ${message}\n`);
const warn = (message) => process.stderr.write(`[smoke] ${message}\n`);

function refuse(message) {
  process.stderr.write(`operator-smoke: ${message}\n\nRun with --help for the options.\n`);
  process.exit(2);
}

/** `+46733123459` → `+467*****59`: the country code and the last two digits. */
function maskPhone(phone) {
  if (typeof phone !== 'string' || phone.length < 7) return '•••';
  return `${phone.slice(0, 4)}${'*'.repeat(phone.length - 6)}${phone.slice(-2)}`;
}

const iso = (unixSeconds) => (typeof unixSeconds === 'number' ? new Date(unixSeconds * 1000).toISOString() : String(unixSeconds));

// ---------------------------------------------------------------------------
// Arguments and environment: everything is checked before anything starts.

let args;
try {
  ({ values: args } = parseArgs({
    args: process.argv.slice(2),
    options: {
      operator: { type: 'string' },
      phone: { type: 'string' },
      amount: { type: 'string' },
      currency: { type: 'string' },
      'return-url': { type: 'string' },
      'no-callbacks': { type: 'boolean', default: false },
      wait: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
    allowPositionals: false,
  }));
} catch (error) {
  refuse(error.message);
}
if (args.help) {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}

const operator = args.operator;
if (!operator) refuse('--operator is required: mtn_momo, mpesa or wave');
if (!Object.hasOwn(GROUPS, operator)) refuse(`--operator must be mtn_momo, mpesa or wave (the operators with a live connector), not "${operator}"`);

const missing = GROUPS[operator].filter((name) => !process.env[name]);
const noCallbacks = args['no-callbacks'];
if (!noCallbacks && !process.env.PUBLIC_BASE_URL) missing.push('PUBLIC_BASE_URL');
if (missing.length > 0) {
  refuse(
    `${operator} cannot be smoke-tested: set ${missing.join(', ')}` +
      (missing.includes('PUBLIC_BASE_URL')
        ? ' (operators send callbacks to it; or pass --no-callbacks to point it at the local api and rely on polling)'
        : '') +
      '. See docs/live-operators.md.',
  );
}
if (!noCallbacks && !/^https?:\/\//.test(process.env.PUBLIC_BASE_URL)) refuse('PUBLIC_BASE_URL must be an http(s) URL');
if (process.env.PORT && !/^[1-9]\d{0,4}$/.test(process.env.PORT)) refuse('PORT must be a port number (the api\'s, where PUBLIC_BASE_URL is routed)');

const phoneArg = args.phone ?? null;
if (phoneArg !== null && !/^\+[1-9]\d{7,14}$/.test(phoneArg)) refuse('--phone must be E.164: "+", the country code and the number, 8 to 15 digits');
const amountArg = args.amount ?? null;
if (amountArg !== null && !/^[1-9]\d{0,11}$/.test(amountArg)) refuse('--amount must be a positive whole number, in the currency\'s smallest unit');
const currencyArg = args.currency?.toLowerCase() ?? null;
if (currencyArg !== null && !/^[a-z]{3}$/.test(currencyArg)) refuse('--currency must be a three-letter ISO 4217 code');
const returnUrl = args['return-url'] ?? null;
if (returnUrl !== null && !/^https?:\/\/\S+$/.test(returnUrl)) refuse('--return-url must be an absolute http(s) URL');
const waitMinutes = args.wait === undefined ? 5 : Number(args.wait);
if (!(waitMinutes > 0 && waitMinutes <= 24 * 60)) refuse('--wait must be a number of minutes, above 0 and at most 1440');
const waitMs = Math.round(waitMinutes * 60_000);

const mtnSandbox = operator === 'mtn_momo' && process.env.MTN_MOMO_TARGET_ENVIRONMENT === 'sandbox';
const darajaSandbox = operator === 'mpesa' && (() => {
  try {
    return new URL(process.env.MPESA_BASE_URL).hostname.startsWith('sandbox.');
  } catch {
    return false;
  }
})();

// The payer: the sandboxes' test numbers, else the operator's own (real money).
let phone = phoneArg;
if (phone === null) {
  if (mtnSandbox) phone = MTN_SANDBOX_PAYER;
  else if (darajaSandbox) phone = DARAJA_SANDBOX_PAYER;
  else {
    refuse(
      operator === 'wave'
        ? '--phone is required for Wave (it has no sandbox): the number of the Wave account that will pay'
        : `--phone is required against a production ${operator} account: a number you hold, which will be asked to pay`,
    );
  }
}

// ---------------------------------------------------------------------------
// The local stack, as npm start runs it.

const runId = `${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
let stack = null;
const children = [];
let key = null; // { id, secret }
let shuttingDown = null;
/** The local api's URL, and the environment the api and the worker run with. */
let baseUrl = null;
let stackEnv = null;

function keyCliEnv(env) {
  // The key CLI needs the store only: no operator credential reaches it.
  const pick = ['PATH', 'HOME', 'MONGODB_URL', 'MONGODB_DB', 'REDIS_URL', 'QUEUE_PREFIX'];
  return { ...Object.fromEntries(pick.filter((name) => env[name]).map((name) => [name, env[name]])), LOG_LEVEL: 'silent' };
}

function runKeyCli(env, cliArgs) {
  const result = spawnSync(process.execPath, [path.join('dist', 'api', 'cli.js'), ...cliArgs, '--json'], {
    cwd: ROOT,
    env: keyCliEnv(env),
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 60_000,
  });
  let value = null;
  for (const line of (result.stdout ?? '').split('\n').reverse()) {
    try {
      value = JSON.parse(line);
      break;
    } catch {
      // not this one
    }
  }
  return { ok: result.status === 0 && value !== null, value, stderr: (result.stderr ?? '').trim(), status: result.signal ?? result.status };
}

function launch(name, script, env) {
  const logFile = path.join(DATA_DIR, `${name}.log`);
  const fd = fs.openSync(logFile, 'a');
  fs.writeSync(fd, `\n--- ${new Date().toISOString()} operator-smoke ${runId}\n`);
  let child;
  try {
    // Own process group, as npm start does: Ctrl-C reaches this script, which stops them in order.
    child = spawn(process.execPath, [script], { cwd: ROOT, env, stdio: ['ignore', fd, fd], detached: true });
  } finally {
    fs.closeSync(fd);
  }
  const entry = { name, child, logFile, exited: null };
  entry.exited = new Promise((resolve) => {
    child.on('exit', (code, signal) => resolve({ code, signal }));
    child.on('error', (error) => resolve({ code: null, signal: null, error }));
  });
  entry.exited.then(({ code, signal, error }) => {
    if (shuttingDown) return;
    warn(`${name} ${error ? `failed to start: ${error.message}` : `exited (${signal ?? `code ${code}`})`}: see ${path.relative(process.cwd(), logFile)}`);
    shutdown(1);
  });
  if (child.pid) recordChild(DATA_DIR, { name, pid: child.pid, bin: process.execPath, arg: script });
  children.push(entry);
  return entry;
}

async function shutdown(exitCode) {
  if (shuttingDown) return shuttingDown;
  shuttingDown = (async () => {
    if (key && stackEnv) {
      const revoked = runKeyCli(stackEnv, ['keys', 'revoke', key.id]);
      if (revoked.ok) say(`revoked the live key ${key.id}`);
      else warn(`could not revoke the live key ${key.id} (${revoked.stderr || `exit ${revoked.status}`}): it is valid only against the smoke's own database, in ${path.relative(process.cwd(), DATA_DIR)}/ (delete that directory to drop it)`);
    }
    // The api first, then the worker (which finishes its active jobs), then the servers.
    for (const name of ['api', 'worker']) {
      const stopping = children.filter((c) => c.name === name && c.child.exitCode === null && c.child.signalCode === null);
      for (const { child } of stopping) child.kill('SIGTERM');
      const timer = setTimeout(() => stopping.forEach(({ child }) => child.kill('SIGKILL')), STOP_TIMEOUT_MS);
      await Promise.all(stopping.map((c) => c.exited));
      clearTimeout(timer);
    }
    if (stack) await stack.stop();
    clearPidFile(DATA_DIR);
    process.exit(exitCode);
  })();
  return shuttingDown;
}

let signals = 0;
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => {
    signals += 1;
    if (signals > 1) for (const { child } of children) child.kill('SIGKILL');
    warn(`${signal}: stopping (an attempt in flight stays with the operator; the next smoke run, on the same data, goes on checking it)`);
    shutdown(130);
  });
}

// ---------------------------------------------------------------------------
// HTTP against the local api, with the live key.

const ok2xx = (answer) => answer.status >= 200 && answer.status < 300;

async function api(method, url, body, idempotencyKey) {
  const headers = { authorization: `Bearer ${key.secret}`, accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (idempotencyKey) headers['idempotency-key'] = idempotencyKey;
  let response;
  try {
    response = await fetch(`${baseUrl}${url}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(60_000) });
  } catch (error) {
    return { status: 0, body: null, error: error.message, retryAfter: null };
  }
  const text = await response.text();
  let parsed = null;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON
  }
  const retryAfter = Number(response.headers.get('retry-after'));
  return { status: response.status, body: parsed, error: null, retryAfter: Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter : null };
}

function describeError(answer) {
  if (answer.status === 0) return `no answer from the local api (${answer.error})`;
  const error = answer.body?.error;
  if (!error) return `HTTP ${answer.status}`;
  return `HTTP ${answer.status} ${error.code}: ${error.message}`;
}

/** Warnings and errors of the worker's and the api's logs about these objects (or the operator), without values that could be secrets. */
function operatorLogLines(ids, limit = 12) {
  const fields = ['operator', 'account', 'status', 'reason', 'operator_code', 'operator_message', 'error', 'err', 'attempt'];
  const lines = [];
  for (const { name, logFile } of children) {
    let content;
    try {
      content = fs.readFileSync(logFile, 'utf8');
    } catch {
      continue;
    }
    const start = content.lastIndexOf(`operator-smoke ${runId}`);
    for (const line of content.slice(Math.max(start, 0)).split('\n')) {
      let entry;
      try {
        entry = JSON.parse(line);
      } catch {
        continue;
      }
      if (!(entry.level >= 40)) continue;
      const related = ids.some((id) => id && line.includes(id)) || entry.operator === operator;
      if (!related) continue;
      const details = fields.filter((f) => entry[f] !== undefined && entry[f] !== null).map((f) => `${f}=${typeof entry[f] === 'object' ? JSON.stringify(entry[f]) : entry[f]}`);
      lines.push(`  ${name}: ${entry.msg}${details.length ? ` (${details.join(', ')})` : ''}`);
    }
  }
  return lines.slice(-limit);
}

// ---------------------------------------------------------------------------

const summary = { operator, account: null, phone: maskPhone(phone), payment: null, decline: null, refund: null, refundFailure: null };

function printSummary() {
  const lines = [
    '',
    '  Operator smoke test',
    `  operator        ${operator}${summary.account ? `   account ${summary.account}` : ''}`,
    `  payer           ${summary.phone}`,
    `  payment         ${summary.payment ?? 'not created'}${summary.decline ? `   (${summary.decline})` : ''}`,
    `  refund          ${summary.refund ?? 'not made'}${summary.refundFailure ? `   (${summary.refundFailure})` : ''}`,
    `  logs            ${path.relative(process.cwd(), DATA_DIR)}/{api,worker}.log`,
    '',
  ];
  process.stdout.write(lines.join('\n'));
}

async function finish(ok, ids = []) {
  if (!ok) {
    const lines = operatorLogLines(ids);
    if (lines.length > 0) {
      warn('what the service logged about it:');
      process.stderr.write(`${lines.join('\n')}\n`);
    }
  }
  printSummary();
  process.stdout.write(ok ? '  PASS: the payment and its refund succeeded\n\n' : '  FAIL\n\n');
  await shutdown(ok ? 0 : 1);
}

try {
  ensureNodeModules();
  ensureBuild();
} catch (error) {
  warn(error.message);
  process.exit(1);
}

// Defaults that depend on the catalog (the build's common/operator-catalog.js).
let currency = currencyArg;
let amount = amountArg === null ? null : Number(amountArg);
{
  const catalog = await import(pathToFileURL(path.join(ROOT, 'dist', 'common', 'operator-catalog.js')).href).catch(() => null);
  const accounts = await import(pathToFileURL(path.join(ROOT, 'dist', 'common', 'operator-accounts.js')).href).catch(() => null);
  let country = null;
  if (mtnSandbox) {
    currency ??= 'eur'; // MTN's sandbox takes EUR only
    amount ??= 100;
  } else if (operator === 'mtn_momo') {
    country = accounts?.MTN_TARGET_ENVIRONMENTS?.[process.env.MTN_MOMO_TARGET_ENVIRONMENT.toLowerCase()] ?? null;
  } else if (operator === 'mpesa') {
    country = 'KE';
  } else {
    country = (process.env.WAVE_COUNTRY || 'SN').toUpperCase();
  }
  if (country !== null && catalog?.termsIn) {
    const terms = catalog.termsIn(operator, country);
    const chosen = (currency ? terms.find((t) => t.currencies.includes(currency)) : terms[0]) ?? null;
    if (chosen) {
      currency ??= chosen.currencies[0];
      amount ??= chosen.minAmount;
    }
  }
  if (currency === null || amount === null) {
    warn(`no default amount and currency for ${operator}${country ? ` in ${country}` : ''}: pass --amount and --currency`);
    process.exit(2);
  }
}

const publicBaseUrlNote = noCallbacks ? 'the local api (--no-callbacks: callbacks are lost, polling decides)' : process.env.PUBLIC_BASE_URL;
say(`${operator}${mtnSandbox ? ' (MTN sandbox)' : darajaSandbox ? ' (Daraja sandbox)' : ' (PRODUCTION: real money)'}: ${amount} ${currency} (smallest unit) from ${maskPhone(phone)}; callbacks to ${publicBaseUrlNote}`);
if (noCallbacks && operator === 'mpesa') {
  warn('M-Pesa with --no-callbacks: the payment is read by the STK query, but a refund needs the receipt, the reversal\'s Result and Transaction Status answers, which Daraja sends to PUBLIC_BASE_URL, out of its reach here: the refund will not finish');
}
if (noCallbacks && operator === 'mtn_momo') {
  warn('MTN with --no-callbacks: the X-Callback-Url host must be the API user\'s providerCallbackHost or MTN refuses the payment (INVALID_CALLBACK_URL_HOST); if it does, set PUBLIC_BASE_URL to https://<that host> instead, even if it does not reach this machine');
}
if (noCallbacks && operator === 'wave' && returnUrl === null) {
  warn('Wave with --no-callbacks and no --return-url: Wave is sent http://127.0.0.1/… as the payer\'s success and error URLs, which it may refuse; pass --return-url https://…');
}

fs.mkdirSync(DATA_DIR, { recursive: true });
try {
  await reapStale(DATA_DIR);
  stack = await startStack({ dataDir: DATA_DIR, persistent: false });
} catch (error) {
  warn(error.message);
  process.exit(1);
}

// PORT: a fixed port, for a tunnel from PUBLIC_BASE_URL; else a free one.
const port = process.env.PORT ? Number(process.env.PORT) : await freePort();
baseUrl = `http://127.0.0.1:${port}`;

// The environment of the api and the worker: this operator's group only, on the smoke's own servers.
const otherOperators = Object.keys(GROUPS).filter((name) => name !== operator);
const dropped = Object.keys(process.env).filter(
  (name) => name === 'OPERATOR_ACCOUNTS_FILE' || otherOperators.some((other) => name.startsWith(PREFIXES[other])),
);
if (dropped.length > 0) say(`not passed to the service: ${dropped.join(', ')} (the smoke tests ${operator}'s variables alone)`);
stackEnv = Object.fromEntries(Object.entries(process.env).filter(([name]) => !dropped.includes(name) && name !== 'ADMIN_TOKEN'));
Object.assign(stackEnv, {
  REDIS_URL: stack.redisUrl,
  MONGODB_URL: stack.mongoUrl,
  MONGODB_DB: 'operator_smoke',
  QUEUE_PREFIX: 'operator-smoke',
  HOST: '127.0.0.1',
  PORT: String(port),
  PUBLIC_BASE_URL: noCallbacks ? baseUrl : process.env.PUBLIC_BASE_URL,
});
for (const name of OPTIONAL[operator]) if (process.env[name]) stackEnv[name] = process.env[name];

launch('api', BUNDLES.api, stackEnv);
launch('worker', BUNDLES.worker, stackEnv);
say(`api on ${baseUrl}${noCallbacks ? '' : ` (route ${process.env.PUBLIC_BASE_URL}/operators/ to it)`}; logs in ${path.relative(process.cwd(), DATA_DIR)}/`);

{
  const deadline = Date.now() + 60_000;
  let ready = false;
  while (!shuttingDown && Date.now() < deadline) {
    try {
      const response = await fetch(`${baseUrl}/readyz`, { signal: AbortSignal.timeout(2000) });
      ready = response.ok;
    } catch {
      ready = false;
    }
    if (ready) break;
    await sleep(250);
  }
  if (!ready) {
    warn(`the api was not ready within 60 s: see ${path.relative(process.cwd(), DATA_DIR)}/api.log`);
    await finish(false);
  }
}

// A live key for project `smoke`, made by the key CLI as npm start makes its test key; revoked at the end.
{
  const created = runKeyCli(stackEnv, ['keys', 'create', '--project', 'smoke', '--live']);
  if (!created.ok || typeof created.value?.secret !== 'string') {
    warn(`could not create a live key (\`node dist/api/cli.js keys create --project smoke --live\`: ${created.stderr || `exit ${created.status}`})`);
    await finish(false);
  }
  key = { id: created.value.id, secret: created.value.secret };
  say(`live key ${key.id} for project smoke (revoked at the end)`);
}

// The operator's accounts as the service sees them.
{
  const answer = await api('GET', '/v1/operators');
  const entry = answer.body?.data?.find((o) => o.id === operator);
  if (!entry) {
    warn(`GET /v1/operators does not list ${operator}: ${describeError(answer)}`);
    await finish(false);
  }
  const accounts = entry.accounts ?? [];
  say(`GET /v1/operators: ${operator} ${entry.status}; accounts ${accounts.map((a) => `${a.id} [${a.countries.join(',') || 'test numbers'}${a.sandbox ? ', sandbox' : ''}] ${a.status}`).join('; ') || 'none'}`);
  summary.account = accounts.length === 1 ? accounts[0].id : null;
}

const deadlineOf = () => Date.now() + waitMs;

// 1. The payment intent.
let intent;
{
  const answer = await api('POST', '/v1/payment_intents', {
    amount,
    currency,
    allowed_operators: [operator],
    selected_operator: operator,
    description: `operator smoke ${runId}`,
    metadata: { smoke: runId },
  }, `smoke-${runId}-create`);
  if (!ok2xx(answer) || !answer.body?.id) {
    warn(`create: ${describeError(answer)}`);
    await finish(false);
  }
  intent = answer.body;
  summary.payment = `${intent.id} ${intent.status}`;
  say(`created ${intent.id}: ${intent.amount} ${intent.currency}, ${intent.status}`);
}

// 2. The confirm: a 503 operator_unavailable (the account's breaker is open) changed nothing; wait and confirm again.
{
  const deadline = deadlineOf();
  let attempt = 0;
  let keySuffix = 0;
  for (;;) {
    attempt += 1;
    const answer = await api('POST', `/v1/payment_intents/${intent.id}/confirm`, {
      operator,
      phone_number: phone,
      ...(returnUrl ? { return_url: returnUrl } : {}),
    }, `smoke-${runId}-confirm-${keySuffix}`);
    if (ok2xx(answer)) {
      intent = answer.body;
      break;
    }
    const code = answer.body?.error?.code;
    if (answer.status === 402) {
      intent = answer.body?.error?.payment_intent ?? intent;
      summary.decline = answer.body?.error?.operator_decline_code ?? code;
      warn(`confirm declined: ${describeError(answer)}`);
      summary.payment = `${intent.id} ${intent.status}, declined`;
      await finish(false, [intent.id]);
    }
    const retryable = answer.status === 503 || answer.status === 0 || answer.status === 429;
    if (!retryable || Date.now() > deadline) {
      warn(`confirm: ${describeError(answer)}`);
      if (code === 'operator_not_configured') warn(`the service has no live ${operator} account for ${maskPhone(phone)}'s country: check the number, WAVE_COUNTRY or MTN_MOMO_TARGET_ENVIRONMENT`);
      await finish(false, [intent.id]);
    }
    // operator_unavailable guarantees nothing changed: a new key asks again. Other 503s (processing_timeout) go on: same key.
    if (code === 'operator_unavailable') keySuffix += 1;
    const delay = Math.min((answer.retryAfter ?? 5) * 1000, 60_000);
    warn(`confirm: ${describeError(answer)}; again in ${Math.round(delay / 1000)} s (try ${attempt})`);
    await sleep(delay);
  }
}

function describeNextAction(nextAction) {
  if (!nextAction) return 'none';
  if (nextAction.type === 'await_phone_approval') {
    const a = nextAction.await_phone_approval;
    return `await_phone_approval on ${a.phone_number} ("${a.display_message}"), until ${iso(a.expires_at)}`;
  }
  if (nextAction.type === 'redirect_to_url') return `redirect_to_url ${nextAction.redirect_to_url.url}`;
  return nextAction.type;
}

say(`confirmed: ${intent.status}; next_action ${describeNextAction(intent.next_action)}`);
if (intent.next_action?.type === 'redirect_to_url') {
  process.stdout.write(`\n  Open this Wave link on the payer's phone and pay (within ${waitMinutes} min):\n\n    ${intent.next_action.redirect_to_url.url}\n\n`);
}

// 3. Poll the intent until the operator's answer decides it.
const declined = (pi) => pi.status === 'new' && pi.last_payment_error !== null;
const isFinal = (pi) => ['succeeded', 'canceled', 'expired'].includes(pi.status) || declined(pi);
{
  const deadline = deadlineOf();
  let seen = `${intent.status}|${intent.last_payment_error?.operator_decline_code ?? ''}`;
  while (!isFinal(intent) && Date.now() < deadline) {
    await sleep(POLL_MS);
    const answer = await api('GET', `/v1/payment_intents/${intent.id}`);
    if (answer.status !== 200) {
      warn(`retrieve: ${describeError(answer)}`);
      continue;
    }
    intent = answer.body;
    const now = `${intent.status}|${intent.last_payment_error?.operator_decline_code ?? ''}`;
    if (now !== seen) {
      seen = now;
      const failedTry = intent.last_payment_error && !declined(intent) ? ` (a failed try: ${intent.last_payment_error.operator_decline_code}; the payer may try again)` : '';
      say(`${intent.id}: ${declined(intent) ? `declined (${intent.last_payment_error.operator_decline_code}), back to new` : intent.status}${failedTry}`);
    }
  }
  summary.payment = `${intent.id} ${intent.status}`;
  if (intent.last_payment_error) summary.decline = `${intent.last_payment_error.operator_decline_code}: ${intent.last_payment_error.message}`;
  if (!isFinal(intent)) {
    warn(`no final answer within ${waitMinutes} min: ${intent.status}`);
    if (operator === 'wave') {
      // A Wave cancel expires the session at Wave first; if Wave says it was paid, the intent succeeds instead.
      const canceled = await api('POST', `/v1/payment_intents/${intent.id}/cancel`, { cancellation_reason: 'abandoned' }, `smoke-${runId}-cancel`);
      if (ok2xx(canceled)) {
        intent = canceled.body;
        say(`canceled: ${intent.status} (Wave's session was expired first)`);
        summary.payment = `${intent.id} ${intent.status}`;
      } else {
        warn(`cancel: ${describeError(canceled)}`);
      }
    } else {
      warn('an MTN or M-Pesa prompt cannot be withdrawn: the operator may still settle it; the next smoke run, on the same data, goes on checking it');
    }
    if (intent.status !== 'succeeded') await finish(false, [intent.id]);
  } else if (intent.status !== 'succeeded') {
    warn(`payment ${intent.status}${intent.last_payment_error ? `: ${intent.last_payment_error.operator_decline_code} (${intent.last_payment_error.message})` : ''}`);
    await finish(false, [intent.id]);
  }
  summary.decline = null;
  say(`${intent.id} succeeded: ${intent.amount_received} ${intent.currency} received`);
}

// 4. One full refund, polled until the operator's answer decides it.
{
  const answer = await api('POST', '/v1/refunds', { payment_intent: intent.id, reason: 'requested_by_customer', description: `operator smoke ${runId}` }, `smoke-${runId}-refund`);
  if (!ok2xx(answer) || !answer.body?.id) {
    warn(`refund: ${describeError(answer)}`);
    summary.refund = `refused (${answer.body?.error?.code ?? answer.status})`;
    await finish(false, [intent.id]);
  }
  let refund = answer.body;
  say(`refund ${refund.id}: ${refund.amount} ${refund.currency}, ${refund.status}`);
  const deadline = deadlineOf();
  while (refund.status === 'pending' && Date.now() < deadline) {
    await sleep(POLL_MS);
    const polled = await api('GET', `/v1/refunds/${refund.id}`);
    if (polled.status !== 200) {
      warn(`retrieve refund: ${describeError(polled)}`);
      continue;
    }
    refund = polled.body;
  }
  summary.refund = `${refund.id} ${refund.status}`;
  if (refund.failure_reason) summary.refundFailure = refund.failure_reason;
  if (refund.status !== 'succeeded') {
    warn(refund.status === 'pending'
      ? `the refund is still pending after ${waitMinutes} min (it fails by itself after OPERATOR_REFUND_LIMIT_MS, 24 h by default, if the operator never answers)`
      : `refund ${refund.status}: ${refund.failure_reason}`);
    await finish(false, [intent.id, refund.id]);
  }
  say(`refund ${refund.id} succeeded`);
}

await finish(true);
