/**
 * The idempotency store's promises that hang on time and on what Redis still holds:
 * the epoch, the expiry of a key, and the bounded memory of replays. Driven through
 * `createApp(deps)` on a local HTTP server, with a worker in the same process and an
 * injected clock; Redis and FerretDB are real. The tests share the clock and the
 * epoch key, so they run one at a time.
 */
import test from 'ava';
import { decodeEntry, encodeDone, redisKey, requestFingerprint, scopeHash } from '../../../common/idempotency.js';
import { openStack, startInProcess, type InProcessService, type Stack } from '../../helpers/in-process.js';
import { uniqueName, type ApiResponse } from '../../helpers/service.js';

const PI = '/v1/payment_intents';

let stack: Stack;
let service: InProcessService;
let key: string;
const scope = { project: uniqueName('store'), livemode: false };

test.before(async () => {
  // The idempotency sweeper would free expired keys on its own: keep it out of the way.
  stack = await openStack({ IDEMPOTENCY_SWEEP_MS: String(3_600_000) });
  service = await startInProcess(stack);
  key = await service.issueKey(scope.project);
});

test.after.always(async () => {
  await service?.stop();
  await stack?.close();
});

/** Where the store keeps its epoch (api/idempotency/store.ts). */
const epochKey = () => `${stack.config.queuePrefix}:idem:epoch`;
const entryKey = (idempotencyKey: string) => redisKey(stack.config.queuePrefix, scopeHash(scope, idempotencyKey));
const create = (idempotencyKey: string, body: Record<string, unknown>) =>
  service.request('POST', PI, { key, body, headers: { 'Idempotency-Key': idempotencyKey } });
const replayed = (res: ApiResponse) => res.headers.get('idempotent-replayed') === 'true';
const stored = (id: string) => stack.mongo.collections.paymentIntents.findOne({ _id: id });
const countWithAmount = (amount: number) => stack.mongo.collections.paymentIntents.countDocuments({ project: scope.project, amount });

test.serial('with no epoch, a Redis miss is checked against MongoDB, and the epoch restarts at the latest expiry MongoDB holds', async (t) => {
  const first = await create('epoch', { amount: 101 });
  t.is(first.status, 200, first.text);
  const record = await stored(first.body.id);

  // Redis loses its data: the cached result and the epoch.
  await stack.redis.del(entryKey('epoch'), epochKey());
  const again = await create('epoch', { amount: 101 });
  t.is(again.status, 200, again.text);
  t.true(replayed(again), 'replayed from the durable record');
  t.is(again.text, first.text);
  t.is(await stack.redis.get(epochKey()), String(record?.idem_expires_at), 'the newest record expires last');
  t.like(decodeEntry(await stack.redis.get(entryKey('epoch'))), { s: 'done', body: first.text }, 'and the result is cached again');

  // Until the epoch passes, a miss may hide a result cached before it: MongoDB is still asked.
  await stack.redis.del(entryKey('epoch'));
  const stillChecked = await create('epoch', { amount: 101 });
  t.true(replayed(stillChecked));
  t.is(stillChecked.text, first.text);
  t.is(await countWithAmount(101), 1);
});

test.serial('once the epoch has passed, a Redis miss is trusted without asking MongoDB, and the key still creates one object', async (t) => {
  const first = await create('trusted', { amount: 102 });
  t.is(first.status, 200, first.text);

  // Every live result has been cached since the epoch: a miss is the truth.
  await stack.redis.set(epochKey(), '0');
  await stack.redis.del(entryKey('trusted'));
  const again = await create('trusted', { amount: 102 });
  t.is(again.status, 200, again.text);
  t.false(replayed(again), 'not looked up in MongoDB: the request went to the worker');
  t.is(again.text, first.text, 'whose insert hit the key and answered with its object');
  t.is(await countWithAmount(102), 1);
});

test.serial('a replay is kept in memory until its key expires; past IDEMPOTENCY_TTL_MS the key is free and creates anew', async (t) => {
  const first = await create('expiring', { amount: 103 });
  t.is(first.status, 200, first.text);
  t.true(replayed(await create('expiring', { amount: 103 })), 'read from Redis, and kept');

  // From here neither Redis nor MongoDB would replay it: only the memory can.
  await stack.redis.del(entryKey('expiring'));
  await stack.redis.set(epochKey(), '0');
  const fromMemory = await create('expiring', { amount: 103 });
  t.true(replayed(fromMemory));
  t.is(fromMemory.text, first.text);
  const reused = await create('expiring', { amount: 104 });
  t.is(reused.status, 400);
  t.is(reused.body.error.code, 'idempotency_key_reused', 'the memory knows which request the key answered');

  stack.clock.advance(stack.config.idempotencyTtlMs + 1);
  const fresh = await create('expiring', { amount: 103 });
  t.is(fresh.status, 200, fresh.text);
  t.false(replayed(fresh));
  t.not(fresh.body.id, first.body.id);
  t.is((await stored(first.body.id))?.idem, undefined, 'the expired object gave up the key');
  t.is((await stored(fresh.body.id))?.idem, scopeHash(scope, 'expiring'), 'the new object holds it');
  t.is(await countWithAmount(103), 2);
});

test.serial('the memory keeps the newest 10 000 replays: past that, the oldest is forgotten first', async (t) => {
  const body = { amount: 105 };
  const fingerprint = requestFingerprint('POST', PI, body);
  const expiresAt = stack.clock.now() + stack.config.idempotencyTtlMs;
  const total = 10_001;
  // Completed results as a worker caches them, without the objects: only Redis knows them.
  for (let start = 0; start < total; start += 1000) {
    const pipeline = stack.redis.pipeline();
    for (let i = start; i < Math.min(start + 1000, total); i++) {
      pipeline.set(entryKey(`evict-${i}`), encodeDone(fingerprint, 200, `{"seeded":${i}}`, expiresAt), 'PX', stack.config.idempotencyTtlMs);
    }
    await pipeline.exec();
  }
  const replays: ApiResponse[] = [await create('evict-0', body)];
  for (let start = 1; start < total - 1; start += 100) {
    const batch = Array.from({ length: Math.min(100, total - 1 - start) }, (_, j) => create(`evict-${start + j}`, body));
    replays.push(...(await Promise.all(batch)));
  }
  replays.push(await create(`evict-${total - 1}`, body));
  t.is(replays.filter((res) => replayed(res)).length, total, 'each one replayed from Redis, and kept');

  await stack.redis.del(entryKey('evict-0'), entryKey(`evict-${total - 1}`));
  await stack.redis.set(epochKey(), '0');
  const newest = await create(`evict-${total - 1}`, body);
  t.true(replayed(newest));
  t.is(newest.text, `{"seeded":${total - 1}}`, 'the newest is still in memory');
  const oldest = await create('evict-0', body);
  t.is(oldest.status, 200, oldest.text);
  t.false(replayed(oldest), 'the oldest was forgotten: nothing replays it, and the request creates an object');
  t.is(oldest.body.amount, 105);
  t.is(await countWithAmount(105), 1);
});
