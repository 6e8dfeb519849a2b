/**
 * One slow receiver (a tarpit) holds at most WEBHOOK_ENDPOINT_CONCURRENCY delivery
 * slots; the others keep flowing to other endpoints, and a delivery that waited
 * for a slot has not used up an attempt.
 */
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import test from 'ava';
import { Service, sleep, uniqueName, until } from '../helpers/service.js';
import { createEndpoint, createPaymentIntent, waitForAttempts } from '../helpers/webhook-fixtures.js';
import { Receiver } from '../helpers/receiver.js';

/** A delivery waiting for a slot asks again within 2 s (slotWaitMs): a third past the limit would reach the tarpit within this. */
const SLOT_ASKS_AGAIN_MS = 2500;

let service: Service;
let receiver: Receiver;

test.before(async () => {
  [service, receiver] = await Promise.all([
    Service.start({
      env: {
        WEBHOOK_ENDPOINT_CONCURRENCY: '2',
        // Fewer worker slots than tarpit deliveries: without a per-endpoint limit the tarpit takes them all.
        WEBHOOK_CONCURRENCY: '4',
        WEBHOOK_TIMEOUT_MS: '60000',
        WEBHOOK_RETRY_SCHEDULE_MS: '200',
        WEBHOOK_JITTER: '0',
      },
    }),
    Receiver.start(),
  ]);
});

test.after.always(async () => {
  await Promise.all([service?.stop(), receiver?.close()]);
});

/** Holds every request open until released; counts how many were open at once. */
async function tarpit() {
  const held: ServerResponse[] = [];
  let open = 0;
  let maxOpen = 0;
  let total = 0;
  let released = false;
  const server = createServer((req, res) => {
    req.resume();
    total++;
    open++;
    maxOpen = Math.max(maxOpen, open);
    res.on('close', () => open--);
    if (released) res.end('ok');
    else held.push(res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/tarpit`,
    get open() {
      return open;
    },
    get maxOpen() {
      return maxOpen;
    },
    get total() {
      return total;
    },
    release() {
      released = true;
      for (const res of held.splice(0)) res.end('ok');
    },
    close() {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

test('a tarpit endpoint holds at most its limit of deliveries; another endpoint is delivered meanwhile', async (t) => {
  const pit = await tarpit();
  t.teardown(() => pit.close());
  const slowKey = await service.issueKey(uniqueName('slow'));
  const slow = await createEndpoint(service, slowKey, pit.url);
  for (let i = 0; i < 6; i++) await createPaymentIntent(service, slowKey);
  await until('the tarpit to hold two deliveries', () => (pit.open >= 2 ? true : undefined));

  const fastProject = uniqueName('fast');
  const fastKey = await service.issueKey(fastProject);
  await createEndpoint(service, fastKey, receiver.url(`/${fastProject}`));
  for (let i = 0; i < 3; i++) await createPaymentIntent(service, fastKey);
  await receiver.waitFor(`/${fastProject}`, 3, 20_000);

  // Room for more to arrive, were the limit not kept.
  await sleep(SLOT_ASKS_AGAIN_MS);
  t.is(pit.maxOpen, 2, 'never more than 2 deliveries in flight to the tarpit');
  t.is(pit.total, 2);

  pit.release();
  await until('every tarpit delivery', () => (pit.total >= 6 ? true : undefined));
  t.is(pit.maxOpen, 2);
  const attempts = await waitForAttempts(service, slowKey, slow.id, 6);
  t.deepEqual(attempts.map((a) => [a.attempt, a.succeeded]), Array(6).fill([1, true]), 'each delivered on its first attempt');
});
