/**
 * DESIGN section 20, black-box: no tenant, and no stranger, can stall the rest. The
 * real api and worker, one of each, with the default limits but the ones a test names.
 */
import test from 'ava';
import { BSON } from 'mongodb';
import { Service, uniqueName, until } from '../helpers/service.js';
import { createIntent, update } from '../helpers/payment-intent-lifecycle.js';
import { paidIntent, refund } from '../helpers/refunds.js';
import { intentLockKey } from '../../worker/record-lock.js';

let service: Service;

test.before(async () => {
  service = await Service.start({
    workers: 1,
    env: {
      SIMULATOR_APPROVAL_DELAY_MS: '100',
      SIMULATOR_PROCESSING_DELAY_MS: '100',
      ANONYMOUS_RATE_LIMIT_PER_SECOND: '20',
    },
  });
});

test.after.always(async () => {
  await service?.stop();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** How long the flood runs at full strength before the victim's creates are timed under it. */
const FLOOD_RAMP_MS = 1500;

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** The one-second rate window of the requests before is gone after this: a test starts with the whole limit. */
const RATE_WINDOW_GONE_MS = 1100;

/** The victim's creates, one after another: their latencies (ms) and statuses. */
async function victimCreates(key: string, count: number): Promise<{ ms: number[]; statuses: number[] }> {
  const ms: number[] = [];
  const statuses: number[] = [];
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    const res = await service.request('POST', '/v1/payment_intents', { key, body: { amount: 1000, currency: 'xof' } });
    ms.push(performance.now() - started);
    statuses.push(res.status);
    await sleep(100);
  }
  return { ms, statuses };
}

test.serial("H1: 100 concurrent writes of one intent neither fill the worker nor slow another project's live creates", async (t) => {
  const attacker = uniqueName('attacker');
  const victim = uniqueName('victim');
  const [attackerKey, victimKey] = await Promise.all([service.issueKey(attacker), service.issueKey(victim, true)]);
  // A flood on one object is an object's problem (the rate limit is off in this service):
  // refunds of one paid intent until its cap of refunds, then updates of another.
  const paid = await paidIntent(service, attackerKey, { amount: 1_000_000 });
  const open = await createIntent(service, attackerKey, { amount: 1000, currency: 'xof' });
  const quiet = await victimCreates(victimKey, 10);

  let running = true;
  let n = 0;
  const answers = new Map<string, number>();
  const loops = Array.from({ length: 100 }, async (_, i) => {
    while (running) {
      const res = i % 2 === 0
        ? await refund(service, attackerKey, { payment_intent: paid.id, amount: 1 })
        : await update(service, attackerKey, open.id, { metadata: { n: String(++n) } });
      const code = res.status === 200 ? '200' : `${res.status} ${res.body?.error?.code}`;
      answers.set(code, (answers.get(code) ?? 0) + 1);
      // A client that is told to retry waits a little, as any does.
      if (res.status === 409) await sleep(100);
    }
  });
  // The flood runs a while before the victim's creates are timed: it is under way (each of
  // its 100 clients answered), then FLOOD_RAMP_MS more, so they meet it at full strength.
  await until('the flood to be under way', () => ([...answers.values()].reduce((a, b) => a + b, 0) >= 100 ? true : undefined), 60_000);
  await sleep(FLOOD_RAMP_MS);
  const busy = await victimCreates(victimKey, 15);
  running = false;
  await Promise.all(loops);

  const quietP95 = percentile(quiet.ms, 95);
  const busyP95 = percentile(busy.ms, 95);
  t.log(`victim live creates: quiet p95 ${quietP95.toFixed(0)} ms, under the flood p95 ${busyP95.toFixed(0)} ms; attacker answers ${JSON.stringify(Object.fromEntries(answers))}`);
  t.true(busy.statuses.every((status) => status === 200), `victim statuses ${busy.statuses.join(',')}`);
  t.true(busyP95 < Math.max(1000, 2 * quietP95), `p95 ${busyP95} ms`);
  t.true((answers.get('409 lock_timeout') ?? 0) > 0, 'writes past the object\'s cap are refused at once with 409 lock_timeout');
  t.false([...answers.keys()].some((code) => code.startsWith('503')), 'no processing_timeout: nothing waited in a worker slot');
});

test.serial('H1: a write of a record that stays locked answers 409 lock_timeout within the wait, changes nothing, and keeps no idempotency record', async (t) => {
  const key = await service.issueKey(uniqueName('locked'));
  const pi = await createIntent(service, key, { amount: 1000, currency: 'xof' });
  const redis = service.redis();
  t.teardown(() => redis.disconnect());
  // Another writer holds the intent's lock past RECORD_LOCK_WAIT_MS (2 s), until it lets go below.
  const lock = intentLockKey(service.prefix, pi.id);
  await redis.set(lock, 'someone else', 'PX', 60_000);
  const started = Date.now();
  const res = await update(service, key, pi.id, { description: 'changed' }, { 'Idempotency-Key': 'lock-1' });
  t.is(res.status, 409, res.text);
  t.like(res.body.error, { type: 'invalid_request_error', code: 'lock_timeout' });
  t.true(Date.now() - started < 5000);
  await redis.del(lock);
  const again = await update(service, key, pi.id, { description: 'changed' }, { 'Idempotency-Key': 'lock-1' });
  t.is(again.status, 200, 'the same key runs again once the lock is free: the 409 was not recorded');
  t.is(again.headers.get('idempotent-replayed'), null);
  t.is(again.body.description, 'changed');
});

test.serial('M1: 150 refunds of one intent end at the cap (failed ones count), and the intent stays small', async (t) => {
  const key = await service.issueKey(uniqueName('many'));
  const pi = await paidIntent(service, key, { amount: 100_000 });
  const statuses = new Map<string, number>();
  for (let batch = 0; batch < 150; batch += 3) {
    const answers = await Promise.all([0, 1, 2].map(() => refund(service, key, { payment_intent: pi.id, amount: 1 })));
    for (const res of answers) {
      const code = res.status === 200 ? '200' : `${res.status} ${res.body?.error?.code}`;
      statuses.set(code, (statuses.get(code) ?? 0) + 1);
    }
  }
  t.is(statuses.get('200'), 100, JSON.stringify(Object.fromEntries(statuses)));
  t.is(statuses.get('400 refund_limit'), 50);
  const doc = await (await service.db()).collection('payment_intents').findOne({ _id: pi.id as never });
  t.is((doc?.refunds as unknown[]).length, 100);
  const bytes = BSON.serialize(doc!).length;
  t.log(`the intent with 100 refunds: ${bytes} bytes`);
  t.true(bytes < 64 * 1024, `${bytes} bytes`);
});

test.serial('the rate limit is per project and mode: its keys share it', async (t) => {
  const limited = await Service.start({ workers: 0, env: { RATE_LIMIT_PER_SECOND: '40' } });
  try {
    const project = uniqueName('shared');
    const [a, b, other] = await Promise.all([limited.issueKey(project), limited.issueKey(project), limited.issueKey(uniqueName('other'))]);
    await sleep(RATE_WINDOW_GONE_MS);
    const answers = await Promise.all(Array.from({ length: 60 }, (_, i) => limited.request('GET', '/v1/payment_intents?limit=1', { key: i % 2 ? a : b })));
    const refused = answers.filter((res) => res.status === 429).length;
    t.true(refused >= 15, `${refused} of 60 refused: two keys of one project do not get 40 a second each`);
    t.true(answers.filter((res) => res.status === 200).length <= 40);
    t.is((await limited.request('GET', '/v1/payment_intents?limit=1', { key: other })).status, 200, 'another project has its own');
  } finally {
    await limited.stop();
  }
});

test.serial('strangers: unauthenticated routes and failed authentications are limited per address', async (t) => {
  await sleep(RATE_WINDOW_GONE_MS);
  const callbacks = await Promise.all(Array.from({ length: 40 }, () => fetch(`${service.baseUrl}/operators/mtn_momo/callback`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: '{"externalId":"pi_x:1"}' })));
  t.true(callbacks.filter((r) => r.status === 429).length >= 15, 'callbacks past 20 a second from one address: 429');
  await sleep(RATE_WINDOW_GONE_MS);
  const guesses = await Promise.all(Array.from({ length: 40 }, (_, i) => service.request('GET', '/v1/payment_intents', { key: `sk_test_guess${i}` })));
  t.true(guesses.filter((r) => r.status === 429).length >= 15, 'guessed keys past 20 a second: 429, not 401');
  t.true(guesses.every((r) => r.status === 401 || r.status === 429));
});

test.serial('admin and dashboard: failed sign-ins are logged at warn, counted, and slowed per address after 10 a minute', async (t) => {
  for (let i = 0; i < 10; i++) {
    const res = await service.request('GET', '/admin/v1/api_keys', { headers: { Authorization: `Bearer wrong-token-${i}` } });
    t.is(res.status, 401);
  }
  const right = await service.request('GET', '/admin/v1/api_keys', { headers: { Authorization: `Bearer ${service.adminToken}` } });
  t.is(right.status, 429, 'the address is slowed, right token or not');
  t.truthy(right.headers.get('retry-after'));
  t.true(service.logs().some((line) => line.includes('admin authentication failed') && line.includes('"level":40')));
  t.false(service.logs().some((line) => line.includes('wrong-token-')), 'what was tried is never logged');
  const metrics = await (await fetch(`${service.baseUrl}/metrics`)).text();
  t.regex(metrics, /admin_auth_failures_total\{[^}]*surface="admin_api"[^}]*\} 10\b/);
});
