/**
 * The sweepers' walks over the real store (worker/sweep-walk.ts and its sources): the
 * classes read from indexes, page by page (a store that serves filters from indexes),
 * and from one read per pass (the local stack's store), visit the same work in the same
 * order, pass after pass; and the outbox sweeper re-enqueues one project's lost
 * delivery from behind another's 1,100 pending entries, in one pass.
 */
import test from 'ava';
import { Queue } from 'bullmq';
import type { OutboxDoc, PaymentIntentDoc, RefundDoc, WebhookEndpointDoc } from '../../../common/documents.js';
import { deliveryJobId } from '../../../common/events.js';
import { IdGenerator } from '../../../common/ids.js';
import { JOBS, QUEUES, type TypedQueue } from '../../../common/jobs.js';
import { createLogger } from '../../../common/logger.js';
import { intentClasses, type SweepIntentsDeps } from '../../../worker/processors/sweep-intents.js';
import { refundClasses, type SweepRefundsDeps } from '../../../worker/processors/sweep-refunds.js';
import { outboxClasses, sweepEvents } from '../../../worker/processors/sweep-events.js';
import { walkFair, type WalkClass, type WalkState } from '../../../worker/sweep-walk.js';
import { PendingEvents } from '../../../worker/webhooks/pending-events.js';
import { openStack, type Stack } from '../../helpers/in-process.js';
import { uniqueName } from '../../helpers/service.js';

let stack: Stack;
test.before(async () => {
  stack = await openStack();
});
test.after.always(async () => {
  await stack?.close();
});

const NOW_MS = Date.UTC(2026, 10, 30, 12);
const NOW = NOW_MS / 1000;

/** `passes` passes of `budget` visits each: the visits' ids, pass by pass. */
async function walkAll(classes: WalkClass<{ _id: string }>[], budget: number, passes: number): Promise<string[][]> {
  const log: string[] = [];
  let state: WalkState = {};
  const store = { load: async () => structuredClone(state), save: async (s: WalkState) => void (state = structuredClone(s)) };
  const logged = classes.map((cls) => ({ ...cls, visit: async (item: { _id: string }) => void log.push(`${cls.name} ${item._id}`) }));
  const done: string[][] = [];
  for (let pass = 0; pass < passes; pass++) {
    const start = log.length;
    await walkFair(logged as WalkClass<unknown>[], store, { budgetMs: budget, clock: () => log.length - start });
    done.push(log.slice(start));
  }
  return done;
}

/** The ids visited, each once, sorted. */
function distinct(passes: string[][]): string[] {
  return [...new Set(passes.flat().map((line) => line.split(' ')[1]!))].sort();
}

test('intents: the indexed pages and the one read walk the same intents with a step ahead, in the same order, over passes', async (t) => {
  const projects = [uniqueName('a'), uniqueName('b'), uniqueName('c')];
  const docs: Array<Partial<PaymentIntentDoc>> = [];
  let n = 0;
  for (const [p, project] of projects.entries()) {
    for (const livemode of [true, false]) {
      for (const status of ['new', 'requires_action', 'processing', 'succeeded'] as const) {
        // Ties on expires_at (ordered by _id then), past and future expiries.
        for (let i = 0; i < 3 + p * 4; i++) {
          const expiresAt = NOW + [-60, 0, 3600, 3600, 86_400][i % 5]!;
          docs.push({ _id: `pi_sweep${String(n++).padStart(6, '0')}${project}`, project, livemode, status, expires_at: expiresAt, history: [], created_event: '' });
        }
      }
    }
  }
  await stack.mongo.collections.paymentIntents.insertMany(docs.reverse() as PaymentIntentDoc[]);
  const deps = (queriesUseIndexes: boolean) => ({ collections: stack.mongo.collections, redis: stack.redis, prefix: stack.config.queuePrefix, queriesUseIndexes }) as unknown as SweepIntentsDeps;
  const ours = (classes: WalkClass<{ _id: string }>[]) => classes.map((cls) => ({ ...cls, scopes: async () => (await cls.scopes()).filter((p) => projects.includes(p)) }));

  const indexed = await walkAll(ours(intentClasses(deps(true), NOW_MS) as never), 10, 40);
  const snapshot = await walkAll(ours(intentClasses(deps(false), NOW_MS) as never), 10, 40);
  t.deepEqual(snapshot, indexed);
  const expected = docs.filter((d) => d.status === 'requires_action' || d.status === 'processing' || (d.status === 'new' && d.expires_at! <= NOW));
  t.deepEqual(distinct(indexed), expected.map((d) => d._id!).sort(), 'every intent with a step ahead, and nothing else');
  // The first pass: the classes in order, each one's first round one intent of each project, soonest expiry first.
  const classes = ['live:new', 'live:processing', 'live:requires_action', 'test:new', 'test:processing', 'test:requires_action'];
  t.deepEqual([...new Set(indexed[0]!.map((line) => line.split(' ')[0]))], classes, 'every class moves on in every pass');
  const first = indexed[0]!.slice(0, 3).map((line) => docs.find((d) => d._id === line.split(' ')[1])!);
  t.deepEqual(first.map((d) => d.project).sort(), [...projects].sort(), 'the projects take turns');
  t.true(first.every((d) => d.expires_at === NOW - 60), 'the most overdue first');
});

