/**
 * The official Stripe Node SDK, a client no one here wrote, against the real api
 * and worker processes (DESIGN.md section 8): pointed at the service with `host`,
 * `port` and `protocol`, used as a Stripe user would. Its transport is the SDK's
 * own fetch client around a fetch that also checks every answer against the
 * OpenAPI document.
 */
import test, { type ExecutionContext } from 'ava';
import { Queue } from 'bullmq';
import Stripe from 'stripe';
import { QUEUES } from '../../common/jobs.js';
import { checkAgainstOpenApi } from '../helpers/openapi-check.js';
import { Service, until } from '../helpers/service.js';
import { paidIntent } from '../helpers/refunds.js';
import { fund, payee } from '../helpers/payouts.js';

let service: Service;

test.before(async () => {
  // The simulator's delays shortened, so that refunds have succeeded payments to refund.
  service = await Service.start({ workers: 1, env: { SIMULATOR_APPROVAL_DELAY_MS: '100', SIMULATOR_PROCESSING_DELAY_MS: '100', SIMULATOR_PAYOUT_ENQUEUED_MS: '600000' } });
});

test.after.always(async () => {
  await service?.stop();
});

/** Our payment intent; the SDK's own type describes Stripe's. */
interface PaymentIntent {
  id: string;
  object: 'payment_intent';
  amount: number;
  currency: string;
  description: string | null;
  status: string;
  client_secret: string;
  automatic_operator: boolean;
  allowed_operators: string[];
  selected_operator: string | null;
  next_action: null;
  metadata: Record<string, string>;
  livemode: boolean;
  created: number;
  expires_at: number;
  lastResponse: { headers: Record<string, string> | Headers; requestId: string; statusCode: number };
}

/** A header of the SDK's last response: a plain object with Node's http, the fetch `Headers` with the fetch client. */
function lastHeader(pi: PaymentIntent, name: string): string | undefined {
  const headers = pi.lastResponse.headers;
  return headers instanceof Headers ? (headers.get(name) ?? undefined) : headers[name];
}

interface Client {
  stripe: Stripe;
  /** Answers that did not match the OpenAPI document: none, at the end of each test. */
  violations: string[];
}

/** A fetch that checks each answer against the document before handing it to the SDK. */
function checkedFetch(baseUrl: string, violations: string[]): typeof fetch {
  return async (input, init) => {
    const res = await fetch(input, init);
    const text = await res.clone().text();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    const url = new URL(input instanceof Request ? input.url : String(input));
    await checkAgainstOpenApi(baseUrl, init?.method ?? 'GET', url.pathname + url.search, { status: res.status, headers: res.headers, text, body }).catch(
      (err: Error) => violations.push(err.message),
    );
    return res;
  };
}

function client(target: Service, apiKey: string, config: Stripe.StripeConfig = {}): Client {
  const url = new URL(target.baseUrl);
  const violations: string[] = [];
  const stripe = new Stripe(apiKey, {
    host: url.hostname,
    port: url.port,
    protocol: 'http',
    telemetry: false,
    maxNetworkRetries: 0,
    httpClient: Stripe.createFetchHttpClient(checkedFetch(target.baseUrl, violations)),
    ...config,
  });
  return { stripe, violations };
}

function noViolations(t: ExecutionContext, c: Client): void {
  t.deepEqual(c.violations, [], 'every answer matches the OpenAPI document');
}

/** Our create parameters go through the SDK untyped: its types describe Stripe's API. */
function createPaymentIntent(stripe: Stripe, params: Record<string, unknown>, options?: Stripe.RequestOptions): Promise<PaymentIntent> {
  return stripe.paymentIntents.create(params as unknown as Stripe.PaymentIntentCreateParams, options) as unknown as Promise<PaymentIntent>;
}

