/**
 * Recovery reaches everyone (DESIGN section 20; security review M3): one project's
 * 1,100 parked test intents, or 1,100 pending refunds, cannot hide another tenant's
 * stranded payment or refund from the sweepers. The sweepers used to read the same
 * first 1,000 documents every time; they now walk all due work with a cursor, the
 * projects taking turns (worker/sweep-walk.ts).
 *
 * Fair is counted in passes, never in seconds: how long a pass waits for its turn on the
 * maintenance queue, or takes, is the machine's. A pass that has its budget visits
 * every project of a class in its first round; one whose budget the store's read has
 * eaten (a busy machine) still visits each class once, the projects taking turns
 * across passes (worker/sweep-walk.ts). With two projects in the class, the lost step
 * is back by the end of the second pass that found it due, whatever the other queued.
 *
 * The parked work is written straight into MongoDB (creating 1,100 intents through the
 * api takes minutes on this machine): copies of a real intent, or refund, that the
 * service made, each with its own ids, as the service would have written it.
 */
import test from 'ava';
import { Queue } from 'bullmq';
import type { Job } from 'bullmq';
import type { PaymentIntentDoc, RefundDoc } from '../../common/documents.js';
import { IdGenerator } from '../../common/ids.js';
import { JOBS, QUEUES } from '../../common/jobs.js';
import { Service, until, uniqueName } from '../helpers/service.js';
import { confirm, createIntent, waitForStatus } from '../helpers/payment-intent-lifecycle.js';
import { paidIntent, refund, waitForRefund } from '../helpers/refunds.js';

const PARKED = 1100;
const INTERVAL_MS = 2000;
/** A pass's time on this machine's store (a few scans of 1,100 intents), and the poll's. */
const SLACK_MS = 5000;
const ids = new IdGenerator(Date.now);

/** `doc` again under a new id: every mention of its id (its client secret, its created event) follows. */
function copyOf<T extends { _id: string }>(doc: T, id: string, tweak: (copy: T) => void = () => undefined): T {
  const copy = JSON.parse(JSON.stringify(doc).replaceAll(doc._id, id)) as T;
  tweak(copy);
  return copy;
}

/** The sweeps' results, when each began and ended and how long it took, newest first, from the maintenance queue (each kept by `removeOnComplete`). */
async function sweepResults(maintenance: Queue, name: string): Promise<Array<Record<string, unknown>>> {
  const jobs = (await maintenance.getJobs(['completed'], 0, 200)) as Job[];
  return jobs
    .filter((job) => job.name === name)
    .map((job) => ({ ...(job.returnvalue as Record<string, unknown>), processedOn: job.processedOn, finishedOn: job.finishedOn, ms: (job.finishedOn ?? 0) - (job.processedOn ?? 0) }))
    .sort((a, b) => (b.processedOn ?? 0) - (a.processedOn ?? 0));
}

/** The projects of the class the lost step is in: each pass visits one of them at least, in turn. */
const PROJECTS = 2;

/**
 * The end of the PROJECTS-th pass of sweep `name` that began at `fromMs` or later,
 * once it has ended, with the passes up to it (for the log).
 */
async function turnsEnded(maintenance: Queue, name: string, fromMs: number): Promise<{ endedAt: number; passes: Array<Record<string, unknown>> }> {
  return until(`${PROJECTS} ${name} passes begun after the step was lost and due to end`, async () => {
    const passes = (await sweepResults(maintenance, name)).filter((pass) => (pass.processedOn as number) >= fromMs).reverse();
    const last = passes[PROJECTS - 1];
    return last ? { endedAt: last.finishedOn as number, passes: passes.slice(0, PROJECTS) } : undefined;
  }, 60_000);
}

const describe = (passes: Array<Record<string, unknown>>, fromMs: number) =>
  passes.map((pass) => `began +${(pass.processedOn as number) - fromMs} ms, took ${pass.ms as number} ms, complete ${String(pass.complete)}`).join('; ');

