/**
 * Idempotency under attack, black-box: a retry with the same key and another body
 * never gets the first request's object (the answer carries its fingerprint), and
 * Redis caches no secret: a replay is rendered again from MongoDB.
 */
import { createHash } from 'node:crypto';
import test from 'ava';
import { Queue } from 'bullmq';
import { canonicalRequest, FINGERPRINT_KEY_ID, fingerprintOf, redisKey, scopeHash } from '../../common/idempotency.js';
import { QUEUES, resultsChannel } from '../../common/jobs.js';
import { Service, sleep, uniqueName, until } from '../helpers/service.js';

let service: Service;

test.before(async () => {
  // Admission control off: these tests hold the queue back on purpose, and must reach the wait.
  service = await Service.start({ workers: 1, env: { WRITE_TIMEOUT_MS: '3000', CREATE_ADMISSION_WAIT_MS: '0' } });
});

test.after.always(async () => {
  await service?.stop();
});

const PI = '/v1/payment_intents';
/** From holding the key to waiting on the job is a Redis read or two: the retry is waiting after this (it answers the same if not). */
const TO_WAIT_ON_THE_JOB_MS = 200;
const WE = '/v1/webhook_endpoints';

test.serial('after a timeout, a retry with the same key and another request gets idempotency_key_reused, not the first object', async (t) => {
  const project = uniqueName('timeout');
  const key = await service.issueKey(project);
  const headers = { 'Idempotency-Key': 'held-back' };
  const creates = new Queue(QUEUES.writes, { connection: { url: service.env.REDIS_URL }, prefix: service.prefix });
  t.teardown(async () => {
    await creates.resume();
    await creates.close();
  });
  // The worker is held back: the first request times out, its job waits in the queue.
  await creates.pause();
  const first = await service.request('POST', PI, { key, body: { amount: 1111 }, headers });
  t.is(first.status, 503);
  t.is(first.body.error.code, 'processing_timeout');

  // Another request (another path and body) with the key waits on the same job...
  const lock = redisKey(service.prefix, scopeHash({ project, livemode: false }, 'held-back'));
  const redis = service.redis();
  t.teardown(() => redis.disconnect());
  const other = service.request('POST', WE, { key, body: { url: 'https://example.com/hook' }, headers });
  await until('the retry to hold the key', async () => ((await redis.get(lock))?.includes('"lock"') ? true : undefined));
  await sleep(TO_WAIT_ON_THE_JOB_MS);
  // ...and the job completes while it waits.
  await creates.resume();
  const answer = await other;
  t.is(answer.status, 400, answer.text);
  t.is(answer.body.error.code, 'idempotency_key_reused');
  t.is(answer.body.error.type, 'idempotency_error');
  t.false(answer.text.includes('pi_'), 'nothing of the first object leaks');

  // The first request's own retry gets its object, once.
  const retry = await service.request('POST', PI, { key, body: { amount: 1111 }, headers });
  t.is(retry.status, 200);
  t.is(retry.body.amount, 1111);
  t.is(retry.body.object, 'payment_intent');
  const changed = await service.request('POST', PI, { key, body: { amount: 2222 }, headers });
  t.is(changed.status, 400);
  t.is(changed.body.error.code, 'idempotency_key_reused');
  t.is(await (await service.db()).collection('webhook_endpoints').countDocuments({ project }), 0, 'no endpoint was created');
});

/** Every value under the service's prefix, whatever its Redis type, as text. */
async function dumpRedis(): Promise<Map<string, string>> {
  const redis = service.redis();
  try {
    const values = new Map<string, string>();
    const keys: string[] = [];
    let cursor = '0';
    do {
      const [next, batch] = await redis.scan(cursor, 'MATCH', `${service.prefix}:*`, 'COUNT', '1000');
      cursor = next;
      keys.push(...batch);
    } while (cursor !== '0');
    for (const key of keys) {
      const type = await redis.type(key);
      // Expired or deleted since the scan: it holds nothing to check.
      if (type === 'none') continue;
      let value: unknown;
      if (type === 'string') value = await redis.get(key);
      else if (type === 'hash') value = await redis.hgetall(key);
      else if (type === 'list') value = await redis.lrange(key, 0, -1);
      else if (type === 'set') value = await redis.smembers(key);
      else if (type === 'zset') value = await redis.zrange(key, '0', '-1');
      else if (type === 'stream') value = await redis.xrange(key, '-', '+');
      values.set(key, JSON.stringify(value));
    }
    return values;
  } finally {
    redis.disconnect();
  }
}