test('refunds: the indexed pages and the one read walk the same held intents and due pending refunds, in the same order', async (t) => {
  const projects = [uniqueName('a'), uniqueName('b')];
  const intents: Array<Partial<PaymentIntentDoc>> = [];
  const refunds: Array<Partial<RefundDoc>> = [];
  let n = 0;
  for (const [p, project] of projects.entries()) {
    for (const livemode of [true, false]) {
      for (let i = 0; i < 4 + p * 5; i++) {
        intents.push({ _id: `pi_held${String(n++).padStart(6, '0')}${project}`, project, livemode, status: 'succeeded', refunds_pending: i % 3, refunds: [], created_event: '' });
        refunds.push({
          _id: `re_sweep${String(n++).padStart(6, '0')}${project}`,
          project,
          livemode,
          status: i % 4 === 3 ? 'succeeded' : 'pending',
          created: NOW - [600, 600, 5, 1200][i % 4]!,
          polls: 1,
          payment_intent: 'pi_x',
        });
      }
    }
  }
  await stack.mongo.collections.paymentIntents.insertMany(intents as PaymentIntentDoc[]);
  await stack.mongo.collections.refunds.insertMany(refunds.reverse() as RefundDoc[]);
  const deps = (queriesUseIndexes: boolean) => ({ collections: stack.mongo.collections, redis: stack.redis, prefix: stack.config.queuePrefix, queriesUseIndexes }) as unknown as SweepRefundsDeps;
  const ours = (classes: WalkClass<unknown>[]) =>
    classes.map((cls) => ({ ...cls, scopes: async () => (await cls.scopes()).filter((p) => projects.includes(p)) })) as unknown as WalkClass<{ _id: string }>[];

  const indexed = await walkAll(ours(refundClasses(deps(true), NOW_MS, 60_000).classes), 5, 20);
  const snapshot = await walkAll(ours(refundClasses(deps(false), NOW_MS, 60_000).classes), 5, 20);
  t.deepEqual(snapshot, indexed);
  const expected = [...intents.filter((d) => d.refunds_pending! > 0), ...refunds.filter((r) => r.status === 'pending' && r.created! <= NOW - 60)].map((d) => d._id!);
  t.deepEqual(distinct(indexed), expected.sort());
});

test('outbox: the indexed pages and the one read walk the same stale entries, in the same order', async (t) => {
  const projects = [uniqueName('a'), uniqueName('b'), uniqueName('c')];
  const entries: OutboxDoc[] = [];
  let n = 0;
  for (const [p, project] of projects.entries()) {
    for (const livemode of [false, true]) {
      for (let i = 0; i < 2 + p * 6; i++) {
        entries.push({ _id: `evt_sweep${String(n++).padStart(6, '0')}${project}`, project, livemode, type: 'payment_intent.created', json: '{}', created_ms: NOW_MS - [90_000, 1000, 90_000, 40_000][i % 4]! });
      }
    }
  }
  await stack.mongo.collections.outbox.insertMany(entries);
  const noVisit = async () => undefined;
  const ours = (classes: WalkClass<OutboxDoc>[]) =>
    classes.map((cls) => ({ ...cls, scopes: async () => (await cls.scopes()).filter((p) => projects.includes(p)) })) as unknown as WalkClass<{ _id: string }>[];
  const options = { nowMs: NOW_MS, ageMs: 30_000 };
  const indexed = await walkAll(ours(outboxClasses({ collections: stack.mongo.collections, queriesUseIndexes: true }, options, noVisit)), 6, 30);
  const snapshot = await walkAll(ours(outboxClasses({ collections: stack.mongo.collections, queriesUseIndexes: false }, options, noVisit)), 6, 30);
  t.deepEqual(snapshot, indexed);
  const expected = entries.filter((e) => e.created_ms < NOW_MS - 30_000);
  t.deepEqual(distinct(indexed), expected.map((e) => e._id).sort());
  t.is(indexed.flat()[0]!.split(' ')[0], 'live', 'live first');
});

