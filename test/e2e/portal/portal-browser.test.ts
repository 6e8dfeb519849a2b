/**
 * The merchant portal (DESIGN section 18) in a real browser (Debian's Chromium,
 * driven by playwright-core), 375 px wide: sign in with a secret key, find a payment
 * by its phone digits and by metadata, refund part of it and see the refund and its
 * events, resend an event and see the receiver get it again, roll the session's key
 * and see the old one refused, sign out and see the old cookie refused; with no
 * request to another host, no console error and no horizontal scroll. Without
 * /usr/bin/chromium the browser test is skipped, and says why; the HTTP tests of the
 * session and CSRF rules run anyway.
 */
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import test, { type ExecutionContext } from 'ava';
import { chromium, type Browser, type Page } from 'playwright-core';
import { Receiver } from '../../helpers/receiver.js';
import { Service, uniqueName, until } from '../../helpers/service.js';
import { confirm, createIntent, phone, waitForStatus } from '../../helpers/payment-intent-lifecycle.js';

const CHROMIUM = '/usr/bin/chromium';
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1'];
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../..');
const artifacts = path.join(root, 'test', 'artifacts');
const haveChromium = existsSync(CHROMIUM);
if (!haveChromium) process.stderr.write(`portal browser test skipped: ${CHROMIUM} is missing (install Debian's chromium package)\n`);
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

/** A paid intent with metadata, its payer's number ending in `last4`. */
async function paidWithMetadata(key: string, n: number, metadata: Record<string, string>): Promise<{ id: string; number: string }> {
  const pi = await createIntent(service, key, { amount: 5000, currency: 'xof', metadata });
  const number = phone('225', '000', n);
  const res = await confirm(service, key, pi.id, { operator: 'mtn_momo', phone_number: number });
  if (res.status !== 200) throw new Error(res.text);
  await waitForStatus(service, key, pi.id, 'succeeded');
  return { id: pi.id, number };
}

/** Signs in over plain HTTP, as a browser would: the sign-in form's token, then the session cookie. */
async function signIn(key: string): Promise<string> {
  const form = await fetch(`${service.baseUrl}/portal/sign-in`);
  const signinCookie = (form.headers.get('set-cookie') ?? '').split(';')[0] as string;
  const csrf = /name="csrf" value="([^"]+)"/.exec(await form.text())?.[1] as string;
  const res = await fetch(`${service.baseUrl}/portal/sign-in`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', Cookie: signinCookie, Origin: service.baseUrl },
    body: new URLSearchParams({ csrf, key }).toString(),
  });
  if (res.status !== 303) throw new Error(`sign-in answered ${res.status}`);
  return res.headers.getSetCookie().find((c) => c.startsWith('portal_session='))!.split(';')[0] as string;
}

async function noHorizontalScroll(t: ExecutionContext, page: Page): Promise<void> {
  const { scroll, width } = (await page.evaluate('({ scroll: document.documentElement.scrollWidth, width: window.innerWidth })')) as { scroll: number; width: number };
  t.true(scroll <= width, `${page.url()}: ${scroll} px of content in a ${width} px window`);
}

