/**
 * First attempts made in place (worker/webhooks/first-attempt.ts), on a real Redis,
 * FerretDB and receiver: a delivered one leaves no job and releases the outbox entry;
 * a failed one leaves the rest of the chain to a delayed job numbered from 2; while
 * deliveries yield, most wait in the process, in order; one that may not go first
 * (deliveries of its endpoint waiting, or past the bound of those held) becomes a
 * job untouched; shutdown sends those held to jobs and waits for those in flight.
 */
import test from 'ava';
import { Queue } from 'bullmq';
import { Webhook } from 'standardwebhooks';
import type { WebhookEndpointDoc } from '../../../common/documents.js';
import { deliveryJobId } from '../../../common/events.js';
import { IdGenerator } from '../../../common/ids.js';
import { QUEUES, type TypedQueue } from '../../../common/jobs.js';
import { createLogger } from '../../../common/logger.js';
import { InsertBatcher } from '../../../worker/group-commit.js';
import { dispatchEvent, type DispatchDeps } from '../../../worker/processors/dispatch-event.js';
import { EndpointDirectory } from '../../../worker/webhooks/endpoint-directory.js';
import { sweepEvents } from '../../../worker/processors/sweep-events.js';
import { WriteGate } from '../../../worker/write-gate.js';
import { endpointSlots } from '../../../worker/webhooks/endpoint-slots.js';
import { firstAttemptBoundMs, firstAttemptKey, FirstAttempts, priorAttempts, type FirstAttemptDeps } from '../../../worker/webhooks/first-attempt.js';
import { PendingEvents } from '../../../worker/webhooks/pending-events.js';
import { openStack, type Stack } from '../../helpers/in-process.js';
import { Receiver } from '../../helpers/receiver.js';
import { uniqueName, until } from '../../helpers/service.js';

const SECRET = `whsec_${Buffer.from('first-attempt-test-secret-0123456').toString('base64')}`;
const FIRST_RETRY_MS = 60_000;
const ids = new IdGenerator(Date.now);

let stack: Stack;
let receiver: Receiver;
let queue: Queue;
test.before(async () => {
  stack = await openStack({ WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_RETRY_SCHEDULE_MS: `${FIRST_RETRY_MS},120000`, WEBHOOK_JITTER: '0', WEBHOOK_TIMEOUT_MS: '300' });
  receiver = await Receiver.start();
  queue = new Queue(QUEUES.webhooks, { connection: { url: stack.config.redisUrl }, prefix: stack.config.queuePrefix });
});
test.after.always(async () => {
  await queue?.close();
  await receiver?.close();
  await stack?.close();
});

function setUp(t: import('ava').ExecutionContext, overrides: Partial<FirstAttemptDeps> = {}) {
  const logger = createLogger('silent', 'test');
  const collections = stack.mongo.collections;
  const prefix = stack.config.queuePrefix;
  const pending = new PendingEvents({ redis: stack.redis, prefix, collections, logger });
  const slots = endpointSlots(stack.redis, { prefix, limit: 2, leaseMs: 3000 });
  const deps: FirstAttemptDeps = {
    collections,
    config: stack.config.webhooks,
    logger,
    now: Date.now,
    ids: new IdGenerator(Date.now),
    slots,
    redis: stack.redis,
    prefix,
    attempts: new InsertBatcher({ maxDocs: 1, waitMs: 0, gate: new WriteGate(4) }),
    pending,
    webhooksQueue: queue as unknown as TypedQueue<'webhooks'>,
    limit: 10,
    open: () => true,
    ...overrides,
  };
  const first = new FirstAttempts(deps);
  t.teardown(async () => {
    await first.drain();
    await pending.close();
  });
  return { first, pending, slots, deps };
}

