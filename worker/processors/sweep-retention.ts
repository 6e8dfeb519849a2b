/**
 * The retention sweeper (DESIGN section 20, "Storage is bounded"; security review
 * M4): what is old enough is deleted, so that storage follows the traffic of the
 * last weeks and not of all time.
 *
 * - Test mode: payment intents, refunds, events and webhook attempts older than
 *   `TEST_DATA_RETENTION_DAYS`; payouts that ended, completed payout batches, operator
 *   discrepancies and the simulator's late payments as old. An intent's refunds go
 *   with it (its ledger names them), before it: a refund is never left naming an
 *   intent that is gone. A payout still on its way stays until it ends. The
 *   idempotency records, key pointers and answers of an object's requests expire
 *   before the object (config.ts checks the retention is at least their lifetime) and
 *   are deleted by the idempotency sweep.
 * - Both modes: events and webhook attempts older than `EVENT_RETENTION_DAYS`.
 * - Never: live payment intents, refunds, payouts and discrepancies, webhook
 *   endpoints, API keys, and the ledger (balances and their transactions, test mode's
 *   too: a balance is the sum of its transactions).
 *
 * Ids are time-ordered (common/ids.ts), so "older than" is an `_id` bound: every read
 * is `{livemode, _id < bound}`, served by the `livemode_id` indexes on MongoDB
 * (common/mongo.ts), in batches of `BATCH`, each deleted by `_id` alone (one
 * `deleteOne` per document in one unordered bulk write: the local stack's store
 * serves those from its `_id` index, where any other filter would scan). A pass
 * stops when its time (`PASS_BUDGET_MS`) is up, between batches, and says whether it
 * reached the end; the caller runs another one soon when it did not.
 *
 * A deleted intent's token in Redis (common/intent-tokens.ts) is deleted after it, so
 * that no api answers a retrieve from the copy it kept: an intent read before the
 * delete was kept under a token set before it, which goes. A retrieve of a deleted
 * object is a plain 404, and lists skip it. Every step is idempotent: a pass that
 * fails midway leaves what the next one finds again.
 */
import type { Redis } from 'ioredis';
import type { Collection, Filter } from 'mongodb';
import type { RetentionConfig } from '../../common/config.js';
import { ID_PREFIXES, idBodyFloor, type IdKind } from '../../common/ids.js';
import { intentTokenKey } from '../../common/intent-tokens.js';
import type { RetentionPass } from '../../common/jobs.js';
import type { Collections } from '../../common/mongo.js';
import type { PayoutStatus } from '../../common/payouts.js';

/** Documents read, then deleted, at once. */
export const BATCH = 500;

/**
 * How long a pass deletes before it stops and leaves the rest to the next: the
 * maintenance queue runs one job at a time per worker, and the other sweeps (the
 * intents' after a Redis restart) must not wait long behind this one.
 */
export const PASS_BUDGET_MS = 2_000;

export interface RetentionDeps {
  collections: Collections;
  /** Where the intents' tokens are kept. */
  redis: Redis;
  prefix: string;
  retention: Pick<RetentionConfig, 'eventMs' | 'testDataMs'>;
  /** Epoch ms. */
  now: () => number;
}

interface Dated {
  _id: string;
  livemode: boolean;
}

type Counts = RetentionPass['deleted'];

const ENDED_PAYOUTS: PayoutStatus[] = ['paid', 'failed', 'canceled'];

