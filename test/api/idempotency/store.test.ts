/**
 * The idempotency store's promises that hang on time and on what Redis still holds:
 * the epoch, the expiry of a key, and the bounded memory of replays. Driven through
 * `createApi(deps)` on a local HTTP server, with a worker in the same process and an
 * injected clock; Redis and FerretDB are real. The tests share the clock and the
 * epoch key, so they run one at a time.
 */
import test from 'ava';
import { decodeEntry, encodeDone, redisKey, scopeHash } from '../../../common/idempotency.js';
import { openStack, startInProcess, type InProcessService, type Stack } from '../../helpers/in-process.js';
import { uniqueName, type ApiResponse } from '../../helpers/service.js';

const PI = '/v1/payment_intents';

let stack: Stack;
let service: InProcessService;
let key: string;
const scope = { project: uniqueName('store'), livemode: false };

test.before(async () => {
  // The idempotency sweeper would free expired keys on its own: keep it out of the way.
  stack = await openStack({ IDEMPOTENCY_SWEEP_MS: String(3_600_000), IDEMPOTENCY_REPLAY_CACHE_BYTES: String(8 * 1024) });
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

  // Redis loses its data: the cached result and the epoch. (The api's memory is a
  // cache of its own, tested below: forgotten here, so that Redis and MongoDB answer.)
  service.forgetReplays();
  await stack.redis.del(entryKey('epoch'), epochKey());
  const again = await create('epoch', { amount: 101 });
  t.is(again.status, 200, again.text);
  t.true(replayed(again), 'replayed: the job met the key in MongoDB');
  t.is(again.text, first.text);
  t.is(await stack.redis.get(epochKey()), String(record?.idem_expires_at), 'the newest record expires last');
  t.like(decodeEntry(await stack.redis.get(entryKey('epoch'))), { s: 'done', id: first.body.id }, 'and the result is cached again');

  // Until the epoch passes, a miss may hide a result cached before it: MongoDB is still asked.
  service.forgetReplays();
  await stack.redis.del(entryKey('epoch'));
  const stillChecked = await create('epoch', { amount: 101 });
  t.true(replayed(stillChecked));
  t.is(stillChecked.text, first.text);
  t.is(await countWithAmount(101), 1);
});

test.serial('requests that find no epoch at once start it once per process: one scan for the latest expiry, not one per request', async (t) => {
  // A spy on the real collection object the api shares with this test: how often is the
  // latest expiry looked for? (Each look is a scan on FerretDB; 64 requests each starting
  // the epoch once stalled a whole service for minutes.)
  const collection = stack.mongo.collections.paymentIntents;
  const find = collection.find.bind(collection);
  let epochScans = 0;
  collection.find = ((filter: Record<string, unknown>, options?: unknown) => {
    if (JSON.stringify(filter) === JSON.stringify({ idem: { $exists: true } })) epochScans++;
    return find(filter as never, options as never);
  }) as typeof collection.find;
  t.teardown(() => {
    collection.find = find;
  });

  await stack.redis.del(epochKey());
  const answers = await Promise.all(Array.from({ length: 16 }, (_, i) => create(`herd-${i}`, { amount: 106 })));
  for (const res of answers) t.is(res.status, 200, res.text);
  t.is(epochScans, 1, 'one start of the epoch for 16 requests');
  t.truthy(await stack.redis.get(epochKey()));
  t.is(await countWithAmount(106), 16);
});

test.serial('once the epoch has passed, a Redis miss is trusted without asking MongoDB, and the key still creates one object', async (t) => {
  const first = await create('trusted', { amount: 102 });
  t.is(first.status, 200, first.text);

  // Every live result has been cached since the epoch: a miss is the truth.
  service.forgetReplays();
  await stack.redis.set(epochKey(), '0');
  await stack.redis.del(entryKey('trusted'));
  const again = await create('trusted', { amount: 102 });
  t.is(again.status, 200, again.text);
  // Trusted, so the api did not look: the request went to the worker, whose insert hit
  // the key and answered with its object, flagged as the replay it is.
  t.true(replayed(again));
  t.is(again.text, first.text);
  t.is(await countWithAmount(102), 1);
});

test.serial('once the epoch has passed, a create whose object has changed since still replays its first answer, frozen before the change', async (t) => {
  const first = await create('frozen', { amount: 107 });
  t.is(first.status, 200, first.text);
  const changed = await service.request('POST', `${PI}/${first.body.id}`, { key, body: { description: 'changed after the create' } });
  t.is(changed.status, 200, changed.text);

  service.forgetReplays();
  await stack.redis.set(epochKey(), '0');
  await stack.redis.del(entryKey('frozen'));
  const again = await create('frozen', { amount: 107 });
  t.is(again.status, 200, again.text);
  t.true(replayed(again));
  t.is(again.text, first.text, 'the answer as it was, not the object as it is');
  const entry = decodeEntry(await stack.redis.get(entryKey('frozen')));
  t.regex(entry?.s === 'done' ? entry.id : '', /^idr:/, 'Redis points at the frozen record again');
  const later = await create('frozen', { amount: 107 });
  t.is(later.text, first.text);
  t.is(await countWithAmount(107), 1);
});