/** An endpoint and an event of its scope, with the event's outbox entry and pending set, as the fan-out leaves them. */
async function eventFor(pending: PendingEvents, path: string) {
  const project = uniqueName('p');
  const endpoint: WebhookEndpointDoc = {
    _id: ids.next('webhook_endpoint'),
    project,
    livemode: false,
    url: receiver.url(path),
    enabled_events: ['payment_intent.created'],
    description: null,
    metadata: [],
    status: 'enabled',
    secret: SECRET,
    created: Math.floor(Date.now() / 1000),
    failing_since: null,
    disabled_reason: null,
  };
  await stack.mongo.collections.webhookEndpoints.insertOne(endpoint);
  const id = ids.next('event');
  const json = JSON.stringify({ id, object: 'event', type: 'payment_intent.created', data: { object: { id: 'pi_1' } } });
  const event = { id, type: 'payment_intent.created', project, livemode: false, json };
  await stack.mongo.collections.outbox.insertOne({ _id: id, project, livemode: false, type: event.type, json, created_ms: Date.now() });
  await pending.expect(id, [endpoint._id]);
  return { endpoint, event };
}

const attemptsOf = (eventId: string) => stack.mongo.collections.webhookAttempts.find({ event_id: eventId }).toArray();
const outboxHas = async (eventId: string) => (await stack.mongo.collections.outbox.findOne({ _id: eventId })) !== null;

test('a delivered first attempt is signed, recorded as attempt 1, leaves no job, and releases the outbox entry', async (t) => {
  const { first, pending } = setUp(t);
  const path = `/${uniqueName('ok')}`;
  const { endpoint, event } = await eventFor(pending, path);

  t.deepEqual(first.take(event, [endpoint]), [], 'taken in place');
  const [received] = await receiver.waitFor(path);
  t.is(received!.body.toString('utf8'), event.json, 'the event JSON, byte for byte');
  t.notThrows(() => new Webhook(SECRET).verify(received!.body.toString('utf8'), received!.headers as Record<string, string>));
  await first.drain();
  const attempts = await until('the attempt record', async () => ((await attemptsOf(event.id)).length === 1 ? attemptsOf(event.id) : undefined));
  t.like(attempts[0], { endpoint_id: endpoint._id, attempt: 1, succeeded: true, http_status: 200 });
  t.is(await queue.getJobState(deliveryJobId(event.id, endpoint._id)), 'unknown', 'no delivery job');
  await pending.flush();
  t.false(await outboxHas(event.id), 'the entry is released');
});

test('a failed first attempt leaves the chain to a job numbered from 2, delayed by the first step of the schedule', async (t) => {
  const { first, pending } = setUp(t);
  const path = `/${uniqueName('fails')}`;
  receiver.on(path, () => ({ status: 503, body: 'busy' }));
  const { endpoint, event } = await eventFor(pending, path);

  first.take(event, [endpoint]);
  await receiver.waitFor(path);
  await first.drain();
  const job = await until('the delivery job', () => queue.getJob(deliveryJobId(event.id, endpoint._id)));
  t.deepEqual(job.data, { eventId: event.id, endpointId: endpoint._id, prior: 1 });
  t.is(priorAttempts(job), 1);
  t.is(await job.getState(), 'delayed');
  t.is(job.delay, FIRST_RETRY_MS, 'the schedule after attempt 1');
  t.is(job.opts.attempts, 2, 'three attempts in all: one made, two left');
  t.like((await attemptsOf(event.id))[0], { attempt: 1, succeeded: false, http_status: 503 });
  await pending.flush();
  t.true(await outboxHas(event.id), 'a chain still going keeps its entry');
});

test('a receiver that hangs past the timeout is a failed attempt, and shutdown waits for it', async (t) => {
  const { first, pending } = setUp(t);
  const path = `/${uniqueName('hangs')}`;
  receiver.on(path, () => ({ hang: true }));
  const { endpoint, event } = await eventFor(pending, path);

  first.take(event, [endpoint]);
  t.is(first.size, 1);
  await first.drain();
  t.is(first.size, 0);
  // Drained means over: its job is already there.
  const job = await queue.getJob(deliveryJobId(event.id, endpoint._id));
  t.like(job?.data, { prior: 1 });
  t.like((await attemptsOf(event.id))[0], { attempt: 1, succeeded: false, error: 'timeout' });
});

