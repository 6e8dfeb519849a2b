/**
 * The reference, black-box: `GET /openapi.json` without a key is the document the
 * code builds, and `GET /docs` renders it with Redoc in Debian's Chromium (driven by
 * playwright-core) from local assets only, with the create-payment-intent operation
 * on it, a link to the error codes, no console error, and a screenshot saved under
 * test/artifacts/.
 */
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { chromium, type Browser } from 'playwright-core';
import { buildOpenApiDocument } from '../../api/openapi/document.js';
import { loadConfig } from '../../common/config.js';
import { Service } from '../helpers/service.js';

const CHROMIUM = '/usr/bin/chromium';
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'];
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const artifacts = path.join(root, 'test', 'artifacts');

const haveChromium = existsSync(CHROMIUM);
if (!haveChromium) {
  process.stderr.write(`reference page browser test skipped: ${CHROMIUM} is missing (install Debian's chromium package; .ci/run does)\n`);
}
const browserTest = haveChromium ? test.serial : test.serial.skip;

let service: Service;
let browser: Browser | undefined;

test.before(async () => {
  service = await Service.start({ workers: 0, env: { OPERATORS: 'wave,orange_money,mpesa' } });
  if (haveChromium) browser = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS, headless: true });
});

test.after.always(async () => {
  await browser?.close();
  await service?.stop();
});

test('GET /openapi.json needs no key and is the document built from the running configuration', async (t) => {
  const res = await service.request('GET', '/openapi.json');
  t.is(res.status, 200);
  t.regex(res.headers.get('content-type') ?? '', /^application\/json/);
  t.deepEqual(res.body, buildOpenApiDocument(loadConfig(service.env), service.baseUrl));
  t.deepEqual(res.body.components.schemas.PaymentIntent.properties.allowed_operators.items.enum, ['wave', 'orange_money', 'mpesa']);
});

test('GET /docs needs no key, loads Redoc from this service and links the error codes', async (t) => {
  const page = await service.request('GET', '/docs');
  t.is(page.status, 200);
  t.regex(page.headers.get('content-type') ?? '', /^text\/html/);
  t.true(page.text.includes('href="/docs/errors"'));
  t.true(page.text.includes('spec-url="/openapi.json"'));
  t.notRegex(page.text, /(src|href)="(https?:)?\/\//, 'no asset from another origin');
  const script = /<script src="([^"]+)"/.exec(page.text)?.[1] ?? '';
  const bundle = await fetch(`${service.baseUrl}${script}`);
  t.is(bundle.status, 200);
  t.regex(bundle.headers.get('content-type') ?? '', /javascript/);
  t.true((await bundle.text()).length > 100_000, 'the Redoc bundle from node_modules');
  t.is((await service.request('GET', '/docs/errors')).status, 200);
  t.is((await service.request('POST', '/docs')).status, 405);
});

browserTest('Chromium renders the reference offline: the create-payment-intent operation, no console error, a screenshot', async (t) => {
  const context = await browser!.newContext({ viewport: { width: 1400, height: 1000 } });
  t.teardown(() => context.close());
  const page = await context.newPage();
  const problems: string[] = [];
  const foreign: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(message.text());
  });
  page.on('pageerror', (err) => problems.push(err.message));
  page.on('requestfailed', (request) => problems.push(`request failed: ${request.url()} ${request.failure()?.errorText}`));
  // Anything not from this service (or inline) is refused and recorded: the page must not need it.
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith(service.baseUrl) || url.startsWith('data:') || url.startsWith('blob:')) return route.continue();
    foreign.push(url);
    return route.abort();
  });

  const res = await page.goto(`${service.baseUrl}/docs`);
  t.is(res?.status(), 200);
  const operation = page.locator('[id="operation/createPaymentIntent"]');
  await operation.waitFor({ timeout: 30_000 });
  t.true((await operation.innerText()).includes('Create a payment intent'));
  const text = await page.locator('body').innerText();
  for (const expected of ['Retrieve a payment intent', 'List events', 'Create a webhook endpoint', 'Idempotency-Key', 'application/x-www-form-urlencoded']) {
    t.true(text.includes(expected), `the page shows ${expected}`);
  }
  t.is(await page.locator('nav a[href="/docs/errors"]').count(), 1);

  mkdirSync(artifacts, { recursive: true });
  const file = path.join(artifacts, 'docs-reference.png');
  await operation.scrollIntoViewIfNeeded();
  await page.screenshot({ path: file });
  t.true(existsSync(file));
  t.log(`screenshot: ${path.relative(root, file)}`);

  await page.locator('nav a[href="/docs/errors"]').click();
  await page.locator('[id="amount_too_small"]').waitFor({ timeout: 10_000 });
  t.deepEqual(problems, [], 'no console error');
  t.deepEqual(foreign, [], 'no request left this service');
});
