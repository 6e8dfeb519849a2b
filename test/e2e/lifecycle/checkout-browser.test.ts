/**
 * The redirect flow (wave) in a real browser: Debian's Chromium, driven by
 * playwright-core, opens `next_action.redirect_to_url.url` from a confirm and clicks
 * the test checkout page's buttons. Pay ends `succeeded`, Decline back in `new` with
 * `payer_declined`, Cancel `canceled` (`abandoned`); a subscribed receiver gets each
 * outcome's event, signed. Without /usr/bin/chromium these tests are skipped, and
 * say why.
 */
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import test, { type ExecutionContext } from 'ava';
import { chromium, type Browser, type Page } from 'playwright-core';
import { Service, uniqueName, until } from '../../helpers/service.js';
import { Receiver } from '../../helpers/receiver.js';
import { createEndpoint } from '../../helpers/webhook-fixtures.js';
import { confirm, createIntent, masked, phone, retrieve, waitForDeliveries, waitForStatus, type Intent } from '../../helpers/payment-intent-lifecycle.js';

const CHROMIUM = '/usr/bin/chromium';
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'];
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../..');
const artifacts = path.join(root, 'test', 'artifacts');

const haveChromium = existsSync(CHROMIUM);
if (!haveChromium) {
  process.stderr.write(`checkout browser tests skipped: ${CHROMIUM} is missing (install Debian's chromium package; .ci/run does)\n`);
}
const browserTest = haveChromium ? test : test.skip;

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

interface Checkout {
  key: string;
  hook: { path: string; secret: string };
  intent: Intent;
  url: string;
  page: Page;
  /** Requests that left the service and the receiver, refused: the page needs none. */
  foreign: string[];
  /** Script errors, console errors and 5xx answers. */
  problems: string[];
}

/** A wave intent of a project of its own, confirmed, with its checkout page open in a fresh browser context. */
async function openCheckout(t: ExecutionContext, name: string, suffix: string, returnUrl?: string): Promise<Checkout> {
  const project = uniqueName(name);
  const key = await service.issueKey(project);
  const hookPath = `/${project}/hooks`;
  const endpoint = await createEndpoint(service, key, receiver.url(hookPath));
  const intent = await createIntent(service, key, { amount: 12_500, currency: 'xof', description: 'Order #77 <b>bold</b>', allowed_operators: ['wave'] });
  const confirmed = await confirm(service, key, intent.id, {
    operator: 'wave',
    phone_number: phone('221', suffix),
    ...(returnUrl ? { return_url: returnUrl } : {}),
  });
  t.is(confirmed.status, 200, confirmed.text);
  t.is(confirmed.body.next_action.type, 'redirect_to_url');
  const url = confirmed.body.next_action.redirect_to_url.url as string;

  const context = await browser!.newContext();
  t.teardown(() => context.close());
  const foreign: string[] = [];
  const problems: string[] = [];
  await context.route('**/*', (route) => {
    const target = route.request().url();
    if (target.startsWith(service.baseUrl) || target.startsWith(receiver.url(''))) return route.continue();
    foreign.push(target);
    return route.abort();
  });
  const page = await context.newPage();
  page.on('pageerror', (err) => problems.push(err.message));
  // Every console error counts: a spent link shows its outcome, and /favicon.ico is served.
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(message.text());
  });
  page.on('requestfailed', (request) => {
    if (!foreign.includes(request.url())) problems.push(`failed: ${request.url()} ${request.failure()?.errorText ?? ''}`);
  });
  page.on('response', (response) => {
    if (response.status() >= 400) problems.push(`${response.status()} ${response.url()}`);
  });
  const res = await page.goto(url);
  t.is(res?.status(), 200);
  const text = await page.locator('body').innerText();
  t.true(text.includes('12 500 XOF'), 'the page shows the amount by its exponent');
  t.true(text.includes('Order #77 <b>bold</b>'), 'the description, as text');
  t.true(text.includes(masked(phone('221', suffix))), 'the masked payer');
  t.false(text.includes(phone('221', suffix)), 'never the full phone number');
  for (const id of ['pay', 'decline', 'cancel']) t.true(await page.locator(`#${id}`).isVisible(), `the ${id} button`);
  return { key, hook: { path: hookPath, secret: endpoint.secret }, intent, url, page, foreign, problems };
}

/** Waits for the receiver to get `type` for the intent, verified with standardwebhooks, and returns its object. */
async function delivered(c: Checkout, type: string): Promise<Intent> {
  // The event's own document follows the transition's update by a moment: the intent
  // may show its new status just before the event is listed.
  const event = await until(`a ${type} event listed for ${c.intent.id}`, async () => {
    const listed = await service.request('GET', `/v1/events?type=${type}`, { key: c.key });
    return listed.body.data.find((e: { data: { object: { id: string } } }) => e.data.object.id === c.intent.id);
  });
  const deliveries = await waitForDeliveries(receiver, c.hook.path, c.hook.secret, [event.id]);
  const delivery = deliveries.find((d) => d.webhookId === event.id)!;
  return delivery.event.data.object;
}

function screenshot(page: Page, name: string): Promise<Buffer> {
  mkdirSync(artifacts, { recursive: true });
  return page.screenshot({ path: path.join(artifacts, name) });
}