test('while deliveries yield, a tenth of the limit is in flight and the rest wait in order, up to a bound in bytes; then all go', async (t) => {
  let open = false;
  const path = `/${uniqueName('yielding')}`;
  receiver.on(path, () => ({ hang: true }));
  const probe = setUp(t);
  const sample = await eventFor(probe.pending, path);
  const { first, pending } = setUp(t, { open: () => open, limit: 10, heldMaxBytes: 3 * sample.event.json.length });
  const made = [];
  for (let i = 0; i < 5; i++) made.push(await eventFor(pending, path));
  const left = made.map(({ event, endpoint }) => first.take(event, [endpoint]));
  t.deepEqual(left.slice(0, 4), [[], [], [], []], 'taken: one in flight, three held');
  t.deepEqual(left[4], [made[4]!.endpoint], 'past the bound: left to a job');
  t.is(first.size, 1);
  t.is(first.waiting, 3);

  open = true;
  await until('the held attempts to start', () => (first.waiting === 0 ? true : undefined), 5000);
  await receiver.waitFor(path, 4);
  const order = receiver.received(path).map((r) => JSON.parse(r.body.toString('utf8')).id as string);
  t.is(order[0], made[0]!.event.id, 'the one in flight first');
  // Started together once open, in the order taken; they may reach the receiver in another.
  t.deepEqual(order.slice(1).sort(), made.slice(1, 4).map(({ event }) => event.id).sort());
});

test('shutdown sends the attempts still held to delivery jobs, and waits for those in flight', async (t) => {
  const path = `/${uniqueName('closing')}`;
  receiver.on(path, () => ({ hang: true }));
  const { first, pending } = setUp(t, { open: () => false, limit: 10 });
  const made = [];
  for (let i = 0; i < 3; i++) made.push(await eventFor(pending, path));
  for (const { event, endpoint } of made) first.take(event, [endpoint]);
  t.is(first.size, 1);
  t.is(first.waiting, 2);
  await first.drain();
  const jobs = await Promise.all(made.map(({ event, endpoint }) => queue.getJob(deliveryJobId(event.id, endpoint._id))));
  t.like(jobs[0]?.data, { prior: 1 }, 'the attempt in flight failed (timeout): its chain goes on from attempt 2');
  t.deepEqual(jobs[1]?.data, { eventId: made[1]!.event.id, endpointId: made[1]!.endpoint._id }, 'held: attempt 1 is the job\'s');
  t.deepEqual(jobs[2]?.data, { eventId: made[2]!.event.id, endpointId: made[2]!.endpoint._id });
});

test('no first attempt ahead of deliveries waiting for the endpoint', async (t) => {
  const path = `/${uniqueName('queued')}`;
  const open = setUp(t);
  const b = await eventFor(open.pending, path);
  await open.slots.park(b.endpoint._id, 'an-earlier-delivery');
  t.deepEqual(open.first.take(b.event, [b.endpoint]), []);
  await open.first.drain();
  const job = await until('the delivery job', () => queue.getJob(deliveryJobId(b.event.id, b.endpoint._id)));
  t.deepEqual(job.data, { eventId: b.event.id, endpointId: b.endpoint._id }, 'nothing attempted: the job makes attempt 1');
  t.is(job.opts.attempts, 3);
  t.is(receiver.received(path).length, 0, 'nothing was sent');
});

