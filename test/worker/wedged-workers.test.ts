/**
 * worker/wedged-workers.ts on the test stack's Redis: a worker that does not fetch
 * (paused here, as a worker parked on a dead master's connection) leaves a due
 * delayed job in its queue; the check replaces it by a new worker with the same
 * listeners, which promotes and runs the job. A worker whose every slot runs a job
 * is busy, not wedged, and is left alone.
 */
import test from 'ava';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { jobsInFlight, typedWorkerMaker } from '../../common/jobs.js';
import { createLogger } from '../../common/logger.js';
import { shardWedged, watchWedgedWorkers } from '../../worker/wedged-workers.js';
import { sleep, stackUrls, uniqueName, until } from '../helpers/service.js';

const PREFIX = 'wedged-test';
const logger = createLogger('silent', 'test');

let redis: Redis;
test.before(() => {
  redis = new Redis(stackUrls().redisUrl, { maxRetriesPerRequest: null });
});
test.after.always(() => redis?.disconnect());

test('a worker that does not fetch is replaced; the new one runs the overdue delayed job with the same listeners', async (t) => {
  const name = uniqueName('wedged');
  const queue = new Queue(name, { connection: redis, prefix: PREFIX });
  const ran: string[] = [];
  const completed: string[] = [];
  const make = typedWorkerMaker<'maintenance'>(async (job) => void ran.push(job.id!), { connection: redis, prefix: PREFIX, autorun: false, concurrency: 3 });
  const group = [make(name)];
  group[0]!.on('completed', (job) => completed.push(job.id!));
  // Never fetches: a parked loop.
  await group[0]!.pause(true);
  const wedged = group[0]!;
  t.teardown(async () => {
    stop();
    await Promise.all([...group, wedged].map((w) => w.close(true)));
    await queue.obliterate({ force: true });
    await queue.close();
  });

  await queue.add('step', {}, { jobId: 'due-1', delay: 200 });
  const stop = watchWedgedWorkers({ groups: [group], make: new Map([[group, make]]), redis, prefix: PREFIX, logger, graceMs: 1000, everyMs: 200 });

  await until('the overdue job run by a replacement', () => (ran.includes('due-1') ? true : undefined), 30_000);
  t.not(group[0], wedged, 'the worker was replaced in its group');
  t.is(group[0]!.concurrency, 3, 'with its concurrency');
  t.truthy(wedged.closing, 'the old one closed');
  await until('the completion seen by the carried listener', () => (completed.includes('due-1') ? true : undefined), 10_000);
  t.false(await shardWedged(redis, PREFIX, name, 1000, Date.now()));
});

test('a shard with a job waiting, or a delayed job not yet overdue by the grace, is not wedged', async (t) => {
  const name = uniqueName('live');
  const queue = new Queue(name, { connection: redis, prefix: PREFIX });
  t.teardown(async () => {
    await queue.obliterate({ force: true });
    await queue.close();
  });
  await queue.add('later', {}, { jobId: 'later', delay: 60_000 });
  t.false(await shardWedged(redis, PREFIX, name, 1000, Date.now()), 'not due yet');
  t.true(await shardWedged(redis, PREFIX, name, 1000, Date.now() + 62_000), 'overdue by more than the grace, nothing waiting');
  await queue.add('now', {}, { jobId: 'now' });
  t.false(await shardWedged(redis, PREFIX, name, 1000, Date.now() + 62_000), 'a job waits: the shard is busy, not wedged');
});

/** Ten of the watcher's checks (everyMs 100): a replacement it would make has been made by then. */
const TEN_CHECKS_MS = 1000;

test('a worker whose every slot runs a long job is left alone, however overdue the delayed jobs behind it', async (t) => {
  const name = uniqueName('busy');
  const queue = new Queue(name, { connection: redis, prefix: PREFIX });
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const make = typedWorkerMaker<'maintenance'>(() => released, { connection: redis, prefix: PREFIX, autorun: false, concurrency: 1 });
  const group = [make(name)];
  const busy = group[0]!;
  let stop = () => {};
  t.teardown(async () => {
    stop();
    release();
    await Promise.all(group.map((w) => w.close(true)));
    await queue.obliterate({ force: true });
    await queue.close();
  });

  await queue.add('long', {}, { jobId: 'long' });
  busy.run().catch(() => {});
  await until('the long job running', () => (jobsInFlight(busy) === 1 ? true : undefined), 10_000);
  await queue.add('behind', {}, { jobId: 'behind', delay: 1 });
  stop = watchWedgedWorkers({ groups: [group], make: new Map([[group, make]]), redis, prefix: PREFIX, logger, graceMs: 500, everyMs: 100 });
  // Checks that see the delayed job overdue by the grace (they ask Redis only then and after).
  await until('the overdue job seen', async () => ((await shardWedged(redis, PREFIX, name, 500, Date.now())) ? true : undefined), 10_000);
  // An absence: ten of the watcher's checks (every 100 ms) with the job overdue past the grace.
  await sleep(TEN_CHECKS_MS);
  t.is(group[0], busy, 'not replaced');
  t.falsy(busy.closing);
  release();
  await until('the delayed job run once the slot is free', async () => ((await queue.getJobState('behind')) === 'completed' ? true : undefined), 30_000);
  t.is(group[0], busy);
});

test('a worker whose wait for a job never ends is replaced, with no delayed job in its queue', async (t) => {
  const name = uniqueName('stuck-wait');
  const make = typedWorkerMaker<'maintenance'>(async () => undefined, { connection: redis, prefix: PREFIX, autorun: false });
  const group = [make(name)];
  const stuck = group[0]!;
  // BullMQ's private pending wait, as a blocking command that never returns leaves it.
  (stuck as unknown as { waiting: Promise<unknown> }).waiting = new Promise(() => {});
  const stop = watchWedgedWorkers({ groups: [group], make: new Map([[group, make]]), redis, prefix: PREFIX, logger, graceMs: 300, everyMs: 100 });
  t.teardown(async () => {
    stop();
    await Promise.all([...group, stuck].map((w) => w.close(true)));
  });
  await until('the worker replaced', () => (group[0] !== stuck ? true : undefined), 30_000);
  t.truthy(stuck.closing);
  t.false(await shardWedged(redis, PREFIX, name, 300, Date.now()), 'nothing overdue: the wait alone told');
});