test.serial('Redis caches no secret, and a replay from another api process is still the first answer byte for byte', async (t) => {
  const key = await service.issueKey(uniqueName('secrets'));
  const pi = await service.request('POST', PI, { key, body: { amount: 500 }, headers: { 'Idempotency-Key': 'pi-key' } });
  const we = await service.request('POST', WE, { key, body: { url: 'https://example.com/h' }, headers: { 'Idempotency-Key': 'we-key' } });
  t.is(pi.status, 200);
  t.is(we.status, 200);
  const clientSecret = pi.body.client_secret as string;
  const signingSecret = we.body.secret as string;
  t.regex(clientSecret, /_secret_/);
  t.regex(signingSecret, /^whsec_/);

  const extra = await service.startExtraApi();
  for (const [path, first, idemKey, body] of [
    [PI, pi, 'pi-key', { amount: 500 }],
    [WE, we, 'we-key', { url: 'https://example.com/h' }],
  ] as const) {
    const replay = await service.request('POST', path, { key, body, headers: { 'Idempotency-Key': idemKey }, baseUrl: extra.baseUrl });
    t.is(replay.status, 200);
    t.is(replay.headers.get('idempotent-replayed'), 'true');
    t.is(replay.text, first.text, `${path}: the same bytes, secret included`);
  }

  const dump = await dumpRedis();
  t.true(dump.size > 0);
  for (const [name, value] of dump) {
    t.false(value.includes(clientSecret) || value.includes('_secret_'), `client secret in ${name}`);
    t.false(value.includes(signingSecret) || value.includes('whsec_'), `signing secret in ${name}`);
  }
});

test.serial('the cached result of a key is its fingerprint and object id: a few hundred bytes, not the response', async (t) => {
  const project = uniqueName('size');
  const key = await service.issueKey(project);
  const res = await service.request('POST', PI, {
    key,
    body: { amount: 700, description: 'x'.repeat(1000), metadata: Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`k${i}`, 'v'.repeat(100)])) },
    headers: { 'Idempotency-Key': 'sized' },
  });
  t.is(res.status, 200);
  const redis = service.redis();
  t.teardown(() => redis.disconnect());
  const entryKey = redisKey(service.prefix, scopeHash({ project, livemode: false }, 'sized'));
  const entry = JSON.parse((await redis.get(entryKey)) as string);
  t.deepEqual(Object.keys(entry).sort(), ['exp', 'fp', 'id', 's', 'status']);
  t.is(entry.id, res.body.id);
  const bytes = Number(await redis.call('MEMORY', 'USAGE', entryKey));
  t.log(`Redis entry of a keyed create: ${bytes} bytes (response: ${res.text.length} bytes)`);
  t.true(bytes < 512, `${bytes} bytes`);
});

