/**
 * DESIGN section 14, black-box: the api and a worker in live mode against the
 * operators' fakes (test/fakes/), taught to argue back. The window and the poll
 * schedule are short so the suite stays fast: the payer may be asked for 4 s, checks
 * run every ~1 s, three failed calls in a row open an account's breaker.
 *
 * Accounts: MTN Côte d'Ivoire (`mtnivorycoast`, the section 12 variables) and MTN
 * Ghana and MTN's sandbox (`OPERATOR_ACCOUNTS_FILE`), each its own fake; M-Pesa
 * (Kenya); Wave (Senegal).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { MtnMomoFake } from '../../fakes/mtn-momo-fake.js';
import { MpesaFake } from '../../fakes/mpesa-fake.js';
import { WaveFake } from '../../fakes/wave-fake.js';
import { header } from '../../fakes/fake-server.js';
import { mtnReferenceId } from '../../../worker/operators/mtn-momo/wire.js';
import { Service, sleep, uniqueName, until } from '../../helpers/service.js';
import { cancel, confirm, createIntent, eventsOf, listAllEvents, phone, retrieve, waitForStatus, type Intent } from '../../helpers/payment-intent-lifecycle.js';
import { refund, waitForRefund } from '../../helpers/refunds.js';

const creds = (n: number) => ({
  collection: { subscriptionKey: `col-sub-${n}`, userId: `0b4c6d3e-1111-4a2b-8c3d-00000000000${n}`, apiKey: `col-api-key-secret-${n}` },
  disbursement: { subscriptionKey: `dis-sub-${n}`, userId: `0b4c6d3e-2222-4a2b-8c3d-00000000000${n}`, apiKey: `dis-api-key-secret-${n}` },
});
const CI = creds(1);
const GH = creds(2);
const SANDBOX = creds(3);
const MPESA = {
  consumerKey: 'consumer-key-abcdef', consumerSecret: 'consumer-secret-123456', shortcode: '174379',
  passkey: 'bfb279f9aa9bdbcf158e97dd71a467cd2e0c893059b10f78e6b72ada1ed2c919', initiatorName: 'testapi', securityCredential: 'encrypted-credential-xyz',
};
const WAVE = { apiKey: 'wave_sn_prod_secretkey0002', webhookSecret: 'wave_sn_WHS_secret0002' };

interface OperatorView {
  id: string;
  status: string;
  accounts: Array<{ id: string; status: string }>;
  countries: Array<{ country: string; account: string | null }>;
}

let mtnCI: MtnMomoFake;
let mtnGH: MtnMomoFake;
let mtnSandbox: MtnMomoFake;
let mpesa: MpesaFake;
let wave: WaveFake;
let service: Service;

/** Past the 4 s approval window (OPERATOR_APPROVAL_WINDOW_MS below), with 2 s to spare: what the test is about. */
const PAST_WINDOW_MS = 6000;
/** A push sent late, after the outage, would reach MTN within this (OPERATOR_TIMEOUT_MS is 2 s). */
const NO_LATE_PUSH_MS = 2000;
/** Past expires_at by this, the intent's expiry has had its turn (1 s polls, a 2 s sweep). */
const PAST_EXPIRY_MS = 3000;
let key: string;

const mtnEnv = (prefix: string, fake: MtnMomoFake, c: ReturnType<typeof creds>, env: string) => ({
  [`${prefix}BASE_URL`]: fake.url,
  [`${prefix}TARGET_ENVIRONMENT`]: env,
  [`${prefix}COLLECTION_SUBSCRIPTION_KEY`]: c.collection.subscriptionKey,
  [`${prefix}COLLECTION_USER_ID`]: c.collection.userId,
  [`${prefix}COLLECTION_API_KEY`]: c.collection.apiKey,
  [`${prefix}DISBURSEMENT_SUBSCRIPTION_KEY`]: c.disbursement.subscriptionKey,
  [`${prefix}DISBURSEMENT_USER_ID`]: c.disbursement.userId,
  [`${prefix}DISBURSEMENT_API_KEY`]: c.disbursement.apiKey,
});

