/**
 * The sweeps a worker asks for when its Redis connection comes back
 * (worker/schedules.ts, `redriveIntents`): on a real Redis, with a real BullMQ queue
 * and no worker draining it.
 */
import test from 'ava';
import { Queue } from 'bullmq';
import { JOBS, QUEUES, type TypedQueue } from '../../common/jobs.js';
import { redriveIntents } from '../../worker/schedules.js';
import { stackUrls, uniqueName } from '../helpers/service.js';

test('a reconnect sweeps the intents now and a job lock later (that one also recording the events of the last minute\'s transitions), and the refunds a job lock later with a grace of two job locks; once per window', async (t) => {
  const queue = new Queue(QUEUES.maintenance, { connection: { url: stackUrls().redisUrl }, prefix: uniqueName('redrive') });
  t.teardown(async () => {
    await queue.obliterate({ force: true });
    await queue.close();
  });
  const now = Date.now();
  await redriveIntents(queue as unknown as TypedQueue<'maintenance'>, 5000, now);
  // A second worker that saw the same Redis come back adds nothing more.
  await redriveIntents(queue as unknown as TypedQueue<'maintenance'>, 5000, now + 1);

  const jobs = (await queue.getJobs(['waiting', 'delayed'])).map((j) => ({ name: j.name, data: j.data as unknown, delay: j.opts.delay ?? 0 }));
  const sorted = jobs.sort((a, b) => a.name.localeCompare(b.name) || a.delay - b.delay);
  t.deepEqual(sorted, [
    { name: JOBS.sweepIntents, data: {}, delay: 0 },
    { name: JOBS.sweepIntents, data: { recentMs: 65_000 }, delay: 5000 },
    { name: JOBS.sweepRefunds, data: { graceMs: 10_000 }, delay: 5000 },
  ].sort((a, b) => a.name.localeCompare(b.name) || a.delay - b.delay));
});
