// The Bull Board dashboard in a real browser (Debian's chromium, driven by
// playwright-core): log in with Basic auth, find the writes queue with its
// completed jobs, save a screenshot, and check through Bull Board's JSON API that
// no secret created during the test is shown anywhere.

import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { chromium, type Browser } from 'playwright-core';
import { Service } from '../../helpers/service.js';

const CHROMIUM = '/usr/bin/chromium';
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'];
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../..');
const artifacts = path.join(root, 'test', 'artifacts');

const haveChromium = existsSync(CHROMIUM);
if (!haveChromium) {
  process.stderr.write(`dashboard browser test skipped: ${CHROMIUM} is missing (install Debian's chromium package; .ci/run does)\n`);
}
const browserTest = haveChromium ? test.serial : test.serial.skip;

let service: Service;
let browser: Browser | undefined;
/** Every secret this test created or used: none may appear on the dashboard. */
const secrets: string[] = [];
const createdIds: string[] = [];

test.before(async () => {
  if (!haveChromium) return;
  service = await Service.start({ workers: 1 });
  const key = await service.issueKey('dashboard');
  secrets.push(key, service.adminToken);
  for (let i = 0; i < 3; i++) {
    const res = await service.request('POST', '/v1/payment_intents', {
      key,
      body: { amount: 1000 + i, description: `dashboard test ${i}`, metadata: { order: `o-${i}` } },
    });
    if (res.status !== 200) throw new Error(`create failed: ${res.status} ${res.text}`);
    createdIds.push(res.body.id);
    secrets.push(res.body.client_secret);
  }
  const keyed = await service.request('POST', '/v1/payment_intents', { key, body: { amount: 7 }, headers: { 'Idempotency-Key': 'dash-1' } });
  secrets.push(keyed.body.client_secret);
  const endpoint = await service.request('POST', '/v1/webhook_endpoints', { key, body: { url: 'http://127.0.0.1:9/hook' } });
  if (endpoint.status !== 200) throw new Error(`webhook endpoint create failed: ${endpoint.status} ${endpoint.text}`);
  secrets.push(endpoint.body.secret);
  browser = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS, headless: true });
});

test.after.always(async () => {
  await browser?.close();
  await service?.stop();
});

browserTest('a browser without credentials is refused with a Basic challenge', async (t) => {
  const context = await browser!.newContext();
  t.teardown(() => context.close());
  const res = await context.request.get(`${service.baseUrl}/admin/queues`);
  t.is(res.status(), 401);
  t.is(res.headers()['www-authenticate'], 'Basic realm="queues"');
  // A headless browser has nobody to type the password: the navigation fails on the challenge.
  const page = await context.newPage();
  await t.throwsAsync(page.goto(`${service.baseUrl}/admin/queues`), { message: /ERR_INVALID_AUTH_CREDENTIALS/ });
});

browserTest('an operator logs in and sees the writes queue with its completed jobs', async (t) => {
  const context = await browser!.newContext({ httpCredentials: { username: 'admin', password: service.adminToken } });
  t.teardown(() => context.close());
  const page = await context.newPage();

  const home = await page.goto(`${service.baseUrl}/admin/queues`);
  t.is(home?.status(), 200);
  await page.getByText('writes', { exact: true }).first().waitFor({ timeout: 15_000 });
  const overview = await page.locator('body').innerText();
  for (const queue of ['writes', 'events', 'webhooks', 'maintenance']) t.true(overview.includes(queue), `queue ${queue} listed`);

  await page.goto(`${service.baseUrl}/admin/queues/queue/writes?status=completed`);
  await page.getByText(createdIds[0] as string).first().waitFor({ timeout: 15_000 });
  const jobs = await page.locator('body').innerText();
  for (const id of createdIds) t.true(jobs.includes(id), `completed job ${id} shown`);
  t.true(jobs.includes('payment_intent.create.v1'));

  mkdirSync(artifacts, { recursive: true });
  const file = path.join(artifacts, 'dashboard-writes-completed.png');
  await page.screenshot({ path: file, fullPage: true });
  t.true(existsSync(file));
  t.log(`screenshot: ${path.relative(root, file)}`);
});

browserTest("the dashboard's JSON API carries no secret in job data or return values", async (t) => {
  const context = await browser!.newContext({ httpCredentials: { username: 'admin', password: service.adminToken } });
  t.teardown(() => context.close());
  const pages = new Map<string, string>();
  for (const queue of ['writes', 'events', 'webhooks', 'maintenance']) {
    for (const status of ['latest', 'completed', 'failed', 'waiting', 'delayed', 'active']) {
      const res = await context.request.get(`${service.baseUrl}/admin/queues/api/queues?activeQueue=${queue}&status=${status}&page=1&jobsPerPage=50`);
      t.is(res.status(), 200);
      pages.set(`${queue}/${status}`, await res.text());
    }
  }
  const text = [...pages.values()].join('\n');
  for (const secret of secrets) t.false(text.includes(secret), `secret ${secret.slice(0, 8)}… is not shown`);
  t.notRegex(text, /sk_(test|live)_|whsec_|_secret_/);

  const body = JSON.parse(pages.get('writes/completed') as string) as {
    queues: Array<{ name: string; jobs: Array<{ id: string; name: string; data: Record<string, unknown>; returnValue: unknown }> }>;
  };
  const writes = body.queues.find((q) => q.name === 'writes');
  t.truthy(writes);
  const jobs = writes?.jobs ?? [];
  for (const id of createdIds) {
    const job = jobs.find((j) => j.id === id);
    t.truthy(job, `job ${id} listed`);
    t.deepEqual(job?.returnValue, { ok: true, id, status: 200 });
    t.deepEqual(Object.keys(job?.data ?? {}).sort(), ['baseUrl', 'created', 'id', 'idempotency', 'input', 'livemode', 'project', 'requestId']);
  }
});
