/**
 * The pages a person opens, in a real browser (Debian's Chromium, driven by
 * playwright-core): `/docs`, `/docs/errors`, the queue dashboard and the test
 * checkout page load with no failed request, no request to another host and no
 * console error. That covers `/favicon.ico` (served, not a 404) and the dashboard's
 * fonts (no public font service). The reference's samples carry the service's own
 * address, and the checkout page, reloaded once the payment ended, says how it
 * ended. Without /usr/bin/chromium these tests are skipped, and say why.
 */
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import test, { type ExecutionContext } from 'ava';
import { chromium, type Browser, type BrowserContextOptions, type Page } from 'playwright-core';
import { Receiver } from '../helpers/receiver.js';
import { Service, uniqueName, until } from '../helpers/service.js';
import { confirm, createIntent, logLines, masked, phone, waitForStatus } from '../helpers/payment-intent-lifecycle.js';

const CHROMIUM = '/usr/bin/chromium';
const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  // Only the loopback address is reachable: any other host fails to resolve.
  '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1',
];
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const artifacts = path.join(root, 'test', 'artifacts');

const haveChromium = existsSync(CHROMIUM);
if (!haveChromium) {
  process.stderr.write(`page browser tests skipped: ${CHROMIUM} is missing (install Debian's chromium package; .ci/run does)\n`);
}
/** One at a time: each counts the service's favicon answers before and after its pages. */
const browserTest = haveChromium ? test.serial : test.serial.skip;

let service: Service;
let receiver: Receiver;
let browser: Browser | undefined;

test.before(async () => {
  [service, receiver] = await Promise.all([
    Service.start({ workers: 1, env: { WRITE_TIMEOUT_MS: '30000', SIMULATOR_APPROVAL_DELAY_MS: '100', SIMULATOR_PROCESSING_DELAY_MS: '200' } }),
    Receiver.start(),
  ]);
  if (haveChromium) browser = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS, headless: true });
});

test.after.always(async () => {
  await browser?.close();
  await Promise.all([service?.stop(), receiver?.close()]);
});

/** What went wrong while a page loaded, as a person with the console open would see it. */
interface Watched {
  page: Page;
  /** Requests to another host (none can resolve). */
  foreign: string[];
  /** Failed requests, answers of 400 and above, console errors, script errors. */
  problems: string[];
}

async function watchedPage(t: ExecutionContext, options: BrowserContextOptions = {}): Promise<Watched> {
  const context = await browser!.newContext(options);
  t.teardown(() => context.close());
  const foreign: string[] = [];
  const problems: string[] = [];
  // Recorded, not routed: with any route installed Chromium skips its own /favicon.ico
  // request, which is one of the things checked. No host name resolves (FLAGS), so a
  // request to another host fails here as on a closed network.
  context.on('request', (request) => {
    const target = request.url();
    const own = [service.baseUrl, `blob:${service.baseUrl}`, receiver.url(''), 'data:'];
    if (!own.some((prefix) => target.startsWith(prefix))) foreign.push(target);
  });
  const page = await context.newPage();
  page.on('pageerror', (err) => problems.push(`script error: ${err.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console: ${message.text()}`);
  });
  page.on('requestfailed', (request) => {
    if (!foreign.includes(request.url())) problems.push(`failed: ${request.url()} ${request.failure()?.errorText ?? ''}`);
  });
  page.on('response', (response) => {
    if (response.status() >= 400) problems.push(`${response.status()} ${response.url()}`);
  });
  return { page, foreign, problems };
}

async function settled(w: Watched): Promise<void> {
  await w.page.waitForLoadState('networkidle');
}

/**
 * The api's answers to GET /favicon.ico, from its request log. Chromium asks for the
 * icon itself, outside the page's network events, so the log is where it shows.
 */
function faviconAnswers(): number[] {
  return logLines(service, 'request')
    .filter((line) => line.method === 'GET' && (line.route === '/favicon.ico' || line.status === 404))
    .map((line) => line.status as number);
}

/** Waits for Chromium's favicon request after `before` answers, and checks every answer since was a 200. */
async function faviconServed(t: ExecutionContext, before: number): Promise<void> {
  const answers = await until('Chromium to ask for /favicon.ico', () => {
    const now = faviconAnswers();
    return now.length > before ? now.slice(before) : undefined;
  });
  t.true(answers.every((status) => status === 200), `the favicon (and no 404) answered ${answers.join(', ')}`);
}

function screenshot(page: Page, name: string): Promise<Buffer> {
  mkdirSync(artifacts, { recursive: true });
  return page.screenshot({ path: path.join(artifacts, name) });
}