test.serial("a keyed confirm's fingerprint gives back no phone number: it is keyed with the service's own key, which Redis never holds", async (t) => {
  const project = uniqueName('fingerprint');
  const key = await service.issueKey(project);
  const created = await service.request('POST', PI, { key, body: { amount: 800, allowed_operators: ['mtn_momo'] } });
  t.is(created.status, 200, created.text);
  const path = `${PI}/${created.body.id}/confirm`;
  const body = { operator: 'mtn_momo', phone_number: '+2250500000123' };
  const confirmed = await service.request('POST', path, { key, body, headers: { 'Idempotency-Key': 'pay-once' } });
  t.is(confirmed.status, 200, confirmed.text);

  const hash = scopeHash({ project, livemode: false }, 'pay-once');
  const redis = service.redis();
  t.teardown(() => redis.disconnect());
  const cached = JSON.parse((await redis.get(redisKey(service.prefix, hash))) as string) as { fp: string };
  const db = await service.db();
  const record = await db.collection<{ _id: string; fp: string }>('idempotency_records').findOne({ _id: hash });
  t.is(record?.fp, cached.fp, 'Redis and MongoDB keep the same fingerprint');
  const canonical = canonicalRequest('POST', path, body);
  t.not(cached.fp, createHash('sha256').update(canonical).digest('hex'), 'not the plain hash, which a search of phone numbers reverses');
  const serviceKey = await db.collection<{ _id: string; key: string }>('service_keys').findOne({ _id: FINGERPRINT_KEY_ID });
  t.truthy(serviceKey, 'the key is kept in MongoDB');
  t.is(cached.fp, fingerprintOf(Buffer.from(serviceKey!.key, 'base64'), canonical));
  for (const [name, value] of await dumpRedis()) t.false(value.includes(serviceKey!.key), `the service key in ${name}`);

  // Another api process makes the same fingerprint: the retry is a replay.
  const extra = await service.startExtraApi();
  const replay = await service.request('POST', path, { key, body, headers: { 'Idempotency-Key': 'pay-once' }, baseUrl: extra.baseUrl });
  t.is(replay.status, 200, replay.text);
  t.is(replay.headers.get('idempotent-replayed'), 'true');
  t.is(replay.text, confirmed.text);
});

test.serial('every answer crosses Redis sealed: the results channel carries no signing secret, client secret or phone number, and the api still answers with them', async (t) => {
  const key = await service.issueKey(uniqueName('channel'));
  const listener = service.redis();
  t.teardown(() => listener.disconnect());
  const heard: string[] = [];
  listener.on('message', (_channel: string, raw: string) => heard.push(raw));
  await listener.subscribe(resultsChannel(service.prefix));

  const created = await service.request('POST', WE, { key, body: { url: 'https://example.com/sealed' } });
  t.is(created.status, 200, created.text);
  t.regex(created.body.secret as string, /^whsec_/);
  const rotated = await service.request('POST', `${WE}/${created.body.id}/rotate_secret`, { key, body: { expire_previous_in: 0 }, headers: { 'Idempotency-Key': 'rotate-1' } });
  t.is(rotated.status, 200, rotated.text);
  t.regex(rotated.body.secret as string, /^whsec_/);
  const intent = await service.request('POST', PI, { key, body: { amount: 900, allowed_operators: ['mtn_momo'] }, headers: { 'Idempotency-Key': 'pi-sealed' } });
  t.is(intent.status, 200, intent.text);
  const clientSecret = intent.body.client_secret as string;
  t.regex(clientSecret, /_secret_/);
  const payer = `+22505${String(Date.now() % 100_000_000).padStart(8, '0')}`;
  const confirmed = await service.request('POST', `${PI}/${intent.body.id}/confirm`, { key, body: { operator: 'mtn_momo', phone_number: payer } });
  t.is(confirmed.status, 200, confirmed.text);
  t.is(confirmed.body.client_secret, clientSecret, 'the confirm answer carries the client secret too');

  await until('the four answers to be heard', async () => (heard.length >= 4 ? true : undefined));
  for (const raw of heard) {
    t.false(raw.includes('whsec_'), 'no signing secret on the channel');
    t.false(raw.includes(clientSecret) || raw.includes('_secret_'), 'no client secret on the channel');
    t.false(raw.includes(payer) || raw.includes(payer.slice(1)), 'no phone number on the channel');
  }
  const messages = heard.map((raw) => JSON.parse(raw) as { body: string; sealed?: boolean });
  t.true(
    messages.every((m) => m.sealed === true && /^v2\.\d+\.[\w-]+\.[\w-]{22}\.[\w-]+$/.test(m.body)),
    'every answer sealed, naming its key version',
  );
});