export async function sweepRetention(deps: RetentionDeps, options: { budgetMs?: number; batch?: number } = {}): Promise<RetentionPass> {
  const now = deps.now();
  const deadline = now + (options.budgetMs ?? PASS_BUDGET_MS);
  const batch = options.batch ?? BATCH;
  const c = deps.collections;
  const testBefore = now - deps.retention.testDataMs;
  const eventsBefore = now - deps.retention.eventMs;
  // A test event is due when either retention says so: the later of the two bounds.
  const testEventsBefore = Math.max(testBefore, eventsBefore);
  const deleted: Counts = { payment_intents: 0, refunds: 0, events: 0, webhook_attempts: 0, payouts: 0, payout_batches: 0, operator_discrepancies: 0, simulator_payments: 0 };
  const testObjects = (collection: unknown, kind: IdKind, key: keyof Counts, where?: Record<string, unknown>) => () =>
    sweep(collection as Collection<Dated>, { kind, livemode: false, beforeMs: testBefore }, { batch, deadline, now: deps.now, ...(where ? { where } : {}), count: (n) => (deleted[key] += n) });

  const steps: Array<() => Promise<boolean>> = [
    () =>
      sweep(c.paymentIntents as unknown as Collection<Dated & { refunds?: Array<{ id: string }> }>, { kind: 'payment_intent', livemode: false, beforeMs: testBefore }, {
        batch,
        deadline,
        now: deps.now,
        projection: { _id: 1, livemode: 1, 'refunds.id': 1 },
        // Its refunds first: a pass that stops between the two finds the intent again.
        before: async (intents) => {
          const refunds = intents.flatMap((pi) => (pi.refunds ?? []).map((entry) => entry.id));
          deleted.refunds += await deleteByIds(c.refunds as unknown as Collection<Dated>, refunds);
        },
        after: (intents) => dropTokens(deps, intents.map((pi) => pi._id)),
        count: (n) => (deleted.payment_intents += n),
      }),
    () => sweep(c.refunds as unknown as Collection<Dated>, { kind: 'refund', livemode: false, beforeMs: testBefore }, { batch, deadline, now: deps.now, count: (n) => (deleted.refunds += n) }),
    testObjects(c.payouts, 'payout', 'payouts', { status: { $in: ENDED_PAYOUTS } }),
    testObjects(c.payoutBatches, 'payout_batch', 'payout_batches', { status: 'completed' }),
    testObjects(c.operatorDiscrepancies, 'operator_discrepancy', 'operator_discrepancies'),
    // Named by the intent's attempt (`pi_…:<attempt>`): older than the intents' bound as they are.
    testObjects(c.simulatorPayments, 'payment_intent', 'simulator_payments'),
    () => sweep(c.events as unknown as Collection<Dated>, { kind: 'event', livemode: false, beforeMs: testEventsBefore }, { batch, deadline, now: deps.now, count: (n) => (deleted.events += n) }),
    () => sweep(c.events as unknown as Collection<Dated>, { kind: 'event', livemode: true, beforeMs: eventsBefore }, { batch, deadline, now: deps.now, count: (n) => (deleted.events += n) }),
    () =>
      sweep(c.webhookAttempts as unknown as Collection<Dated>, { kind: 'attempt', livemode: false, beforeMs: testEventsBefore }, { batch, deadline, now: deps.now, count: (n) => (deleted.webhook_attempts += n) }),
    () =>
      sweep(c.webhookAttempts as unknown as Collection<Dated>, { kind: 'attempt', livemode: true, beforeMs: eventsBefore }, { batch, deadline, now: deps.now, count: (n) => (deleted.webhook_attempts += n) }),
  ];
  for (const step of steps) {
    if (!(await step())) return { deleted, done: false };
  }
  return { deleted, done: true };
}

interface Due {
  kind: IdKind;
  livemode: boolean;
  /** Documents made before this moment (epoch ms) are due. */
  beforeMs: number;
}

interface SweepOptions<T extends Dated> {
  batch: number;
  /** Epoch ms: no batch begins after it. */
  deadline: number;
  now: () => number;
  projection?: Record<string, 0 | 1>;
  /** More conditions on a due document (a payout that ended). */
  where?: Record<string, unknown>;
  before?: (docs: T[]) => Promise<unknown>;
  after?: (docs: T[]) => Promise<unknown>;
  count: (deleted: number) => void;
}

/** Deletes the due documents of one collection and mode, batch after batch: true once none is left, false when time ran out first. */
async function sweep<T extends Dated>(collection: Collection<T>, due: Due, options: SweepOptions<T>): Promise<boolean> {
  const bound = `${ID_PREFIXES[due.kind]}_${idBodyFloor(due.beforeMs)}`;
  const filter = { livemode: due.livemode, _id: { $lt: bound }, ...options.where } as unknown as Filter<T>;
  for (;;) {
    if (options.now() >= options.deadline) return false;
    // No sort: the index walks `_id` in order on MongoDB anyway, and the local stack's
    // store, which uses no index for it, would sort every match to give a batch.
    const docs = (await collection.find(filter, { projection: options.projection ?? { _id: 1, livemode: 1 }, limit: options.batch }).toArray()) as T[];
    if (docs.length === 0) return true;
    await options.before?.(docs);
    options.count(await deleteByIds(collection, docs.map((d) => d._id)));
    await options.after?.(docs);
    if (docs.length < options.batch) return true;
  }
}

/** Deletes by `_id` alone, one `deleteOne` each in one unordered bulk write. */
async function deleteByIds<T extends { _id: string }>(collection: Collection<T>, ids: string[]): Promise<number> {
  if (ids.length === 0) return 0;
  const result = await collection.bulkWrite(
    ids.map((id) => ({ deleteOne: { filter: { _id: id } as Filter<T> } })),
    { ordered: false },
  );
  return result.deletedCount;
}

/** One command per key: keys of several intents may live on several nodes of a Redis Cluster. */
async function dropTokens(deps: Pick<RetentionDeps, 'redis' | 'prefix'>, intents: string[]): Promise<void> {
  await Promise.all(intents.map((id) => deps.redis.del(intentTokenKey(deps.prefix, id))));
}