test.before(async () => {
  [mtnCI, mtnGH, mtnSandbox, mpesa, wave] = await Promise.all([
    new MtnMomoFake('mtnivorycoast', CI).start(),
    new MtnMomoFake('mtnghana', GH).start(),
    new MtnMomoFake('sandbox', SANDBOX, { enforceSandboxCurrency: true }).start(),
    new MpesaFake(MPESA).start(),
    new WaveFake(WAVE.apiKey, WAVE.webhookSecret).start(),
  ]);
  const dir = mkdtempSync(join(tmpdir(), 'accounts-'));
  const accountsFile = join(dir, 'accounts.json');
  writeFileSync(accountsFile, JSON.stringify([
    { operator: 'mtn_momo', ...mtnEnv('MTN_MOMO_', mtnGH, GH, 'mtnghana') },
    { operator: 'mtn_momo', ...mtnEnv('MTN_MOMO_', mtnSandbox, SANDBOX, 'sandbox') },
  ]));
  service = await Service.start({
    workers: 1,
    env: {
      WRITE_TIMEOUT_MS: '30000',
      PUBLIC_BASE_URL: 'self',
      OPERATOR_APPROVAL_WINDOW_MS: '4000',
      OPERATOR_POLL_SCHEDULE_MS: '1000',
      OPERATOR_BREAKER_FAILURES: '3',
      OPERATOR_TIMEOUT_MS: '2000',
      INTENTS_SWEEP_INTERVAL_MS: '2000',
      OPERATOR_ACCOUNTS_FILE: accountsFile,
      ...mtnEnv('MTN_MOMO_', mtnCI, CI, 'mtnivorycoast'),
      MPESA_BASE_URL: mpesa.url,
      MPESA_CONSUMER_KEY: MPESA.consumerKey,
      MPESA_CONSUMER_SECRET: MPESA.consumerSecret,
      MPESA_SHORTCODE: MPESA.shortcode,
      MPESA_PASSKEY: MPESA.passkey,
      MPESA_INITIATOR_NAME: MPESA.initiatorName,
      MPESA_SECURITY_CREDENTIAL: MPESA.securityCredential,
      WAVE_BASE_URL: wave.url,
      WAVE_API_KEY: WAVE.apiKey,
      WAVE_WEBHOOK_SECRET: WAVE.webhookSecret,
      WAVE_COUNTRY: 'SN',
    },
  });
  wave.webhookUrl = `${service.baseUrl}/operators/wave/webhook`;
  key = await service.issueKey(uniqueName('truth'), true);
});

test.after.always(async () => {
  await service?.stop();
  await Promise.all([mtnCI, mtnGH, mtnSandbox, mpesa, wave].map((fake) => fake?.stop()));
});

let numbers = 0;
const fresh = (callingCode: string, national = '05') => phone(callingCode, national === '05' ? '000' : national, ++numbers);
const ivorian = () => `+22505${String(10_000_000 + ++numbers).slice(-8)}`;
const ghanaian = () => `+23324${String(1_000_000 + ++numbers).slice(-7)}`;
const kenyan = () => `+2547${String(10_000_000 + ++numbers).slice(-8)}`;
const senegalese = () => `+22177${String(1_000_000 + ++numbers).slice(-7)}`;
const rtpPosts = (fake: MtnMomoFake, ref: string) => fake.server.countMatching((r) => r.method === 'POST' && r.path === '/collection/v1_0/requesttopay' && header(r, 'x-reference-id') === ref);

/** Waits until `account`'s breaker is closed again (GET /v1/operators). */
async function untilOperational(account: string): Promise<void> {
  await until(`${account} operational`, async () => {
    const listing = await service.request('GET', '/v1/operators', { key });
    const found = (listing.body.data as OperatorView[]).flatMap((o) => o.accounts).find((a) => a.id === account);
    return found?.status === 'operational' ? true : undefined;
  }, 20_000);
}

/** Confirms a live payment; returns the intent and the confirm's answer. */
async function confirmed(options: { amount: number; currency: string; operator: string; phone: string }) {
  const pi = await createIntent(service, key, { amount: options.amount, currency: options.currency });
  // Wave's success_url and error_url must be https.
  const back = options.operator === 'wave' ? { return_url: 'https://shop.example/back' } : {};
  const res = await confirm(service, key, pi.id, { operator: options.operator, phone_number: options.phone, ...back });
  return { pi, res };
}

/** Samples an intent's status every 150 ms until `done` says stop; returns every status seen. */
function watchStatuses(id: string): { seen: Set<string>; stop: () => Promise<void> } {
  const seen = new Set<string>();
  let running = true;
  const loop = (async () => {
    while (running) {
      seen.add((await retrieve(service, key, id)).status);
      await new Promise((resolve) => setTimeout(resolve, 150));
    }
  })();
  return { seen, stop: async () => { running = false; await loop; } };
}