test.serial('GET /favicon.ico is a 200 icon, without a key', async (t) => {
  const res = await fetch(`${service.baseUrl}/favicon.ico`);
  t.is(res.status, 200);
  t.is(res.headers.get('content-type'), 'image/x-icon');
  const icon = Buffer.from(await res.arrayBuffer());
  t.deepEqual([...icon.subarray(0, 6)], [0, 0, 1, 0, 1, 0], 'an ICO with one image');
  t.is(icon.length, 6 + 16 + 40 + 16 * 16 * 4 + 16 * 4);
});

browserTest('/docs loads with no failed request, nothing from another host, and samples that call this service', async (t) => {
  const w = await watchedPage(t, { viewport: { width: 1400, height: 1000 } });
  const before = faviconAnswers().length;
  const res = await w.page.goto(`${service.baseUrl}/docs`);
  t.is(res?.status(), 200);
  const operation = w.page.locator('[id="operation/createPaymentIntent"]');
  await operation.waitFor({ timeout: 30_000 });
  await settled(w);
  await operation.getByText('curl (form)', { exact: true }).first().click();
  await operation.getByText(`curl ${service.baseUrl}/v1/payment_intents`).first().waitFor({ timeout: 10_000 });
  const text = await w.page.locator('body').innerText();
  t.true(text.includes(`curl ${service.baseUrl}/v1/payment_intents -u "$KEY:"`), 'the samples use the service’s own address');
  t.false(text.includes('localhost:3000'), 'never a hard-coded localhost:3000');
  await faviconServed(t, before);
  await operation.scrollIntoViewIfNeeded();
  await screenshot(w.page, 'docs-own-address.png');
  t.deepEqual(w.problems, []);
  t.deepEqual(w.foreign, []);

  const errors = await w.page.goto(`${service.baseUrl}/docs/errors`);
  t.is(errors?.status(), 200);
  await settled(w);
  t.deepEqual(w.problems, []);
  t.deepEqual(w.foreign, []);
});

browserTest('the queue dashboard loads with no failed request and no font from a public font service', async (t) => {
  const w = await watchedPage(t, { httpCredentials: { username: 'admin', password: service.adminToken } });
  const res = await w.page.goto(`${service.baseUrl}/admin/queues`);
  t.is(res?.status(), 200);
  const html = await res!.text();
  t.false(/fonts\.(googleapis|gstatic)\.com/.test(html), 'the served HTML links no public font service');
  await w.page.getByText('writes', { exact: true }).first().waitFor({ timeout: 30_000 });
  await settled(w);
  await w.page.goto(`${service.baseUrl}/admin/queues/queue/writes`);
  await w.page.getByText('writes', { exact: true }).first().waitFor({ timeout: 30_000 });
  await settled(w);
  await screenshot(w.page, 'dashboard-local-fonts.png');
  t.deepEqual(w.foreign, [], 'nothing asked of another host');
  t.deepEqual(w.problems, []);
});

browserTest('the checkout page: no failed request; Pay returns to return_url with the intent’s id added; reloaded, the page says succeeded', async (t) => {
  const key = await service.issueKey(uniqueName('pages-checkout'));
  const intent = await createIntent(service, key, { amount: 2500, currency: 'xof', allowed_operators: ['wave'] });
  const phoneNumber = phone('225', '000');
  const returnUrl = receiver.url('/shop/back?order=7');
  const confirmed = await confirm(service, key, intent.id, { operator: 'wave', phone_number: phoneNumber, return_url: returnUrl });
  t.is(confirmed.status, 200, confirmed.text);
  const url = confirmed.body.next_action.redirect_to_url.url as string;

  const w = await watchedPage(t);
  const before = faviconAnswers().length;
  t.is((await w.page.goto(url))?.status(), 200);
  await settled(w);
  await faviconServed(t, before);
  await Promise.all([w.page.waitForURL((u) => u.href.startsWith(returnUrl)), w.page.locator('#pay').click()]);
  const back = new URL(w.page.url());
  t.is(back.searchParams.get('order'), '7', 'the return URL’s own query kept');
  t.is(back.searchParams.get('payment_intent'), intent.id);
  t.is(back.searchParams.get('payment_intent_client_secret'), intent.client_secret);

  await waitForStatus(service, key, intent.id, 'succeeded');
  const again = await w.page.goto(url);
  t.is(again?.status(), 200, 'not "Checkout not found"');
  await settled(w);
  t.is(await w.page.locator('#status').getAttribute('data-status'), 'succeeded');
  const text = await w.page.locator('body').innerText();
  t.true(text.includes('Payment succeeded'));
  t.true(text.includes(masked(phoneNumber)));
  t.false(text.includes(phoneNumber));
  t.false((await w.page.content()).includes(intent.client_secret));
  t.is(await w.page.locator('button').count(), 0, 'nothing to press');
  await screenshot(w.page, 'checkout-succeeded.png');
  t.deepEqual(w.problems, []);
  t.deepEqual(w.foreign, []);
});