browserTest('Pay: the payer is sent to return_url, the intent succeeds, and the receiver gets payment_intent.succeeded', async (t) => {
  const returnUrl = receiver.url('/shop/return?order=77');
  const c = await openCheckout(t, 'browser-pay', '000', returnUrl);
  await screenshot(c.page, 'checkout-wave.png');
  await Promise.all([c.page.waitForURL((url) => url.href.startsWith(returnUrl)), c.page.locator('#pay').click()]);
  t.is(
    c.page.url(),
    `${returnUrl}&payment_intent=${c.intent.id}&payment_intent_client_secret=${c.intent.client_secret}`,
    'back on the merchant page, told which intent',
  );

  const pi = await waitForStatus(service, c.key, c.intent.id, 'succeeded');
  t.like(pi, { next_action: null, last_payment_error: null, payment_details: { operator: 'wave', phone_number: '+221*******000' } });
  const object = await delivered(c, 'payment_intent.succeeded');
  t.like(object, { id: c.intent.id, status: 'succeeded' });

  // The link is spent: the page shows the outcome and no longer offers buttons, and a replayed Pay adds nothing.
  const again = await c.page.goto(c.url);
  t.is(again?.status(), 200);
  t.is(await c.page.locator('#status').getAttribute('data-status'), 'succeeded');
  t.is(await c.page.locator('#pay').count(), 0);
  const replay = await fetch(`${c.url}/pay`, { method: 'POST', redirect: 'manual' });
  t.not(replay.status, 500);
  t.is((await retrieve(service, c.key, c.intent.id)).status, 'succeeded');
  t.deepEqual(c.problems, [], 'no console error');
  t.deepEqual(c.foreign, [], 'the page needs nothing from another origin');
});

browserTest('Pay with a declining number (003): the intent goes through processing and back to new with insufficient_funds', async (t) => {
  const c = await openCheckout(t, 'browser-pay-003', '003', receiver.url('/shop/return'));
  await Promise.all([c.page.waitForURL((url) => url.href.startsWith(receiver.url('/shop/return'))), c.page.locator('#pay').click()]);
  const pi = await waitForStatus(service, c.key, c.intent.id, 'new', 30_000, (p) => p.last_payment_error !== null);
  t.like(pi.last_payment_error, { code: 'payment_declined', operator: 'wave', operator_decline_code: 'insufficient_funds' });
  const object = await delivered(c, 'payment_intent.payment_failed');
  t.like(object, { status: 'new', last_payment_error: { operator_decline_code: 'insufficient_funds' } });
  await delivered(c, 'payment_intent.processing');
});

browserTest('Decline: the intent is back in new with payer_declined, and the receiver gets payment_intent.payment_failed', async (t) => {
  const c = await openCheckout(t, 'browser-decline', '000');
  await Promise.all([c.page.waitForLoadState('load'), c.page.locator('#decline').click()]);
  t.true(c.page.url().startsWith(`${service.baseUrl}/test/checkout/`), 'without a return_url the payer stays on the checkout page');

  const pi = await waitForStatus(service, c.key, c.intent.id, 'new', 30_000, (p) => p.last_payment_error !== null);
  t.deepEqual(pi.last_payment_error, {
    code: 'payment_declined',
    operator: 'wave',
    operator_decline_code: 'payer_declined',
    message: pi.last_payment_error?.message ?? '',
  });
  t.is(pi.next_action, null);
  const object = await delivered(c, 'payment_intent.payment_failed');
  t.like(object, { id: c.intent.id, status: 'new', last_payment_error: { operator_decline_code: 'payer_declined' } });
  const events = await service.request('GET', '/v1/events', { key: c.key });
  t.deepEqual(
    events.body.data.map((e: { type: string }) => e.type),
    ['payment_intent.payment_failed', 'payment_intent.requires_action', 'payment_intent.created'],
    'a declined payer step never reaches processing',
  );
  // Once the attempt is over the page offers nothing to click.
  await c.page.goto(c.url);
  t.is(await c.page.locator('#pay').count(), 0);
  await screenshot(c.page, 'checkout-wave-declined.png');
  t.deepEqual(c.problems, []);
  t.deepEqual(c.foreign, []);
});

browserTest('Cancel: the intent is canceled as abandoned, and the receiver gets payment_intent.canceled', async (t) => {
  const returnUrl = receiver.url('/shop/cancelled');
  const c = await openCheckout(t, 'browser-cancel', '000', returnUrl);
  await Promise.all([c.page.waitForURL((url) => url.href.startsWith(`${returnUrl}?payment_intent=`)), c.page.locator('#cancel').click()]);

  const pi = await waitForStatus(service, c.key, c.intent.id, 'canceled');
  t.is(pi.cancellation_reason, 'abandoned');
  t.is(typeof pi.canceled_at, 'number');
  t.is(pi.next_action, null);
  t.is(pi.last_payment_error, null);
  const object = await delivered(c, 'payment_intent.canceled');
  t.like(object, { id: c.intent.id, status: 'canceled', cancellation_reason: 'abandoned' });
  // Final: a confirm now is refused, and nothing changes.
  const late = await confirm(service, c.key, c.intent.id, { operator: 'wave', phone_number: phone('221', '000') });
  t.is(late.status, 400, late.text);
  t.is(late.body.error.code, 'payment_intent_unexpected_state');
  t.deepEqual(c.problems, []);
  t.deepEqual(c.foreign, []);
});