test.serial('accounts per country: each payment goes through its country\'s account, in its currency\'s unit; a country without one reaches no operator', async (t) => {
  const listing = await service.request('GET', '/v1/operators', { key });
  const mtn = (listing.body.data as OperatorView[]).find((o) => o.id === 'mtn_momo')!;
  t.deepEqual(mtn.accounts.map((a) => a.id), ['mtn_momo:mtnivorycoast', 'mtn_momo:mtnghana', 'mtn_momo:sandbox']);
  t.like(mtn.countries.find((c) => c.country === 'GH'), { account: 'mtn_momo:mtnghana' });
  t.like(mtn.countries.find((c) => c.country === 'UG'), { account: null });

  // Ghana: two decimals; MTN takes the major unit as a string.
  const gh = await confirmed({ amount: 1250, currency: 'ghs', operator: 'mtn_momo', phone: ghanaian() });
  t.is(gh.res.status, 200, gh.res.text);
  const ghRef = mtnReferenceId(`${gh.pi.id}:1`);
  await until('MTN Ghana to hold the request', () => mtnGH.transfers.get(ghRef));
  t.like(mtnGH.transfers.get(ghRef)!.body, { amount: '12.50', currency: 'GHS' });
  t.false(mtnCI.transfers.has(ghRef), 'not through the Ivorian account');
  // Côte d'Ivoire: no decimals.
  const ci = await confirmed({ amount: 5000, currency: 'xof', operator: 'mtn_momo', phone: ivorian() });
  const ciRef = mtnReferenceId(`${ci.pi.id}:1`);
  await until('MTN CI to hold the request', () => mtnCI.transfers.get(ciRef));
  t.like(mtnCI.transfers.get(ciRef)!.body, { amount: '5000', currency: 'XOF' });
  // Kenya: whole shillings.
  const ke = await confirmed({ amount: 10_000, currency: 'kes', operator: 'mpesa', phone: kenyan() });
  const push = await until('the STK push', () => mpesa.pushFor(`${ke.pi.id}:1`));
  t.is(push.amount, 100);

  // Uganda has no MTN account; Tanzania's M-Pesa is Vodacom's, not Daraja's.
  const before = [mtnCI, mtnGH, mtnSandbox].map((f) => f.server.log.length).concat(mpesa.server.log.length);
  for (const [operator, number, currency] of [['mtn_momo', fresh('256', '77'), 'ugx'], ['mpesa', fresh('255', '74'), 'tzs']] as const) {
    const { pi, res } = await confirmed({ amount: 100_000, currency, operator, phone: number });
    t.is(res.status, 400, res.text);
    t.like(res.body.error, { code: 'operator_not_configured', param: 'operator' });
    t.regex(res.body.error.message, /OPERATOR_ACCOUNTS_FILE/);
    t.is((await retrieve(service, key, pi.id)).status, 'new');
  }
  t.deepEqual([mtnCI, mtnGH, mtnSandbox].map((f) => f.server.log.length).concat(mpesa.server.log.length), before, 'no operator was called');
  await Promise.all([mtnGH.settle(ghRef), mtnCI.settle(ciRef), mpesa.settle(push.checkoutRequestId)]);
});

test.serial("MTN's sandbox account takes EUR and MTN's test numbers, and nothing else", async (t) => {
  const ok = await confirmed({ amount: 500, currency: 'eur', operator: 'mtn_momo', phone: '+46733123453' });
  t.is(ok.res.status, 200, ok.res.text);
  const ref = mtnReferenceId(`${ok.pi.id}:1`);
  await until('the sandbox to hold the request', () => mtnSandbox.transfers.get(ref));
  t.like(mtnSandbox.transfers.get(ref)!.body, { amount: '5', currency: 'EUR', payer: { partyId: '46733123453' } });
  const xof = await confirmed({ amount: 500, currency: 'xof', operator: 'mtn_momo', phone: '+46733123453' });
  t.like(xof.res.body.error, { code: 'currency_not_supported' });
  const other = await confirmed({ amount: 500, currency: 'eur', operator: 'mtn_momo', phone: '+46700000000' });
  t.like(other.res.body.error, { code: 'phone_number_invalid' });
});