browserTest('a support person finds a payment, refunds part of it, resends its event, rolls the key and signs out, at 375 px', async (t) => {
  const project = uniqueName('portal');
  let key = await service.issueKey(project);
  const endpoint = await service.request('POST', '/v1/webhook_endpoints', { key, body: { url: receiver.url('/portal-hook') } });
  t.is(endpoint.status, 200, endpoint.text);
  const paid = await paidWithMetadata(key, 12347, { order_id: 'A-77' });
  await paidWithMetadata(key, 12348, { order_id: 'B-12' });
  const last4 = paid.number.slice(-4);

  const context = await browser!.newContext({ viewport: { width: 375, height: 800 } });
  t.teardown(() => context.close());
  const foreign: string[] = [];
  const problems: string[] = [];
  context.on('request', (request) => {
    if (!request.url().startsWith(service.baseUrl) && !request.url().startsWith('data:')) foreign.push(request.url());
  });
  const page = await context.newPage();
  page.on('pageerror', (err) => problems.push(`script error: ${err.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console: ${m.text()}`);
  });
  page.on('dialog', (dialog) => void dialog.accept());

  // Sign in.
  await page.goto(`${service.baseUrl}/portal`);
  t.true(page.url().endsWith('/portal/sign-in'));
  await page.fill('#key', key);
  await page.click('#sign-in');
  await page.waitForURL('**/portal/payments').catch(async (err: Error) => {
    throw new Error(`${err.message}\nat ${page.url()}: ${await page.locator('body').innerText()}\n${problems.join('\n')}`);
  });
  t.is(await page.textContent('#mode'), 'TEST MODE');
  const session = (await context.cookies()).find((c) => c.name === 'portal_session');
  t.truthy(session);
  t.true(session!.httpOnly);
  t.is(session!.sameSite, 'Strict');
  t.false(((await page.evaluate('document.cookie')) as string).includes('portal_session'), 'the script cannot read the session');
  t.is(await page.evaluate('window.localStorage.length'), 0);
  t.false((await page.content()).includes(key), 'the key is on no page');
  await noHorizontalScroll(t, page);

  // Find it by the phone's last four digits, then by metadata.
  await page.fill('#q', last4);
  await page.click('#find');
  await page.waitForURL(/q=/);
  const byPhone = await page.locator('main table').innerText();
  t.true(byPhone.includes(paid.id));
  t.false(byPhone.includes(paid.number), 'the number is masked');
  t.true(byPhone.includes('5 000 XOF'));
  await page.fill('#q', 'order_id=A-77');
  await page.click('#find');
  await page.waitForURL(/order_id/);
  const rows = page.locator('main tbody tr');
  t.is(await rows.count(), 1);
  await noHorizontalScroll(t, page);

  // Refund part of it.
  await page.click(`a[href="/portal/payments/${paid.id}"]`);
  await page.waitForURL(`**/portal/payments/${paid.id}`);
  await page.fill('#refund-amount', '1 500');
  await page.click('#refund');
  await page.locator('.notice.ok').waitFor();
  t.regex(await page.locator('.notice.ok').innerText(), /Refund re_\w+ of 1 500 XOF created/);
  await until('the refund to succeed on the page', async () => {
    await page.goto(`${service.baseUrl}/portal/payments/${paid.id}`);
    const text = await page.locator('#timeline').innerText();
    return text.includes('refund.succeeded') && text.includes('payment_intent.refunded') ? true : undefined;
  });
  t.true((await page.locator('#refunds').innerText()).includes('1 500 XOF'));
  t.is((await page.locator('#refunded').innerText()).trim(), '1 500 XOF');
  await noHorizontalScroll(t, page);
  mkdirSync(artifacts, { recursive: true });
  await page.screenshot({ path: path.join(artifacts, 'portal-payment.png') });

  // The balance, its statement, and a payout batch from a CSV.
  await page.goto(`${service.baseUrl}/portal/balance`);
  t.regex(await page.locator('#available').innerText(), /XOF/);
  await noHorizontalScroll(t, page);
  const today = new Date().toISOString().slice(0, 10);
  const statement = await context.request.get(`${service.baseUrl}/portal/balance/statement?currency=xof&from=${today}&to=${today}`);
  t.is(statement.status(), 200);
  t.regex(statement.headers()['content-type'] ?? '', /^text\/csv/);
  await page.goto(`${service.baseUrl}/portal/payouts`);
  await page.fill('#batch-csv', `reference,amount,currency,phone_number,operator\nr-1,1 000,xof,${phone('225', '000', 33333)},mtn_momo`);
  await page.click('#upload-batch');
  await page.waitForURL(/batch=pob_/);
  t.true((await page.locator('main table').innerText()).includes('1 000 XOF'), 'the batch\'s payout is listed');
  await noHorizontalScroll(t, page);

  // Its refund.succeeded event: delivered once, then resent.
  const events = await service.request('GET', `/v1/events?type=refund.succeeded`, { key });
  const event = events.body.data[0] as { id: string };
  const delivered = (id: string) => receiver.received('/portal-hook').filter((r) => r.headers['webhook-id'] === id).length;
  await until('the first delivery', () => (delivered(event.id) >= 1 ? true : undefined));
  await page.goto(`${service.baseUrl}/portal/events/${event.id}`);
  await until('the attempt on the page', async () => {
    await page.reload();
    return (await page.locator('#attempts').innerText()).includes('200') ? true : undefined;
  });
  const before = delivered(event.id);
  await page.click('#resend');
  await page.locator('.notice.ok').waitFor();
  await until('the receiver to get the event again', () => (delivered(event.id) > before ? true : undefined));
  await noHorizontalScroll(t, page);

  // Roll the session's own key: the old one is refused, the portal goes on with the new one.
  await page.goto(`${service.baseUrl}/portal/keys`);
  const ownId = (await service.request('GET', '/v1/api_keys', { key })).body.data[0].id as string;
  await page.click(`#roll-${ownId}`);
  await page.locator('#new-secret').waitFor();
  const newKey = (await page.locator('#new-secret').innerText()).trim();
  t.regex(newKey, /^sk_test_/);
  t.is((await service.request('GET', '/v1/payment_intents', { key })).status, 401, 'the old key is refused');
  key = newKey;
  t.is((await service.request('GET', '/v1/payment_intents', { key })).status, 200);
  await page.goto(`${service.baseUrl}/portal/payments`);
  t.true(page.url().endsWith('/portal/payments'), 'still signed in, with the new key');
  await noHorizontalScroll(t, page);
  for (const other of ['/portal/refunds', '/portal/events', '/portal/webhooks', '/portal/balance', '/portal/payouts']) {
    await page.goto(`${service.baseUrl}${other}`);
    t.is(await page.textContent('#mode'), 'TEST MODE', other);
    await noHorizontalScroll(t, page);
  }

  // Sign out: the old cookie opens nothing.
  const cookie = `portal_session=${(await context.cookies()).find((c) => c.name === 'portal_session')!.value}`;
  await page.click('#sign-out');
  await page.waitForURL('**/portal/sign-in');
  const replayed = await fetch(`${service.baseUrl}/portal/payments`, { headers: { Cookie: cookie }, redirect: 'manual' });
  t.is(replayed.status, 303);
  t.is(replayed.headers.get('location'), '/portal/sign-in');

  t.deepEqual(problems, []);
  t.deepEqual(foreign, []);
});