test('paymentIntents.create with metadata, lists, booleans and expires_at; retrieve gives it back, client secret included', async (t) => {
  const c = client(service, await service.issueKey('sdk-create'));
  const expiresAt = Math.floor(Date.now() / 1000) + 3600;
  const metadata = JSON.parse('{"order":"1042","a.b":"dot","$x":"dollar","__proto__":"proto"}') as Record<string, string>;
  const pi = await createPaymentIntent(c.stripe, {
    amount: 5000,
    currency: 'xof',
    description: 'order #1042',
    metadata,
    allowed_operators: ['wave', 'orange_money'],
    selected_operator: 'wave',
    automatic_operator: false,
    expires_at: expiresAt,
  });
  t.regex(pi.id, /^pi_/);
  t.like(pi, {
    object: 'payment_intent', amount: 5000, currency: 'xof', description: 'order #1042', status: 'new',
    selected_operator: 'wave', automatic_operator: false, expires_at: expiresAt, livemode: false, next_action: null,
  });
  t.deepEqual(pi.allowed_operators, ['wave', 'orange_money']);
  t.is(JSON.stringify(pi.metadata), JSON.stringify(metadata));
  t.regex(pi.client_secret, new RegExp(`^${pi.id}_secret_`));
  t.regex(pi.lastResponse.requestId, /^req_/);

  const got = (await c.stripe.paymentIntents.retrieve(pi.id)) as unknown as PaymentIntent;
  t.deepEqual({ ...got }, { ...pi });

  // The SDK's default transport (Node's http) speaks to it just as well.
  const plain = new Stripe(await service.issueKey('sdk-create'), { host: '127.0.0.1', port: new URL(service.baseUrl).port, protocol: 'http' });
  const other = await createPaymentIntent(plain, { amount: 1, automatic_operator: true });
  t.is(((await plain.paymentIntents.retrieve(other.id)) as unknown as PaymentIntent).amount, 1);
  noViolations(t, c);
});

test('paymentIntents.list with autoPagingToArray walks every object exactly once, newest first', async (t) => {
  const c = client(service, await service.issueKey('sdk-list'));
  const created: string[] = [];
  for (let i = 0; i < 23; i++) created.push((await createPaymentIntent(c.stripe, { amount: 100 + i })).id);
  const all = await c.stripe.paymentIntents.list({ limit: 5 }).autoPagingToArray({ limit: 1000 });
  t.deepEqual(all.map((pi) => pi.id), [...created].reverse());
  const iterated: string[] = [];
  for await (const pi of c.stripe.paymentIntents.list({ limit: 7 })) iterated.push(pi.id);
  t.deepEqual(iterated, [...created].reverse(), 'async iteration, as in the README');
  const page = await c.stripe.paymentIntents.list({ limit: 5 });
  t.true(page.has_more);
  t.is(page.data.length, 5);
  t.regex((page.data[0] as unknown as PaymentIntent).client_secret, /_secret_/);
  noViolations(t, c);
});

test('webhookEndpoints.create, retrieve, and list with auto-pagination; the secret only on create', async (t) => {
  const c = client(service, await service.issueKey('sdk-hooks'));
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) {
    const endpoint = await c.stripe.webhookEndpoints.create({
      url: `http://127.0.0.1:9/hook-${i}`,
      enabled_events: ['payment_intent.created' as Stripe.WebhookEndpointCreateParams.EnabledEvent],
      description: `endpoint ${i}`,
      metadata: { team: 'ops' },
    });
    t.regex(endpoint.secret ?? '', /^whsec_/);
    ids.push(endpoint.id);
  }
  const got = await c.stripe.webhookEndpoints.retrieve(ids[0] as string);
  t.like(got, { id: ids[0], url: 'http://127.0.0.1:9/hook-0', status: 'enabled', description: 'endpoint 0' });
  t.is(got.secret, undefined);
  t.deepEqual(got.enabled_events, ['payment_intent.created']);
  const all = await c.stripe.webhookEndpoints.list({ limit: 2 }).autoPagingToArray({ limit: 100 });
  t.deepEqual(all.map((e) => e.id), [...ids].reverse());
  t.true(all.every((e) => e.secret === undefined));
  noViolations(t, c);
});