test.serial('a 429 is no refusal: Retry-After honoured, the request sent again, the payment succeeds', async (t) => {
  mtnCI.server.throttleNext(2, 1, (r) => r.method === 'POST' && (r.path === '/collection/v1_0/requesttopay' || r.path === '/collection/token/'));
  const { pi, res } = await confirmed({ amount: 1000, currency: 'xof', operator: 'mtn_momo', phone: ivorian() });
  t.is(res.status, 200, res.text);
  const ref = mtnReferenceId(`${pi.id}:1`);
  await until('MTN to hold the request after the throttling', () => mtnCI.transfers.get(ref), 20_000);
  t.is(mtnCI.server.throttled.length >= 1, true);
  t.is((await retrieve(service, key, pi.id)).status, 'requires_action', 'throttling declined nothing');
  await mtnCI.settle(ref);
  await waitForStatus(service, key, pi.id, 'succeeded', 20_000);
  const throttledPosts = mtnCI.server.throttled.filter((r) => header(r, 'x-reference-id') === ref).length;
  t.is(rtpPosts(mtnCI, ref) - throttledPosts, 1, 'one request reached MTN: one payment');
});

test.serial('never ask a payer after the window: an outage past it ends the attempt, and the request is never sent', async (t) => {
  mtnCI.server.down();
  const { pi, res } = await confirmed({ amount: 1000, currency: 'xof', operator: 'mtn_momo', phone: ivorian() });
  t.is(res.status, 200, res.text);
  const ref = mtnReferenceId(`${pi.id}:1`);
  try {
    // The outage outlasts the 4 s window: the attempt waits for the operator, never declined on our clock alone.
    await sleep(PAST_WINDOW_MS);
    t.is((await retrieve(service, key, pi.id)).status, 'requires_action');
  } finally {
    mtnCI.server.up();
  }
  const failed = await waitForStatus(service, key, pi.id, 'new', 30_000, (p: Intent) => p.last_payment_error !== null);
  t.like(failed.last_payment_error, { operator_decline_code: 'operator_unavailable' });
  await sleep(NO_LATE_PUSH_MS);
  t.false(mtnCI.transfers.has(ref), 'MTN never stored the request: the payer was never asked');
  const sentWhileUp = mtnCI.server.log.filter((r) => r.method === 'POST' && r.path === '/collection/v1_0/requesttopay' && header(r, 'x-reference-id') === ref);
  t.is(sentWhileUp.length, mtnCI.server.log.filter((r) => r.method === 'POST' && header(r, 'x-reference-id') === ref).length);
  t.true(sentWhileUp.every((r) => !mtnCI.transfers.has(header(r, 'x-reference-id') ?? '')), 'no push reached MTN after the window');
  await untilOperational('mtn_momo:mtnivorycoast');
});

test.serial('a late approval: the attempt outlives the window, a second confirm and a cancel are refused, and it succeeds, never new in between', async (t) => {
  const number = ivorian();
  const { pi } = await confirmed({ amount: 2000, currency: 'xof', operator: 'mtn_momo', phone: number });
  const ref = mtnReferenceId(`${pi.id}:1`);
  await until('MTN to hold the request', () => mtnCI.transfers.get(ref));
  const watch = watchStatuses(pi.id);
  await sleep(PAST_WINDOW_MS);
  const again = await confirm(service, key, pi.id, { operator: 'mtn_momo', phone_number: number });
  t.is(again.status, 400, again.text);
  t.is(again.body.error.code, 'payment_intent_unexpected_state');
  const cancelled = await cancel(service, key, pi.id);
  t.is(cancelled.status, 400, cancelled.text);
  t.is(cancelled.body.error.code, 'payment_intent_unexpected_state');
  await mtnCI.settle(ref);
  await waitForStatus(service, key, pi.id, 'succeeded', 20_000);
  await watch.stop();
  t.false(watch.seen.has('new'), `statuses seen: ${[...watch.seen].join(', ')}`);
  t.deepEqual(eventsOf(await listAllEvents(service, key), pi.id).map((e) => e.type).sort(), ['payment_intent.created', 'payment_intent.requires_action', 'payment_intent.succeeded']);
  t.is(mtnCI.transfersPer(ref), 1);
});

