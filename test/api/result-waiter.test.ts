/**
 * The api's wait for job results (api/result-waiter.ts), on a real Redis: a result
 * published on the channel reaches its waiter; when the subscription comes back after
 * Redis went away, each waiter's recheck runs (tried again if it fails), and a result
 * it finds is the waiter's answer.
 */
import test from 'ava';
import { Redis } from 'ioredis';
import { ResultWaiter } from '../../api/result-waiter.js';
import { resultsChannel, type WriteResultMessage } from '../../common/jobs.js';
import { stackUrls, uniqueName } from '../helpers/service.js';

function message(jobId: string, body: string): WriteResultMessage {
  return { jobId, fingerprint: null, status: 200, body };
}

test('a published result reaches its waiter; a recheck run when the subscription is back answers one that was missed', async (t) => {
  const { redisUrl } = stackUrls();
  const prefix = uniqueName('q');
  const subscriber = new Redis(redisUrl);
  const publisher = new Redis(redisUrl);
  const waiter = new ResultWaiter(subscriber, prefix);
  t.teardown(async () => {
    await waiter.close();
    publisher.disconnect();
  });
  await waiter.start();

  const heard = waiter.register('job-heard');
  await publisher.publish(resultsChannel(prefix), JSON.stringify(message('job-heard', 'one')));
  t.like(await heard.result(5000), { body: 'one' });

  let calls = 0;
  const missed = waiter.register('job-missed', async () => {
    calls++;
    if (calls === 1) throw new Error('Redis not quite back');
    return message('job-missed', 'found again');
  });
  const pending = waiter.register('job-pending', async () => null);
  const without = waiter.register('job-without-recheck');
  // What the subscriber's 'ready' does after a reconnection.
  subscriber.emit('ready');
  t.like(await missed.result(5000), { body: 'found again' });
  t.is(calls, 2, 'a recheck that failed was tried again');
  t.is(await pending.result(200), null, 'a recheck that finds nothing leaves the wait as it was');
  t.is(await without.result(200), null);
});