test('events.list shows the created events, auto-paginated, each with its intent', async (t) => {
  const c = client(service, await service.issueKey('sdk-events'));
  const created: string[] = [];
  for (let i = 0; i < 4; i++) created.push((await createPaymentIntent(c.stripe, { amount: 10 + i })).id);
  const events = await c.stripe.events.list({ limit: 3 }).autoPagingToArray({ limit: 100 });
  t.deepEqual(events.map((e) => (e.data.object as unknown as PaymentIntent).id), [...created].reverse());
  t.true(events.every((e) => e.type === ('payment_intent.created' as Stripe.Event.Type) && e.object === 'event'));
  const filtered = await c.stripe.events.list({ type: 'payment_intent.created', limit: 1 });
  t.is(filtered.data.length, 1);
  t.true(filtered.has_more);
  noViolations(t, c);
});

test('typed errors: invalid requests with param and code, authentication, idempotency mismatch', async (t) => {
  const c = client(service, await service.issueKey('sdk-errors'));
  const small = await t.throwsAsync(createPaymentIntent(c.stripe, { amount: 0 }), { instanceOf: Stripe.errors.StripeInvalidRequestError });
  t.like(small, { code: 'amount_too_small', param: 'amount', statusCode: 400, type: 'StripeInvalidRequestError' });
  t.regex(small?.requestId ?? '', /^req_/);
  t.regex(small?.raw && (small.raw as { doc_url?: string }).doc_url ? (small.raw as { doc_url: string }).doc_url : '', /\/docs\/errors#amount_too_small$/);

  const notInteger = await t.throwsAsync(createPaymentIntent(c.stripe, { amount: '5e3' }), { instanceOf: Stripe.errors.StripeInvalidRequestError });
  t.like(notInteger, { code: 'parameter_invalid_integer', param: 'amount' });
  const operator = await t.throwsAsync(createPaymentIntent(c.stripe, { amount: 5, allowed_operators: ['wave', 'paypal'] }), {
    instanceOf: Stripe.errors.StripeInvalidRequestError,
  });
  t.like(operator, { code: 'operator_invalid', param: 'allowed_operators[1]' });
  const missing = await t.throwsAsync(c.stripe.paymentIntents.retrieve('pi_nosuchthing'), { instanceOf: Stripe.errors.StripeInvalidRequestError });
  t.like(missing, { code: 'resource_missing', statusCode: 404 });

  const stranger = client(service, `sk_test_${'x'.repeat(40)}`);
  const auth = await t.throwsAsync(stranger.stripe.paymentIntents.list(), { instanceOf: Stripe.errors.StripeAuthenticationError });
  t.like(auth, { code: 'api_key_invalid', statusCode: 401 });

  await createPaymentIntent(c.stripe, { amount: 300 }, { idempotencyKey: 'sdk-mismatch' });
  const reused = await t.throwsAsync(createPaymentIntent(c.stripe, { amount: 301 }, { idempotencyKey: 'sdk-mismatch' }), {
    instanceOf: Stripe.errors.StripeIdempotencyError,
  });
  t.like(reused, { code: 'idempotency_key_reused', statusCode: 400 });
  noViolations(t, c);
  noViolations(t, stranger);
});

test('idempotencyKey: the second call is the recorded answer, with Idempotent-Replayed', async (t) => {
  const c = client(service, await service.issueKey('sdk-idem'));
  const first = await createPaymentIntent(c.stripe, { amount: 777, metadata: { order: '7' } }, { idempotencyKey: 'sdk-order-7' });
  t.is(lastHeader(first, 'idempotent-replayed'), undefined);
  t.regex(lastHeader(first, 'request-id') ?? '', /^req_/, 'the headers are read');
  const second = await createPaymentIntent(c.stripe, { metadata: { order: '7' }, amount: 777 }, { idempotencyKey: 'sdk-order-7' });
  t.is(second.id, first.id);
  t.is(second.client_secret, first.client_secret);
  t.is(lastHeader(second, 'idempotent-replayed'), 'true');
  t.not(second.lastResponse.requestId, first.lastResponse.requestId);
  const all = await c.stripe.paymentIntents.list({ limit: 100 });
  t.is(all.data.length, 1, 'one object for the two calls');
  noViolations(t, c);
});

test('maxNetworkRetries against a 409: the SDK retries while the key is in flight, then gets the replay', async (t) => {
  // No worker at first: a keyed create stays in flight until one starts.
  const held = await Service.start({ workers: 0, env: { WRITE_TIMEOUT_MS: '60000' } });
  t.teardown(() => held.stop());
  const key = await held.issueKey('sdk-retry');
  const queue = new Queue(QUEUES.writes, { connection: { url: held.env.REDIS_URL as string }, prefix: held.prefix });
  t.teardown(() => queue.close());

  // Form-encoded, as the SDK sends it: the same key with a JSON body would be another request.
  const form = { 'Content-Type': 'application/x-www-form-urlencoded', 'Idempotency-Key': 'retry-1' };
  const first = held.request('POST', '/v1/payment_intents', { key, rawBody: 'amount=4200', headers: form });
  await until('the first request to be queued', async () => ((await queue.getWaitingCount()) > 0 ? true : undefined));

  const conflict = await held.request('POST', '/v1/payment_intents', { key, rawBody: 'amount=4200', headers: form });
  t.is(conflict.status, 409);
  t.is(conflict.body.error.code, 'idempotency_in_flight');
  t.is(conflict.headers.get('stripe-should-retry'), 'true');
  t.truthy(conflict.headers.get('retry-after'));

  const once = client(held, key);
  const refused = await t.throwsAsync(createPaymentIntent(once.stripe, { amount: 4200 }, { idempotencyKey: 'retry-1' }));
  t.like(refused, { statusCode: 409, code: 'idempotency_in_flight' });

  // A create that outlives WRITE_TIMEOUT_MS is a 503 the SDK may retry too.
  const impatient = await held.startExtraApi({ WRITE_TIMEOUT_MS: '300' });
  const timeout = await held.request('POST', '/v1/payment_intents', { key, body: { amount: 1 }, baseUrl: impatient.baseUrl });
  t.is(timeout.status, 503);
  t.is(timeout.body.error.code, 'processing_timeout');
  t.is(timeout.headers.get('stripe-should-retry'), 'true');

  const retrying = client(held, key, { maxNetworkRetries: 10 });
  let attempts = 0;
  retrying.stripe.on('request', () => attempts++);
  const replayed = createPaymentIntent(retrying.stripe, { amount: 4200 }, { idempotencyKey: 'retry-1' });
  await until('the SDK to retry after a 409', () => (attempts >= 2 ? true : undefined));
  await held.startWorker();

  const original = await first;
  t.is(original.status, 200, original.text);
  const pi = await replayed;
  t.is(pi.id, original.body.id);
  t.is(lastHeader(pi, 'idempotent-replayed'), 'true');
  t.true(attempts >= 2, `${attempts} attempts`);
  noViolations(t, once);
  noViolations(t, retrying);
});

test('refunds.create, retrieve, and list with auto-pagination (and its payment_intent filter)', async (t) => {
  const key = await service.issueKey('sdk-refunds');
  const c = client(service, key);
  const pi = await paidIntent(service, key, { amount: 5000 });
  const other = await paidIntent(service, key, { amount: 700, n: 1 });
  const made: string[] = [];
  for (const amount of [1000, 500, 250, 100, 50]) {
    const refund = await c.stripe.refunds.create({ payment_intent: pi.id, amount, reason: 'requested_by_customer', metadata: { n: String(amount) } }, { idempotencyKey: `sdk-refund-${amount}` });
    t.like(refund, { object: 'refund', amount, currency: 'xof', payment_intent: pi.id, status: 'pending', reason: 'requested_by_customer' });
    made.push(refund.id);
  }
  const whole = await c.stripe.refunds.create({ payment_intent: other.id });
  t.is(whole.amount, 700);
  const replay = await c.stripe.refunds.create({ payment_intent: pi.id, amount: 1000, reason: 'requested_by_customer', metadata: { n: '1000' } }, { idempotencyKey: 'sdk-refund-1000' });
  t.is(replay.id, made[0]);

  const got = await c.stripe.refunds.retrieve(made[1] as string);
  t.like(got, { id: made[1], amount: 500 });
  t.deepEqual(got.metadata, { n: '500' });

  const all = await c.stripe.refunds.list({ limit: 2 }).autoPagingToArray({ limit: 100 });
  t.deepEqual(all.map((r) => r.id), [whole.id, ...[...made].reverse()]);
  const ofPi = await c.stripe.refunds.list({ payment_intent: pi.id, limit: 2 }).autoPagingToArray({ limit: 100 });
  t.deepEqual(ofPi.map((r) => r.id), [...made].reverse());

  const tooLarge = await c.stripe.refunds.create({ payment_intent: pi.id, amount: 4000 }).catch((err: unknown) => err);
  t.true(tooLarge instanceof Stripe.errors.StripeInvalidRequestError);
  t.like(tooLarge as Stripe.errors.StripeInvalidRequestError, { code: 'amount_too_large', param: 'amount', statusCode: 400 });
  await until('the refunds to succeed', async () => ((await c.stripe.refunds.retrieve(made[0] as string)).status === 'succeeded' ? true : undefined));
  noViolations(t, c);
});

test('payouts.create (phone_number and operator as extra params), retrieve, list with auto-pagination, cancel', async (t) => {
  const key = await service.issueKey('sdk-payouts');
  const c = client(service, key);
  await fund(service, key, 20_000);
  const params = { amount: 1000, currency: 'xof', phone_number: payee('000'), operator: 'mtn_momo', metadata: { run: '1' } } as unknown as Stripe.PayoutCreateParams;
  const made: string[] = [];
  for (let i = 0; i < 3; i++) {
    const payout = await c.stripe.payouts.create({ ...params, phone_number: payee('000', i) } as unknown as Stripe.PayoutCreateParams, { idempotencyKey: `sdk-payout-${i}` });
    t.like(payout, { object: 'payout', amount: 1000, currency: 'xof', status: 'pending', metadata: { run: '1' } });
    made.push(payout.id);
  }
  const replay = await c.stripe.payouts.create({ ...params, phone_number: payee('000', 0) } as unknown as Stripe.PayoutCreateParams, { idempotencyKey: 'sdk-payout-0' });
  t.is(replay.id, made[0]);
  const got = await c.stripe.payouts.retrieve(made[1] as string);
  t.is(got.id, made[1]);
  const all = await c.stripe.payouts.list({ limit: 2 }).autoPagingToArray({ limit: 100 });
  t.deepEqual(all.map((p) => p.id), [...made].reverse());

  const enqueued = await c.stripe.payouts.create({ ...params, phone_number: payee('008', 9) } as unknown as Stripe.PayoutCreateParams);
  await until('the payout to be enqueued', async () => ((await c.stripe.payouts.retrieve(enqueued.id)).status === ('enqueued' as string) ? true : undefined));
  const canceled = await c.stripe.payouts.cancel(enqueued.id);
  t.is(canceled.status, 'canceled');
  const refused = await c.stripe.payouts.cancel(enqueued.id).catch((err: unknown) => err);
  t.true(refused instanceof Stripe.errors.StripeInvalidRequestError);
  t.like(refused as Stripe.errors.StripeInvalidRequestError, { code: 'payout_unexpected_state', statusCode: 400 });
  const short = await c.stripe.payouts.create({ ...params, amount: 1_000_000 } as unknown as Stripe.PayoutCreateParams).catch((err: unknown) => err);
  t.like(short as Stripe.errors.StripeInvalidRequestError, { code: 'balance_insufficient', param: 'amount' });
  noViolations(t, c);
});