test.serial("1,100 parked test intents of one project do not hide another tenant's stranded payment: its lost step is back within the projects' turns, two passes", async (t) => {
  const service = await Service.start({
    workers: 1,
    env: { INTENTS_SWEEP_INTERVAL_MS: String(INTERVAL_MS), SIMULATOR_APPROVAL_DELAY_MS: '3000', SIMULATOR_PROCESSING_DELAY_MS: '100' },
  });
  t.teardown(() => service.stop());
  const db = await service.db();
  const intents = db.collection<PaymentIntentDoc>('payment_intents');

  // The attacker's project: Wave confirms wait in requires_action until expires_at, 29 days away.
  const attacker = await service.issueKey(uniqueName('parked'));
  const expiresAt = Math.floor(Date.now() / 1000) + 29 * 24 * 3600;
  const first = await createIntent(service, attacker, { amount: 500, currency: 'xof', expires_at: expiresAt });
  const confirmed = await confirm(service, attacker, first.id, { operator: 'wave', phone_number: '+221771234567' });
  t.is(confirmed.status, 200, confirmed.text);
  t.is(confirmed.body.status, 'requires_action');
  const real = (await intents.findOne({ _id: first.id })) as PaymentIntentDoc;
  t.is(real.status, 'requires_action');
  const token = real.payment?.checkout_token;
  const parked = Array.from({ length: PARKED - 1 }, () =>
    copyOf(real, ids.next('payment_intent'), (copy) => {
      if (token && copy.payment) copy.payment.checkout_token = `${token.slice(0, -8)}${uniqueName('').slice(-8)}`;
    }),
  );
  await intents.insertMany(parked);
  t.is(await intents.countDocuments({ status: 'requires_action', project: real.project }), PARKED);

  // Another tenant's payment, after all of them in the collection's natural order.
  const tenant = await service.issueKey(uniqueName('tenant'));
  const pi = await createIntent(service, tenant, { amount: 700, currency: 'xof' });
  const res = await confirm(service, tenant, pi.id, { operator: 'mtn_momo', phone_number: '+2250500000000' });
  t.is(res.status, 200, res.text);
  t.is(res.body.status, 'requires_action');

  const queue = new Queue(QUEUES.intents, { connection: { url: service.env.REDIS_URL }, prefix: service.prefix });
  const maintenance = new Queue(QUEUES.maintenance, { connection: { url: service.env.REDIS_URL }, prefix: service.prefix });
  t.teardown(async () => {
    await queue.close();
    await maintenance.close();
  });
  const payerJob = `outcome-${pi.id}-1-payer`;
  await until('the payer step to wait in Redis', async () => {
    const found = await queue.getJob(payerJob);
    return found && (await found.getState()) === 'delayed' ? found : undefined;
  });
  // Redis loses the payer step (as the review's reproduction: Queue.remove of its id).
  const lostAt = Date.now();
  t.is(await queue.remove(payerJob), 1);

  const back = await until('the sweeper to put the payer step back', async () => {
    const found = await queue.getJob(payerJob);
    return found && found.timestamp >= lostAt ? found : undefined;
  }, INTERVAL_MS + SLACK_MS + 20_000);
  const tookMs = back.timestamp - lostAt;
  t.log(`the payer step was back ${tookMs} ms after it was lost`);
  // Due as soon as it is lost: fair means back within the projects' turns.
  const turns = await turnsEnded(maintenance, JOBS.sweepIntents, lostAt);
  t.log(`the passes after the loss: ${describe(turns.passes, lostAt)}`);
  t.true(back.timestamp <= turns.endedAt, `back after ${tookMs} ms: later than the end of the ${PROJECTS}nd pass begun after the loss`);
  const paid = await waitForStatus(service, tenant, pi.id, 'succeeded', 3000 + SLACK_MS + 10_000);
  t.is(paid.status, 'succeeded');

  // Every parked intent is walked too: each copy was written without its expiry job, and the sweeper adds it.
  const parkedIds = new Set([real._id, ...parked.map((doc) => doc._id)]);
  await until('the sweeper to reach every parked intent', async () => {
    const delayed = await queue.getJobs(['delayed'], 0, 10_000);
    const expiries = delayed.filter((job) => job.id?.startsWith('expire-') && parkedIds.has(job.id.slice('expire-'.length)));
    return expiries.length === PARKED ? true : undefined;
  }, 60_000);
  t.log(`intents sweeps (newest first): ${JSON.stringify((await sweepResults(maintenance, JOBS.sweepIntents)).slice(0, 5))}`);
  t.is(await intents.countDocuments({ status: 'requires_action', project: real.project }), PARKED, 'the parked intents still wait, untouched');
});

