// The endpoints each worker keeps per scope for the fan-out (worker/webhooks/endpoint-directory.ts),
// against the test stack's real Redis and MongoDB: a change made by any process, through
// the same helper the endpoint jobs and deliveries use, is seen by every other at once.

import test from 'ava';
import type { WebhookEndpointDoc } from '../../../common/documents.js';
import { createRedis } from '../../../common/redis.js';
import { changingEndpoints, EndpointDirectory, endpointsTokenKey } from '../../../worker/webhooks/endpoint-directory.js';
import { openStack, type Stack } from '../../helpers/in-process.js';
import { uniqueName } from '../../helpers/service.js';

let stack: Stack;

test.before(async () => {
  stack = await openStack();
});

test.after.always(async () => {
  await stack?.close();
});

function endpointOf(scope: { project: string; livemode: boolean }, name: string): WebhookEndpointDoc {
  return {
    _id: `we_${uniqueName(name)}`,
    ...scope,
    url: `https://example.test/${name}`,
    enabled_events: ['*'],
    description: null,
    metadata: [],
    status: 'enabled',
    secret: 'whsec_test',
    created: Math.floor(Date.now() / 1000),
    failing_since: null,
    disabled_reason: null,
  };
}

function directory(now: () => number = Date.now, maxAgeMs?: number) {
  return new EndpointDirectory({ redis: stack.redis, prefix: stack.config.queuePrefix, collections: stack.mongo.collections, now, ...(maxAgeMs ? { maxAgeMs } : {}) });
}

const change = <T>(scope: { project: string; livemode: boolean }, write: () => Promise<T>) => changingEndpoints(stack.redis, stack.config.queuePrefix, scope, write);
const ids = (list: WebhookEndpointDoc[]) => list.map((e) => `${e._id}:${e.status}`).sort();

test('a kept list serves the scope until an endpoint changes; a change by another process is seen at the next event', async (t) => {
  const scope = { project: uniqueName('dir'), livemode: false };
  const endpoints = stack.mongo.collections.webhookEndpoints;
  const a = endpointOf(scope, 'a');
  await change(scope, () => endpoints.insertOne(a));
  const worker1 = directory();
  const worker2 = directory();

  for (let i = 0; i < 5; i++) t.deepEqual(ids(await worker1.endpointsOf(scope)), [`${a._id}:enabled`]);
  t.is(worker1.reads, 1, 'one read for five events');

  // Another process creates an endpoint, then disables the first, then deletes it.
  const b = endpointOf(scope, 'b');
  await change(scope, () => endpoints.insertOne(b));
  t.deepEqual(ids(await worker1.endpointsOf(scope)), [`${a._id}:enabled`, `${b._id}:enabled`].sort());
  await change(scope, () => endpoints.updateOne({ _id: a._id }, { $set: { status: 'disabled' } }));
  t.deepEqual(ids(await worker1.endpointsOf(scope)), [`${a._id}:disabled`, `${b._id}:enabled`].sort());
  await change(scope, () => endpoints.deleteOne({ _id: a._id }));
  t.deepEqual(ids(await worker1.endpointsOf(scope)), [`${b._id}:enabled`]);
  t.deepEqual(ids(await worker2.endpointsOf(scope)), [`${b._id}:enabled`]);
  t.is(worker1.reads, 4);

  // Another scope's change does not drop this one's list.
  const other = { project: uniqueName('dir-other'), livemode: false };
  await change(other, () => endpoints.insertOne(endpointOf(other, 'c')));
  await change({ ...scope, livemode: true }, () => endpoints.insertOne(endpointOf({ ...scope, livemode: true }, 'live')));
  t.deepEqual(ids(await worker1.endpointsOf(scope)), [`${b._id}:enabled`]);
  t.is(worker1.reads, 4);
});

test('a list read while a change is on its way is dropped once the change is done', async (t) => {
  const scope = { project: uniqueName('dir-race'), livemode: false };
  const endpoints = stack.mongo.collections.webhookEndpoints;
  const worker = directory();
  t.deepEqual(await worker.endpointsOf(scope), []);
  const late = endpointOf(scope, 'late');
  await change(scope, async () => {
    // An event fanned out between the change's first token and its write: the list without it.
    t.deepEqual(await worker.endpointsOf(scope), []);
    await endpoints.insertOne(late);
  });
  t.deepEqual(ids(await worker.endpointsOf(scope)), [`${late._id}:enabled`]);
});

test('a token Redis lost is set again and the list read again; a cleared directory and an old list read again', async (t) => {
  const scope = { project: uniqueName('dir-lost'), livemode: false };
  await change(scope, () => stack.mongo.collections.webhookEndpoints.insertOne(endpointOf(scope, 'x')));
  let now = 1_000_000;
  const worker = directory(() => now, 10_000);
  await worker.endpointsOf(scope);
  await stack.redis.del(endpointsTokenKey(stack.config.queuePrefix, scope));
  await worker.endpointsOf(scope);
  await worker.endpointsOf(scope);
  t.is(worker.reads, 2, 'read again under the new token, then kept');
  worker.clear();
  await worker.endpointsOf(scope);
  t.is(worker.reads, 3);
  now += 10_000;
  await worker.endpointsOf(scope);
  t.is(worker.reads, 4, 'kept for maxAgeMs at most');
});

test('with Redis unreachable every event reads MongoDB, and nothing is kept', async (t) => {
  const scope = { project: uniqueName('dir-down'), livemode: false };
  const a = endpointOf(scope, 'a');
  await stack.mongo.collections.webhookEndpoints.insertOne(a);
  const down = createRedis('redis://127.0.0.1:1', 'failFast', 'test-down');
  t.teardown(() => down.disconnect());
  const worker = new EndpointDirectory({ redis: down, prefix: stack.config.queuePrefix, collections: stack.mongo.collections, now: Date.now });
  t.deepEqual(ids(await worker.endpointsOf(scope)), [`${a._id}:enabled`]);
  t.deepEqual(ids(await worker.endpointsOf(scope)), [`${a._id}:enabled`]);
  t.is(worker.reads, 2);
});
