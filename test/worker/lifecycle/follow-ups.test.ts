/**
 * The order of the intents queue's jobs under a backlog (worker/lifecycle/follow-ups.ts,
 * common/jobs.ts `outcomePriority`): on a real Redis, with a real BullMQ queue, a
 * backlog made before a worker starts, and the order one worker takes them in.
 */
import test from 'ava';
import { Queue, Worker } from 'bullmq';
import { QUEUES, type TypedQueue } from '../../../common/jobs.js';
import { scheduleFollowUps } from '../../../worker/lifecycle/follow-ups.js';
import { stackUrls, uniqueName } from '../../helpers/service.js';

const scope = { project: 'proj_followups', livemode: false };
const intent = (id: string) => ({ _id: id, ...scope, expires_at: Math.floor(Date.now() / 1000) + 3600, attempt: 0 });

test('a backlog ends the payments in flight first: each settlement goes before every payer step enqueued ahead of it, in order among themselves', async (t) => {
  const connection = { url: stackUrls().redisUrl };
  const prefix = uniqueName('followups');
  const queue = new Queue(QUEUES.intents, { connection, prefix });
  t.teardown(async () => {
    await queue.obliterate({ force: true });
    await queue.close();
  });
  const now = Date.now();
  const add = (id: string, step: 'payer' | 'settle') =>
    scheduleFollowUps(queue as unknown as TypedQueue<'intents'>, intent(id), [{ kind: 'outcome', step, delayMs: 0 }], now);
  // Enqueued in this order, as a backlog would hold them: payer steps first.
  await add('pi_a', 'payer');
  await add('pi_b', 'payer');
  await add('pi_c', 'settle');
  await add('pi_d', 'payer');
  await add('pi_e', 'settle');

  const taken: string[] = [];
  const done = new Promise<void>((resolve) => {
    const worker = new Worker(
      QUEUES.intents,
      async (job) => {
        taken.push(`${(job.data as { paymentIntent: string }).paymentIntent}:${(job.data as { step: string }).step}`);
        if (taken.length === 5) resolve();
      },
      { connection, prefix, concurrency: 1 },
    );
    t.teardown(() => worker.close());
  });
  await done;
  t.deepEqual(taken, ['pi_c:settle', 'pi_e:settle', 'pi_a:payer', 'pi_b:payer', 'pi_d:payer']);
});