test.serial('a portal write without its CSRF token, or from another origin, is refused and changes nothing', async (t) => {
  const key = await service.issueKey(uniqueName('portal-csrf'));
  const paid = await paidWithMetadata(key, 22222, {});
  const cookie = await signIn(key);
  const pageHtml = await (await fetch(`${service.baseUrl}/portal/payments/${paid.id}`, { headers: { Cookie: cookie } })).text();
  const csrf = /name="csrf" value="([^"]+)"/.exec(pageHtml)?.[1] as string;
  t.truthy(csrf);
  const post = (body: Record<string, string>, headers: Record<string, string> = {}) =>
    fetch(`${service.baseUrl}/portal/payments/${paid.id}/refund`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Cookie: cookie, ...headers },
      body: new URLSearchParams(body).toString(),
    });
  t.is((await post({ amount: '100', nonce: 'n-000000001' })).status, 403, 'no token');
  t.is((await post({ amount: '100', nonce: 'n-000000002', csrf: 'x'.repeat(csrf.length) })).status, 403, 'a wrong token');
  t.is((await post({ amount: '100', nonce: 'n-000000003', csrf }, { Origin: 'http://evil.example' })).status, 403, 'another origin');
  const refunds = await service.request('GET', `/v1/refunds?payment_intent=${paid.id}`, { key });
  t.deepEqual(refunds.body.data, [], 'nothing was refunded');
  // The same form with its token goes through, once however often it is sent.
  const ok = await post({ amount: '100', nonce: 'n-000000004', csrf });
  t.is(ok.status, 200);
  t.regex(await ok.text(), /Refund re_\w+ of 100 XOF created/);
  t.is((await post({ amount: '100', nonce: 'n-000000004', csrf })).status, 200);
  t.is((await service.request('GET', `/v1/refunds?payment_intent=${paid.id}`, { key })).body.data.length, 1, 'the form sent twice is one refund');
  // Signing out needs the token too, and then the cookie is dead.
  const out = await fetch(`${service.baseUrl}/portal/sign-out`, { method: 'POST', redirect: 'manual', headers: { 'Content-Type': 'application/x-www-form-urlencoded', Cookie: cookie }, body: `csrf=${encodeURIComponent(csrf)}` });
  t.is(out.status, 303);
  t.is((await post({ amount: '100', nonce: 'n-000000005', csrf })).status, 403);
});

test.serial('a live key signs in to live mode and sees no test data; a wrong key is refused', async (t) => {
  const project = uniqueName('portal-live');
  const testKey = await service.issueKey(project);
  await createIntent(service, testKey, { metadata: { order_id: 'T-1' } });
  const liveKey = await service.issueKey(project, true);
  const cookie = await signIn(liveKey);
  const html = await (await fetch(`${service.baseUrl}/portal/payments`, { headers: { Cookie: cookie } })).text();
  t.true(html.includes('LIVE MODE'));
  t.true(html.includes('No payments yet.'));
  await t.throwsAsync(signIn('sk_test_' + 'x'.repeat(40)), { message: /401/ });
  const redis = service.redis();
  t.teardown(() => redis.disconnect());
  const stored = await redis.keys(`${service.prefix}:portal:session:*`);
  t.true(stored.length > 0);
  for (const name of stored) t.false(((await redis.get(name)) ?? '').includes(liveKey), 'Redis holds no key in clear');
});
