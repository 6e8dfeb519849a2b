/**
 * A request's job is enqueued only with what it needs: a confirm's phone number is
 * written to MongoDB first (its `beforeEnqueue`). When the results' subscription
 * comes back while that write is still on its way (Redis restarted or failed over
 * during a MongoDB outage), the api's recheck must not enqueue the job ahead of it:
 * run without its phone number, the job fails for good, and every retry of its key
 * waits on that failed job (seen in a chaos run: a confirm never answered 200).
 */
import test from 'ava';
import { Queue } from 'bullmq';
import { MongoNetworkError } from 'mongodb';
import { JOBS, QUEUES } from '../../../common/jobs.js';
import { openStack, startInProcess, type InProcessService, type Stack } from '../../helpers/in-process.js';
import { uniqueName, until } from '../../helpers/service.js';

let stack: Stack;
let service: InProcessService;
let key: string;

test.before(async () => {
  stack = await openStack({ CREATE_TIMEOUT_MS: '5000' });
  service = await startInProcess(stack);
  key = await service.issueKey(uniqueName('recheck'));
});

test.after.always(async () => {
  await service?.stop();
  await stack?.close();
});

test('a recheck while the confirm input is being written enqueues nothing; the retry of the key is answered 200', async (t) => {
  const created = await service.request('POST', '/v1/payment_intents', { key, body: { amount: 900, currency: 'xof' } });
  t.is(created.status, 200, created.text);
  const pi = created.body.id as string;

  // The input's write hangs (MongoDB restarting), then fails with the connection.
  const inputs = stack.mongo.collections.confirmInputs;
  const insertOne = inputs.insertOne.bind(inputs);
  let fail: () => void = () => undefined;
  let called: () => void = () => undefined;
  const reached = new Promise<void>((resolve) => (called = resolve));
  inputs.insertOne = (async () => {
    called();
    await new Promise<void>((resolve) => (fail = resolve));
    throw new MongoNetworkError('connection 1 to 127.0.0.1 closed');
  }) as typeof inputs.insertOne;
  t.teardown(() => {
    inputs.insertOne = insertOne;
  });

  const headers = { 'Idempotency-Key': uniqueName('confirm') };
  const body = { operator: 'mtn_momo', phone_number: '+2250500000000' };
  const first = service.request('POST', `/v1/payment_intents/${pi}/confirm`, { key, body, headers });
  await reached;
  // Redis came back meanwhile: the api rechecks every request waiting for a result.
  await service.results.recheckAll();
  fail();
  const refused = await first;
  t.is(refused.status, 503, refused.text);
  const writes = new Queue(QUEUES.writes, { connection: { url: stack.config.redisUrl }, prefix: stack.config.queuePrefix });
  t.teardown(() => writes.close());
  const jobs = await writes.getJobs(['wait', 'active', 'delayed', 'failed', 'completed']);
  t.deepEqual(
    jobs.filter((job) => job.name === JOBS.confirmPaymentIntent).map((job) => job.failedReason ?? 'enqueued'),
    [],
    'no job ran without its phone number',
  );

  inputs.insertOne = insertOne;
  const retried = await until('the retry of the key to be answered', async () => {
    const res = await service.request('POST', `/v1/payment_intents/${pi}/confirm`, { key, body, headers });
    return res.status === 503 || res.status === 409 ? undefined : res;
  });
  t.is(retried.status, 200, retried.text);
  t.is(retried.body.status, 'requires_action');
});
