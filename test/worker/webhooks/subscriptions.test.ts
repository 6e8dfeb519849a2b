/**
 * The hint of which event types a scope's endpoints may want (worker/webhooks/
 * subscriptions.ts), on a real Redis and FerretDB: what it answers from the set, what
 * it completes from MongoDB, and that it never answers "no" for a subscription
 * MongoDB holds.
 */
import test from 'ava';
import type { WebhookEndpointDoc } from '../../../common/documents.js';
import { markScopeHooked, scopeMayWant } from '../../../worker/webhooks/subscriptions.js';
import { openStack, type Stack } from '../../helpers/in-process.js';
import { uniqueName } from '../../helpers/service.js';

const CREATED = 'payment_intent.created';
const SUCCEEDED = 'payment_intent.succeeded';

let stack: Stack;
test.before(async () => {
  stack = await openStack();
});
test.after.always(async () => {
  await stack?.close();
});

const prefix = () => stack.config.queuePrefix;
const wants = (scope: { project: string; livemode: boolean }, type: string) =>
  scopeMayWant(stack.redis, prefix(), stack.mongo.collections, scope, type);

function endpoint(scope: { project: string; livemode: boolean }, enabled_events: string[]): WebhookEndpointDoc {
  return {
    _id: uniqueName('we'),
    ...scope,
    url: 'https://example.test/hook',
    enabled_events,
    description: null,
    metadata: [],
    status: 'enabled',
    secret: 'whsec_test',
    created: 0,
    failing_since: null,
    disabled_reason: null,
  };
}

test('a scope without endpoints wants nothing, and MongoDB is asked once', async (t) => {
  const scope = { project: uniqueName('none'), livemode: false };
  t.false(await wants(scope, CREATED));
  // Had the answer been read from MongoDB again, this endpoint would be seen: it is not.
  await stack.mongo.collections.webhookEndpoints.insertOne(endpoint(scope, [CREATED]));
  t.false(await wants(scope, CREATED), 'the completed hint answers (an endpoint is always marked before its insert)');
});

test('marked types are wanted, others not; "*" wants everything', async (t) => {
  const scope = { project: uniqueName('marked'), livemode: false };
  t.false(await wants(scope, CREATED));
  await markScopeHooked(stack.redis, prefix(), scope, [CREATED]);
  t.true(await wants(scope, CREATED));
  t.false(await wants(scope, SUCCEEDED));
  await markScopeHooked(stack.redis, prefix(), scope, ['*']);
  t.true(await wants(scope, SUCCEEDED));
  t.false(await wants({ ...scope, livemode: true }, CREATED), 'live mode is a scope of its own');
});

test('a set not yet completed from MongoDB (Redis lost it, or only a create wrote it) is completed first', async (t) => {
  const scope = { project: uniqueName('lost'), livemode: false };
  await stack.mongo.collections.webhookEndpoints.insertOne(endpoint(scope, [SUCCEEDED]));
  // Only a later endpoint create has written since Redis lost the set.
  await markScopeHooked(stack.redis, prefix(), scope, [CREATED]);
  t.true(await wants(scope, SUCCEEDED), 'the subscription in MongoDB counts');
  t.true(await wants(scope, CREATED));
  t.false(await wants(scope, 'payment_intent.canceled'));
});