for (const queriesUseIndexes of [false, true]) {
  test.serial(`outbox (${queriesUseIndexes ? 'indexed pages' : 'one read'}): a lost delivery of one project is re-enqueued from behind 1,100 pending entries of another, in one pass`, async (t) => {
    const { collections } = stack.mongo;
    const prefix = stack.config.queuePrefix;
    await collections.outbox.deleteMany({});
    const webhooks = new Queue(QUEUES.webhooks, { connection: { url: stack.config.redisUrl }, prefix });
    const logger = createLogger('silent', 'test');
    const pending = new PendingEvents({ redis: stack.redis, prefix, collections, logger });
    t.teardown(async () => {
      await webhooks.obliterate({ force: true });
      await webhooks.close();
      await pending.close();
    });
    const createdMs = Date.now() - 3600_000;
    const ids = new IdGenerator(() => createdMs - 60_000);
    const endpoint = (project: string): WebhookEndpointDoc => ({
      _id: ids.next('webhook_endpoint'),
      project,
      livemode: false,
      url: 'https://example.com/hook',
      enabled_events: ['*'],
      description: null,
      metadata: [],
      status: 'enabled',
      secret: 'whsec_x',
      created: Math.floor(createdMs / 1000) - 60,
      failing_since: null,
      disabled_reason: null,
    });
    const [busy, quiet] = [endpoint(uniqueName('busy')), endpoint(uniqueName('quiet'))];
    await collections.webhookEndpoints.insertMany([busy, quiet]);
    const events = new IdGenerator(() => createdMs);
    // 1,100 older entries whose deliveries wait for their retries, as a failing endpoint leaves them.
    const parked: OutboxDoc[] = Array.from({ length: 1100 }, () => ({ _id: events.next('event'), project: busy.project, livemode: false, type: 'payment_intent.created', json: '{}', created_ms: createdMs }));
    await collections.outbox.insertMany(parked);
    await webhooks.addBulk(parked.map((e) => ({ name: JOBS.deliverWebhook, data: { eventId: e._id, endpointId: busy._id }, opts: { jobId: deliveryJobId(e._id, busy._id), delay: 3600_000 } })));
    // One newer entry of another project, its delivery lost.
    const lost: OutboxDoc = { _id: events.next('event'), project: quiet.project, livemode: false, type: 'payment_intent.created', json: '{}', created_ms: createdMs + 1000 };
    await collections.outbox.insertOne(lost);

    const swept = await sweepEvents(
      { collections, webhooksQueue: webhooks as unknown as TypedQueue<'webhooks'>, config: stack.config.webhooks, pending, redis: stack.redis, prefix, queriesUseIndexes },
      { nowMs: Date.now(), ageMs: 30_000, budgetMs: 60_000 },
    );
    t.like(swept, { requeued: 1, released: 0, pending: 1101, complete: true });
    t.is(await webhooks.getJobState(deliveryJobId(lost._id, quiet._id)), 'waiting', 'the lost delivery is enqueued again');

    // With a budget of one visit per pass, the projects take turns: the lost one is in the first round.
    await webhooks.remove(deliveryJobId(lost._id, quiet._id));
    await stack.redis.del(`${prefix}:sweep-walk:events`);
    // A clock that moves one step per visit (each asks for its one delivery's job): a budget of two visits.
    let visits = 0;
    const counting = new Proxy(webhooks, {
      get(target, prop) {
        if (prop === 'getJobState') return (id: string) => (visits++, target.getJobState(id));
        const value = Reflect.get(target, prop) as unknown;
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const first = await sweepEvents(
      { collections, webhooksQueue: counting as unknown as TypedQueue<'webhooks'>, config: stack.config.webhooks, pending, redis: stack.redis, prefix, queriesUseIndexes },
      { nowMs: Date.now(), ageMs: 30_000, budgetMs: 2, clock: () => visits },
    );
    t.is(visits, 2, 'one visit of each project');
    t.like(first, { complete: false });
    t.is(await webhooks.getJobState(deliveryJobId(lost._id, quiet._id)), 'waiting', 'enqueued again in the first round');
  });
}