test.serial("1,100 pending refunds of one project do not hide another tenant's refund whose step Redis lost: back within the projects' turns once due", async (t) => {
  const service = await Service.start({
    workers: 1,
    env: { INTENTS_SWEEP_INTERVAL_MS: String(INTERVAL_MS), SIMULATOR_APPROVAL_DELAY_MS: '100', SIMULATOR_PROCESSING_DELAY_MS: '3000' },
  });
  t.teardown(() => service.stop());
  const db = await service.db();
  const refunds = db.collection<RefundDoc>('refunds');
  const queue = new Queue(QUEUES.intents, { connection: { url: service.env.REDIS_URL }, prefix: service.prefix });
  const maintenance = new Queue(QUEUES.maintenance, { connection: { url: service.env.REDIS_URL }, prefix: service.prefix });
  t.teardown(async () => {
    await queue.close();
    await maintenance.close();
  });

  // The attacker's project: a slow refund (a number ending in 021), pending with its next poll far off.
  const attacker = await service.issueKey(uniqueName('parked'));
  const paidA = await paidIntent(service, attacker, { amount: 100_000, suffix: '021' });
  const slow = await refund(service, attacker, { payment_intent: paidA.id, amount: 10 });
  t.is(slow.status, 200, slow.text);
  const real = await until('the slow refund to wait for its next poll', async () => {
    const doc = await refunds.findOne({ _id: slow.body.id as string });
    return doc && doc.status === 'pending' && doc.polls >= 1 ? doc : undefined;
  });
  // 1,100 more like it, made an hour ago, each with its next poll waiting in Redis, as a slow operator leaves them.
  const created = Math.floor(Date.now() / 1000) - 3600;
  const parked = Array.from({ length: PARKED }, () => copyOf(real, ids.next('refund'), (copy) => (copy.created = created)));
  await refunds.insertMany(parked);
  await queue.addBulk(
    parked.map((doc) => ({
      name: JOBS.processRefund,
      data: { refund: doc._id, paymentIntent: doc.payment_intent, project: doc.project, livemode: doc.livemode, poll: doc.polls },
      opts: { jobId: `refund-${doc._id}-${doc.polls}`, delay: 3600_000 },
    })),
  );

  // Another tenant's refund, after all of them in the collection's natural order; its next poll is lost.
  const tenant = await service.issueKey(uniqueName('tenant'));
  const paidB = await paidIntent(service, tenant, { amount: 1000 });
  const res = await refund(service, tenant, { payment_intent: paidB.id, amount: 400 });
  t.is(res.status, 200, res.text);
  const jobId = `refund-${res.body.id}-1`;
  await until('the poll to wait in Redis', async () => ((await queue.getJob(jobId)) ? true : undefined));
  const lostAt = Date.now();
  t.is(await queue.remove(jobId), 1, 'the delayed poll was there to remove');

  // Due once older than the sweep's grace (an interval), then re-driven by the next pass.
  const back = await until('the sweeper to schedule the poll again', async () => {
    const found = await queue.getJob(jobId);
    return found && found.timestamp >= lostAt ? found : undefined;
  }, 2 * INTERVAL_MS + SLACK_MS + 10_000);
  const tookMs = back.timestamp - lostAt;
  t.log(`the poll was back ${tookMs} ms after it was lost`);
  // Due once older than the sweep's grace (an interval), then back within the projects' turns.
  const dueFrom = Math.max(lostAt, (res.body.created as number) * 1000 + INTERVAL_MS);
  const turns = await turnsEnded(maintenance, JOBS.sweepRefunds, dueFrom);
  t.log(`the passes once it was due: ${describe(turns.passes, dueFrom)}`);
  t.true(back.timestamp <= turns.endedAt, `back after ${tookMs} ms: later than the end of the ${PROJECTS}nd pass begun once it was due`);
  const done = await waitForRefund(service, tenant, res.body.id as string, 'succeeded', 30_000);
  t.is(done.amount, 400);
  t.is(await refunds.countDocuments({ status: 'pending', project: real.project }), PARKED + 1, "the attacker's refunds still wait for their polls");
});
