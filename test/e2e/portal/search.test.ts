/**
 * `GET /v1/payment_intents/search` (DESIGN section 18), black-box: Stripe's query
 * language subset, results right after a write, pages by `next_page`, a scope of its
 * own, clear 400s; and the official Stripe SDK's `paymentIntents.search()` with
 * auto-pagination.
 */
import test from 'ava';
import Stripe from 'stripe';
import { Service, uniqueName } from '../../helpers/service.js';
import { confirm, createIntent, phone, waitForStatus } from '../../helpers/payment-intent-lifecycle.js';

let service: Service;

test.before(async () => {
  service = await Service.start({ workers: 1, env: { SIMULATOR_APPROVAL_DELAY_MS: '100', SIMULATOR_PROCESSING_DELAY_MS: '100' } });
});

test.after.always(async () => {
  await service?.stop();
});

const SEARCH = '/v1/payment_intents/search';
const search = (key: string, query: string, extra = '') => service.request('GET', `${SEARCH}?query=${encodeURIComponent(query)}${extra}`, { key });
const ids = (body: { data: Array<{ id: string }> }) => body.data.map((pi) => pi.id);

test('finds by phone_last4, metadata, status, created and AND, newest first, right after each write', async (t) => {
  const key = await service.issueKey(uniqueName('search'));
  const a = await createIntent(service, key, { metadata: { order_id: 'A-77', 'a.b': 'x' } });
  const b = await createIntent(service, key, { metadata: { order_id: 'A-78' } });
  const c = await createIntent(service, key, { metadata: { order_id: 'A-77' } });

  // Found by the next search after the create: no index to wait for.
  const byMeta = await search(key, "metadata['order_id']:'A-77'");
  t.is(byMeta.status, 200, byMeta.text);
  t.is(byMeta.body.object, 'search_result');
  t.is(byMeta.body.url, SEARCH);
  t.deepEqual(ids(byMeta.body), [c.id, a.id]);
  t.is(byMeta.body.has_more, false);
  t.is(byMeta.body.next_page, null);
  t.deepEqual(ids((await search(key, 'metadata["a.b"]:"x"')).body), [a.id], 'a key with a dot, double quotes');
  t.deepEqual(ids((await search(key, "metadata['order_id']:'A-7'")).body), [], 'exact values only');

  const number = phone('225', '000', 4321);
  t.is((await confirm(service, key, b.id, { operator: 'mtn_momo', phone_number: number })).status, 200);
  const last4 = number.slice(-4);
  t.deepEqual(ids((await search(key, `phone_last4:'${last4}'`)).body), [b.id], 'found by the phone digits as soon as the confirm answered');
  await waitForStatus(service, key, b.id, 'succeeded');
  t.deepEqual(ids((await search(key, "status:'succeeded'")).body), [b.id]);
  t.deepEqual(ids((await search(key, `status:'succeeded' AND phone_last4:'${last4}'`)).body), [b.id]);
  t.deepEqual(ids((await search(key, `status:'new' AND metadata['order_id']:'A-77'`)).body), [c.id, a.id]);
  const found = await search(key, `phone_last4:'${last4}'`);
  t.false(found.text.includes(number), 'the full number is never shown');

  t.deepEqual(ids((await search(key, `created>=${a.created} AND currency:'XOF'`)).body), [c.id, b.id, a.id]);
  t.deepEqual(ids((await search(key, `created>${c.created + 10}`)).body), []);
  t.deepEqual(ids((await search(key, `created<${a.created}`)).body), []);
  t.deepEqual(ids((await search(key, `amount:2500 AND created<=${c.created}`)).body), [c.id, b.id, a.id]);

  // Another project sees none of them.
  const other = await service.issueKey(uniqueName('search-other'));
  t.deepEqual(ids((await search(other, "metadata['order_id']:'A-77'")).body), []);
});

test('pages with limit and next_page, skipping nothing and repeating nothing', async (t) => {
  const key = await service.issueKey(uniqueName('search-pages'));
  const made: string[] = [];
  for (let i = 0; i < 5; i++) made.push((await createIntent(service, key, { metadata: { batch: 'p' } })).id);
  const seen: string[] = [];
  let page = '';
  for (let round = 0; round < 5; round++) {
    const res = await search(key, "metadata['batch']:'p'", `&limit=2${page ? `&page=${page}` : ''}`);
    t.is(res.status, 200, res.text);
    seen.push(...ids(res.body));
    if (!res.body.has_more) {
      t.is(res.body.next_page, null);
      break;
    }
    page = res.body.next_page as string;
  }
  t.deepEqual(seen, [...made].reverse());
});

test('a query outside the language is a 400 that says why', async (t) => {
  const key = await service.issueKey(uniqueName('search-bad'));
  const cases: Array<[string, RegExp]> = [
    ["status:'new' OR status:'succeeded'", /OR is not supported/],
    ["-status:'new'", /negation/],
    ["description~'x'", /unknown field description/],
    ['status:new', /quoted value/],
    ["amount:'5'", /whole number/],
    ["status>'a'", /exact match/],
    ["status:'new' status:'x'", /AND/],
    ["metadata:'x'", /metadata\['key'\]/],
    ["status:'new", /not closed/],
    ['', /empty/],
  ];
  for (const [query, why] of cases) {
    const res = await search(key, query);
    t.is(res.status, 400, query);
    t.is(res.body.error.code, 'parameter_invalid', query);
    t.is(res.body.error.param, 'query', query);
    t.regex(res.body.error.message, why, query);
  }
  const missing = await service.request('GET', SEARCH, { key });
  t.is(missing.body.error.code, 'parameter_missing');
  t.is((await search(key, "status:'new'", '&limit=0')).body.error.code, 'parameter_invalid_integer');
  t.is((await search(key, "status:'new'", '&page=nope')).body.error.param, 'page');
  t.is((await search(key, "status:'new'", '&starting_after=pi_x')).body.error.code, 'parameter_unknown');
  t.is((await service.request('GET', `${SEARCH}?query=x`)).status, 401, 'a key first');
});

test("the Stripe SDK's paymentIntents.search() finds and auto-pages", async (t) => {
  const key = await service.issueKey(uniqueName('search-sdk'));
  const made: string[] = [];
  for (let i = 0; i < 3; i++) made.push((await createIntent(service, key, { metadata: { order_id: 'SDK-1' } })).id);
  await createIntent(service, key, { metadata: { order_id: 'SDK-2' } });
  const url = new URL(service.baseUrl);
  const stripe = new Stripe(key, { host: url.hostname, port: url.port, protocol: 'http', telemetry: false, maxNetworkRetries: 0 });
  const first = await stripe.paymentIntents.search({ query: "metadata['order_id']:'SDK-1'", limit: 2 });
  t.is(first.object, 'search_result');
  t.is(first.data.length, 2);
  t.true(first.has_more);
  const all = await stripe.paymentIntents.search({ query: "metadata['order_id']:'SDK-1'", limit: 2 }).autoPagingToArray({ limit: 10 });
  t.deepEqual(all.map((pi) => pi.id), [...made].reverse());
  const err = await t.throwsAsync(stripe.paymentIntents.search({ query: "status:'new' OR status:'x'" }));
  t.true(err instanceof Stripe.errors.StripeInvalidRequestError);
});