test.serial('the breaker: a configuration 500 in a row opens it, GET /v1/operators shows it, a confirm gets 503 with Retry-After, and a probe closes it', async (t) => {
  mtnGH.configError('currency');
  // The probe's lookup fails too while the account is broken: a lookup MTN answers would
  // close the breaker between two reads of the test (the pushes failing open it again).
  const probe = `/collection/v1_0/requesttopay/${mtnReferenceId('probe')}`;
  mtnGH.server.failNext(1_000_000, 500, undefined, (r) => r.method === 'GET' && r.path === probe);
  // Three payers at once: their pushes fail together, three calls without an answer in a row
  // (a lookup MTN answers, after an attempt's window, would count as an answer and close it).
  const first = await Promise.all([0, 1, 2].map(() => confirmed({ amount: 1000, currency: 'ghs', operator: 'mtn_momo', phone: ghanaian() })));
  for (const { res } of first) t.is(res.status, 200, res.text);
  const accountStatus = async () => {
    const listing = await service.request('GET', '/v1/operators', { key });
    const mtn = (listing.body.data as OperatorView[]).find((o) => o.id === 'mtn_momo')!;
    return { operator: mtn.status, ghana: mtn.accounts.find((a) => a.id === 'mtn_momo:mtnghana')!.status };
  };
  try {
    const open = await until('the Ghana account to be unavailable', async () => {
      const status = await accountStatus();
      return status.ghana === 'unavailable' ? status : undefined;
    }, 20_000);
    t.is(open.operator, 'degraded', 'another account still serves');
    const refused = await confirmed({ amount: 1000, currency: 'ghs', operator: 'mtn_momo', phone: ghanaian() });
    t.is(refused.res.status, 503, refused.res.text);
    t.like(refused.res.body.error, { type: 'api_error', code: 'operator_unavailable' });
    t.truthy(refused.res.headers.get('retry-after'));
    t.like(await retrieve(service, key, refused.pi.id), { status: 'new', last_payment_error: null });
    const ivorianStill = await confirmed({ amount: 1000, currency: 'xof', operator: 'mtn_momo', phone: ivorian() });
    t.is(ivorianStill.res.status, 200, 'the other account takes payments');
    t.true(service.logs().some((line) => line.includes('Currency not supported')), "the operator's message is logged");
  } finally {
    mtnGH.configError(null);
    mtnGH.server.clearInjections();
  }
  await until('a probe to close the breaker', async () => ((await accountStatus()).ghana === 'operational' ? true : undefined), 20_000);
  const after = await confirmed({ amount: 1000, currency: 'ghs', operator: 'mtn_momo', phone: ghanaian() });
  t.is(after.res.status, 200, after.res.text);
});

test.serial('Wave: a cancel expires the session at Wave, so its link can no longer be paid', async (t) => {
  const { pi, res } = await confirmed({ amount: 5000, currency: 'xof', operator: 'wave', phone: senegalese() });
  t.is(res.status, 200, res.text);
  const [session] = wave.sessionsFor(`${pi.id}:1`);
  const calls = wave.expireCalls;
  const cancelled = await cancel(service, key, pi.id);
  t.is(cancelled.status, 200, cancelled.text);
  t.is(cancelled.body.status, 'canceled');
  t.is(wave.expireCalls, calls + 1);
  t.is(wave.sessions.get(session!.id)!.checkout_status, 'expired');
});

test.serial('Wave: an intent paid at Wave before its cancel succeeds, and the cancel is refused', async (t) => {
  const { pi } = await confirmed({ amount: 5000, currency: 'xof', operator: 'wave', phone: senegalese() });
  const [session] = wave.sessionsFor(`${pi.id}:1`);
  wave.dropWebhooks = true;
  try {
    await wave.pay(session!.id);
  } finally {
    wave.dropWebhooks = false;
  }
  const cancelled = await cancel(service, key, pi.id);
  t.is(cancelled.status, 400, cancelled.text);
  t.is(cancelled.body.error.code, 'payment_intent_unexpected_state');
  t.is((await retrieve(service, key, pi.id)).status, 'succeeded');
});

test.serial("Wave: each distinct failed try is shown while the session stays open; the payer's next try succeeds", async (t) => {
  const { pi } = await confirmed({ amount: 5000, currency: 'xof', operator: 'wave', phone: senegalese() });
  const [session] = wave.sessionsFor(`${pi.id}:1`);
  await wave.failTry(session!.id, 'insufficient-funds');
  const first = await waitForStatus(service, key, pi.id, 'requires_action', 20_000, (p: Intent) => p.last_payment_error?.operator_decline_code === 'insufficient_funds');
  t.like(first.next_action, { type: 'redirect_to_url' });
  await wave.failTry(session!.id, 'blocked-account');
  await waitForStatus(service, key, pi.id, 'requires_action', 20_000, (p: Intent) => p.last_payment_error?.operator_decline_code === 'payer_account_blocked');
  await wave.pay(session!.id);
  await waitForStatus(service, key, pi.id, 'succeeded', 20_000);
  const types = eventsOf(await listAllEvents(service, key), pi.id).map((e) => e.type);
  t.is(types.filter((type) => type === 'payment_intent.payment_failed').length, 2, types.join(', '));
});