// Serial (run before the others): its sweep reads the whole outbox.
test.serial('an event recorded again (a re-run job) is not delivered again where its first attempt delivered, and the sweeper counts that as done', async (t) => {
  const { first, pending, deps } = setUp(t);
  const path = `/${uniqueName('once')}`;
  const { endpoint, event } = await eventFor(pending, path);
  const dispatch: DispatchDeps = {
    collections: deps.collections,
    webhooksQueue: deps.webhooksQueue,
    config: deps.config,
    pending,
    redis: deps.redis,
    prefix: deps.prefix,
    first,
    directory: new EndpointDirectory({ redis: deps.redis, prefix: deps.prefix, collections: deps.collections, now: Date.now }),
  };
  const data = { eventId: event.id, project: event.project, livemode: false, type: event.type, createdMs: Date.now() };

  await dispatchEvent(dispatch, data, event.json);
  await receiver.waitFor(path);
  await first.drain();
  await pending.flush();
  t.false(await outboxHas(event.id));

  // The job runs again: its outbox entry is written again, and fanned out again.
  await stack.mongo.collections.outbox.insertOne({ _id: event.id, project: event.project, livemode: false, type: event.type, json: event.json, created_ms: data.createdMs });
  await dispatchEvent(dispatch, data, event.json);
  // The dispatch job's way (no JSON: jobs only) adds nothing either.
  await dispatchEvent(dispatch, data);
  await first.drain();
  await pending.flush();
  t.false(await outboxHas(event.id), 'the entry written again is released');
  t.is(await queue.getJobState(deliveryJobId(event.id, endpoint._id)), 'unknown', 'no delivery job');

  // An entry left behind (its release lost with Redis): the sweep releases it, sending nothing.
  await stack.mongo.collections.outbox.insertOne({ _id: event.id, project: event.project, livemode: false, type: event.type, json: event.json, created_ms: data.createdMs });
  const swept = await sweepEvents({ ...dispatch, queriesUseIndexes: false }, { nowMs: Date.now() + 1, ageMs: 0, budgetMs: 5000 });
  t.like(swept, { requeued: 0, released: 1 });
  t.false(await outboxHas(event.id));
  t.is(receiver.received(path).length, 1, 'delivered once');
});

test.serial('the sweeper leaves a first attempt that is running alone, and re-enqueues one whose process died (its mark older than any attempt runs)', async (t) => {
  const { first, pending, deps } = setUp(t);
  const path = `/${uniqueName('running')}`;
  receiver.on(path, () => ({ hang: true }));
  const { endpoint, event } = await eventFor(pending, path);
  const sweep = () => sweepEvents({ ...deps, queriesUseIndexes: false }, { nowMs: Date.now() + 1, ageMs: 0, budgetMs: 5000 });

  // The POST is out and no job exists yet: the sweep sends nothing beside it.
  first.take(event, [endpoint]);
  await receiver.waitFor(path);
  t.like(await sweep(), { requeued: 0, released: 0 });
  await first.drain();
  const job = await queue.getJob(deliveryJobId(event.id, endpoint._id));
  t.like(job?.data, { prior: 1 }, 'the chain goes on in the failed attempt\'s job, on its schedule');
  t.is(await job!.getState(), 'delayed');

  // Redis loses that job: the chain was the job's, so the sweep sends it again at once.
  await job!.remove();
  t.like(await sweep(), { requeued: 1 });
  const requeued = await queue.getJob(deliveryJobId(event.id, endpoint._id));
  t.truthy(requeued, 'its delivery re-enqueued');

  // A process that died mid-attempt leaves only its mark: young, the attempt may still
  // be running and nothing is sent; older than any attempt runs, it is sent again.
  await requeued!.remove();
  const mark = firstAttemptKey(deps.prefix, event.id, endpoint._id);
  await stack.redis.set(mark, `started:${Date.now()}`);
  t.like(await sweep(), { requeued: 0 });
  await stack.redis.set(mark, `started:${Date.now() - firstAttemptBoundMs(deps.config.timeoutMs) - 1000}`);
  t.like(await sweep(), { requeued: 1 });
  t.truthy(await queue.getJob(deliveryJobId(event.id, endpoint._id)));
});
