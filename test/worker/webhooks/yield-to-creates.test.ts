/**
 * Deliveries yield to creates (worker/webhooks/yield-to-creates.ts): the webhook
 * worker's concurrency drops while creates wait in their queue, and comes back once
 * they flow. On a real Redis, with a real BullMQ queue and no worker draining it.
 */
import test from 'ava';
import { Queue } from 'bullmq';
import { createLogger } from '../../../common/logger.js';
import { yieldToCreates } from '../../../worker/webhooks/yield-to-creates.js';
import { sleep, stackUrls, uniqueName, until } from '../../helpers/service.js';

/** Six of the watcher's checks (every 50 ms): long enough for a wrong change to show. */
const NO_CHANGE_WINDOW_MS = 300;

test('the delivery concurrency drops while creates queue up, and comes back when they drain', async (t) => {
  const creates = new Queue('writes', { connection: { url: stackUrls().redisUrl }, prefix: uniqueName('yield') });
  const deliveries = { concurrency: 50 };
  const stop = yieldToCreates({ creates, deliveries, full: 50, reduced: 5, backlog: 3, intervalMs: 50, logger: createLogger('silent', 'test') });
  t.teardown(async () => {
    stop();
    await creates.obliterate({ force: true });
    await creates.close();
  });

  await creates.addBulk(Array.from({ length: 3 }, (_, i) => ({ name: 'c', data: { i } })));
  // Several of its checks (every intervalMs, 50) must see the 3 and leave the concurrency alone.
  await sleep(NO_CHANGE_WINDOW_MS);
  t.is(deliveries.concurrency, 50, 'as many creates waiting as the backlog allows: no change');

  await creates.add('c', { i: 3 });
  await until('the deliveries to yield', () => (deliveries.concurrency === 5 ? true : undefined), 5000);

  await creates.drain();
  await until('full concurrency again', () => (deliveries.concurrency === 50 ? true : undefined), 5000);
  t.is(deliveries.concurrency, 50);
});