test.serial("Wave: a refund whose answer was lost is settled from Wave's record, even where Wave ignores the idempotency key", async (t) => {
  const { pi } = await confirmed({ amount: 5000, currency: 'xof', operator: 'wave', phone: senegalese() });
  const [session] = wave.sessionsFor(`${pi.id}:1`);
  await wave.pay(session!.id);
  await waitForStatus(service, key, pi.id, 'succeeded', 20_000);
  wave.honourIdempotencyKey = false;
  wave.server.dropAnswerNext(1, (r) => r.path.endsWith('/refund'));
  try {
    const asked = await refund(service, key, { payment_intent: pi.id });
    t.is(asked.status, 200, asked.text);
    const done = await waitForRefund(service, key, asked.body.id, 'succeeded', 40_000);
    t.is(done.failure_reason ?? null, null);
  } finally {
    wave.honourIdempotencyKey = true;
  }
  t.true(wave.isRefunded(session!.id));
  t.is(wave.transactions.filter((x) => x.transaction_type === 'api_checkout_refund' && x.checkout_api_session_id === session!.id).length, 1, 'refunded once');
});

test.serial("M-Pesa: a refund without the STK callback's receipt recovers it through Transaction Status, and a lost reversal Result too", async (t) => {
  const number = kenyan();
  const { pi } = await confirmed({ amount: 10_000, currency: 'kes', operator: 'mpesa', phone: number });
  const push = await until('the push', () => mpesa.pushFor(`${pi.id}:1`));
  mpesa.dropCallbacks = true;
  mpesa.loseReversalResults = true;
  try {
    await mpesa.settle(push.checkoutRequestId);
    await waitForStatus(service, key, pi.id, 'succeeded', 20_000);
    const asked = await refund(service, key, { payment_intent: pi.id });
    t.is(asked.status, 200, asked.text);
    await waitForRefund(service, key, asked.body.id, 'succeeded', 90_000);
  } finally {
    mpesa.dropCallbacks = false;
    mpesa.loseReversalResults = false;
  }
  t.true(mpesa.reversedReceipts.has(push.receipt!), 'the receipt was reversed');
  t.true(mpesa.transactionStatusQueries >= 2, 'asked for the receipt, then for the reversal');
});

test.serial('an intent is not expired blind: past expires_at its pending attempt goes on; a late success succeeds it, a late decline expires it', async (t) => {
  const expiresAt = Math.floor(Date.now() / 1000) + 61;
  const [paid, declined] = await Promise.all([ivorian(), ivorian()].map(async (number) => {
    const pi = await createIntent(service, key, { amount: 1500, currency: 'xof', expires_at: expiresAt });
    const res = await confirm(service, key, pi.id, { operator: 'mtn_momo', phone_number: number });
    t.is(res.status, 200, res.text);
    const ref = mtnReferenceId(`${pi.id}:1`);
    await until('MTN to hold the request', () => mtnCI.transfers.get(ref));
    return { pi, ref, number };
  }));
  mtnCI.outcomes.set(declined!.number.slice(1), { status: 'FAILED', reason: 'APPROVAL_REJECTED' });
  await sleep(Math.max(0, expiresAt * 1000 + PAST_EXPIRY_MS - Date.now()));
  for (const { pi } of [paid!, declined!]) t.is((await retrieve(service, key, pi.id)).status, 'requires_action', 'past expires_at, still waiting for MTN');
  await Promise.all([mtnCI.settle(paid!.ref), mtnCI.settle(declined!.ref)]);
  await waitForStatus(service, key, paid!.pi.id, 'succeeded', 20_000);
  const expired = await waitForStatus(service, key, declined!.pi.id, 'expired', 20_000);
  t.like(expired.last_payment_error, { operator_decline_code: 'payer_declined' });
  const events = await listAllEvents(service, key);
  t.false(eventsOf(events, paid!.pi.id).some((e) => e.type === 'payment_intent.expired'));
  const types = eventsOf(events, declined!.pi.id).map((e) => e.type);
  t.true(types.includes('payment_intent.payment_failed') && types.includes('payment_intent.expired'), types.join(', '));
  t.true(types.indexOf('payment_intent.payment_failed') < types.indexOf('payment_intent.expired'), 'declined by MTN, then expired');
});