test.serial('a replay is kept in memory until its key expires; past IDEMPOTENCY_TTL_MS the key is free and creates anew', async (t) => {
  const first = await create('expiring', { amount: 103 });
  t.is(first.status, 200, first.text);
  service.forgetReplays();
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

test.serial('an answer this api received from its job is kept: its replay asks neither Redis nor MongoDB', async (t) => {
  const first = await create('kept', { amount: 108 });
  t.is(first.status, 200, first.text);
  await stack.redis.del(entryKey('kept'));
  await stack.redis.set(epochKey(), '0');
  const again = await create('kept', { amount: 108 });
  t.true(replayed(again));
  t.is(again.text, first.text);
  t.is(await stack.redis.get(entryKey('kept')), null, 'answered from memory: no job ran to cache it again');
  const reused = await create('kept', { amount: 109 });
  t.is(reused.status, 400);
  t.is(reused.body.error.code, 'idempotency_key_reused');
  t.is(await countWithAmount(108), 1);
});

test.serial("another api's answer, heard on the results channel, is kept too: a replay there asks neither Redis nor MongoDB", async (t) => {
  const other = await startInProcess(stack);
  t.teardown(() => other.stop());
  const first = await create('heard', { amount: 110 });
  t.is(first.status, 200, first.text);
  // Redis forgets the key and says its misses are the truth: only memory can replay now.
  await stack.redis.del(entryKey('heard'));
  await stack.redis.set(epochKey(), '0');
  const send = (body: Record<string, unknown>) => other.request('POST', PI, { key, body, headers: { 'Idempotency-Key': 'heard' } });
  const again = await send({ amount: 110 });
  t.is(again.status, 200, again.text);
  t.true(replayed(again));
  t.is(again.text, first.text, 'the first answer, byte for byte');
  t.is(await stack.redis.get(entryKey('heard')), null, 'answered from memory: no job ran to cache it again');
  const reused = await send({ amount: 111 });
  t.is(reused.status, 400);
  t.is(reused.body.error.code, 'idempotency_key_reused', 'the heard answer keeps the fingerprint of its request');
  t.is(await countWithAmount(110), 1);
  t.is(await countWithAmount(111), 0);
});

test.serial('a replay read from Redis just before the intent changed answers the first bytes, not the changed intent', async (t) => {
  const first = await create('frozen-late', { amount: 112 });
  t.is(first.status, 200, first.text);
  const created = decodeEntry(await stack.redis.get(entryKey('frozen-late')));
  if (created?.s !== 'done') return t.fail(`no result cached: ${JSON.stringify(created)}`);
  t.is(created.id, first.body.id, 'Redis points at the object until it changes');

  // A change freezes the create's answer as the key's record, points Redis at it, then changes the intent.
  const changed = await service.request('POST', `${PI}/${first.body.id}`, { key, body: { description: 'changed' } });
  t.is(changed.status, 200, changed.text);
  t.is((await stored(first.body.id))?.description, 'changed');
  // What an api holds that read the entry just before the freeze: the object's pointer.
  await stack.redis.set(entryKey('frozen-late'), encodeDone(created.fp, created.id, 200, created.exp), 'PX', 60_000);
  service.forgetReplays();
  const again = await create('frozen-late', { amount: 112 });
  t.is(again.status, 200, again.text);
  t.true(replayed(again));
  t.is(again.text, first.text, 'the first answer, byte for byte');
  t.is(await countWithAmount(112), 1);
});

test.serial('the memory is bounded in bytes: past the bound, the oldest replay is forgotten first', async (t) => {
  // This file's api keeps 8 KiB of replays: about a dozen of these answers.
  const body = { amount: 105, description: 'x'.repeat(200) };
  const total = 30;
  const firsts: ApiResponse[] = [];
  for (let i = 0; i < total; i++) firsts.push(await create(`evict-${i}`, body));
  for (const res of firsts) t.is(res.status, 200, res.text);
  service.forgetReplays();
  // One after another: the memory forgets in the order it learned, so the newest must be learned last.
  const replays: ApiResponse[] = [];
  for (let i = 0; i < total; i++) replays.push(await create(`evict-${i}`, body));
  t.is(replays.filter((res) => replayed(res)).length, total, 'each one replayed, and kept in memory on the way');

  // Redis forgets both keys and says its misses are the truth: only memory can replay now.
  await stack.redis.del(entryKey('evict-0'), entryKey(`evict-${total - 1}`));
  await stack.redis.set(epochKey(), '0');
  const newest = await create(`evict-${total - 1}`, body);
  t.true(replayed(newest));
  t.is(newest.text, firsts[total - 1]!.text);
  t.is(await stack.redis.get(entryKey(`evict-${total - 1}`)), null, 'the newest was answered from memory, asking no one');
  const oldest = await create('evict-0', body);
  t.is(oldest.status, 200, oldest.text);
  t.is(oldest.body.id, firsts[0]!.body.id, 'still the one object of its key');
  t.like(decodeEntry(await stack.redis.get(entryKey('evict-0'))), { s: 'done', id: firsts[0]!.body.id }, 'the oldest was forgotten: it went through a job, which cached it again');
  t.is(await countWithAmount(105), total);
});
