/**
 * The payouts' requests (DESIGN.md section 17): create, batch and cancel, answered
 * through ../processors/mutation.ts like every mutation (a keyed request replays its
 * first answer, refusals included). What they promise:
 *
 * - **One payout per request.** The payout's id is the api's, and the request's
 *   identity (its idempotency key's, else its own id) is claimed in MongoDB with it
 *   (`event_keys`): a second job of the same key, after Redis lost the first, finds
 *   the first's payout and answers it. Where the first died before its payout (or
 *   its batch) was inserted, the second makes it under the first's id: a hold the
 *   first posted, or the items it inserted, are that payout's, never doubled.
 * - **Held before it exists.** A payout made alone holds its amount from the balance
 *   (keyed by its id) before its document is inserted: short of balance, 400
 *   `balance_insufficient` and nothing is left behind. A batch's items hold when each
 *   is sent (./process.ts), so the batch is accepted at once.
 * - **A batch is its items, once.** Its payouts' ids come with the job, and the
 *   request's claim names them; they are inserted together (a retry inserts none
 *   twice), then the batch, then one step job each (ids derived from the payouts). A
 *   second job of the key, after Redis lost a first that died among its inserts,
 *   inserts the first's items that are missing, under the first's ids.
 * - **Cancel or send, never both** (./record.ts): a cancel claims the payout's
 *   commitment; one already being sent answers 400 `payout_unexpected_state`.
 */
import type { Job } from 'bullmq';
import { MongoBulkWriteError } from 'mongodb';
import { errorBody } from '../../common/errors.js';
import type { CancelPayoutData, CreatePayoutBatchData, CreatePayoutData, PayoutPublicInput, WriteJobResult } from '../../common/jobs.js';
import { JOBS } from '../../common/jobs.js';
import { countPayouts, payoutStepJobId, presentPayout, presentPayoutBatch, type PayoutBatchDoc, type PayoutDoc } from '../../common/payouts.js';
import type { Seal } from '../../common/seal.js';
import { isDuplicateKey } from '../../common/mongo.js';
import { claimEvent } from '../event-identity.js';
import { mutationId, notFound, runMutation, type Answer, type MutationDeps } from '../processors/mutation.js';
import { schedulePayoutStep, type ProcessPayoutDeps } from './process.js';
import { commit, endPayout, ensurePayout, payoutLockKey, recordCreated, scheduleBatchCheck, withPayout } from './record.js';
import { withRecordLock } from '../record-lock.js';

export type PayoutDeps = ProcessPayoutDeps & MutationDeps & { destinations: Seal };

function newPayout(data: { created: number; project: string; livemode: boolean }, id: string, input: PayoutPublicInput, phone: string, batch: string | null, eventId: string): PayoutDoc {
  return {
    _id: id,
    project: data.project,
    livemode: data.livemode,
    amount: input.amount,
    currency: input.currency,
    operator: input.operator,
    account: input.account,
    phone_number: phone,
    phone_masked: input.phone_masked,
    name: input.name,
    status: 'pending',
    failure_code: null,
    description: input.description,
    metadata: input.metadata,
    batch,
    reference: input.reference,
    created: data.created,
    arrival_date: null,
    held: false,
    requested: false,
    operator_reference: null,
    steps: 0,
    ev: { created: eventId },
  };
}

/** The payout as its create answered it, whatever happened to it since. */
function createdAnswer(doc: PayoutDoc): string {
  return JSON.stringify(presentPayout({ ...doc, status: 'pending', failure_code: null, arrival_date: null }));
}

/**
 * The id this request's object has: its own, or the one an earlier job of its key
 * claimed (Redis forgot that job, and the key's answer with it). Claimed means
 * possibly held under that id already: a payout is made under the first claim's id,
 * so a hold its job posted before dying is this payout's, never a second one.
 */
async function claimRequest(deps: PayoutDeps, data: CreatePayoutData | CreatePayoutBatchData, kind: string): Promise<string> {
  const key = requestKey(data, kind);
  if (await claimEvent(deps, key, data.id)) return data.id;
  const taken = await deps.collections.eventKeys.findOne({ _id: key });
  return taken?.event ?? data.id;
}

/**
 * A batch's request claimed as `claimRequest` does, the claim naming its items' ids
 * too: the batch's id, and its items' ids, in order (this job's, or those of the
 * earlier job that claimed it; null when that claim, older, named none).
 */
async function claimBatchRequest(deps: PayoutDeps, data: CreatePayoutBatchData): Promise<{ owner: string; items: string[] | null; again: boolean }> {
  const key = requestKey(data, 'payout_batch.create');
  try {
    await deps.inserts.insert(deps.collections.eventKeys, { _id: key, event: data.id, items: data.payouts });
    return { owner: data.id, items: data.payouts, again: false };
  } catch (err) {
    if (!isDuplicateKey(err)) throw err;
  }
  const taken = await deps.collections.eventKeys.findOne({ _id: key });
  if (!taken || taken.event === data.id) return { owner: data.id, items: data.payouts, again: true };
  return { owner: taken.event, items: taken.items?.length === data.payouts.length ? taken.items : null, again: true };
}

function requestKey(data: CreatePayoutData | CreatePayoutBatchData, kind: string): string {
  return `${mutationId(data).id}:${kind}`;
}

export function createPayout(deps: PayoutDeps, job: Job<CreatePayoutData>): Promise<WriteJobResult> {
  const data = job.data;
  return runMutation(deps, String(job.id), data, async (): Promise<Answer> => {
    const owner = await claimRequest(deps, data, 'payout.create');
    const existing = await deps.collections.payouts.findOne({ _id: owner });
    if (existing && owner !== data.id) return { status: 200, body: createdAnswer(existing), replayed: true };
    const [phone] = JSON.parse(await deps.destinations.open(data.id, data.sealed)) as [string];
    // A new id, when the first's hold was released: the request's claim names it first, so a retry after this one finds it.
    const renamed = async (id: string) => void (await deps.collections.eventKeys.updateOne({ _id: requestKey(data, 'payout.create') }, { $set: { event: id } }));
    const stored = existing ?? (await holdAndInsert(deps, newPayout(data, owner, data.input, phone, null, deps.ids.next('event')), renamed));
    if (stored === 'insufficient') {
      const detail = {
        code: 'balance_insufficient' as const,
        message: `Insufficient available balance in ${data.input.currency} for a payout of ${data.input.amount}: see GET /v1/balance. Nothing was sent.`,
        param: 'amount',
      };
      return { status: 400, body: errorBody(detail, data.requestId, data.baseUrl) };
    }
    await recordCreated(deps, stored);
    if (stored.steps === 0) await schedulePayoutStep(deps, stored, 0, 0);
    return { status: 200, body: createdAnswer(stored) };
  });
}

/**
 * Holds the payout's amount, then inserts it, under the payout's lock (the stranded
 * holds' sweep takes it too, ./stranded.ts). A hold an earlier run left, released
 * since as stranded, spends the id: the payout is made under a new one, held anew,
 * once the request's claim names it (`renamed`).
 */
async function holdAndInsert(deps: PayoutDeps, doc: PayoutDoc, renamed: (id: string) => Promise<void>): Promise<PayoutDoc | 'insufficient'> {
  const made = await withRecordLock(deps.redis, payoutLockKey(deps.prefix, doc._id), async () => {
    const held = await deps.balance.hold(doc);
    if (held === 'insufficient') return held;
    if (held === 'held_before' && (await deps.balance.released(doc))) return null;
    return ensurePayout(deps, { ...doc, held: true });
  });
  if (made) return made;
  const id = deps.ids.next('payout');
  await renamed(id);
  return holdAndInsert(deps, { ...doc, _id: id }, renamed);
}

export function createPayoutBatch(deps: PayoutDeps, job: Job<CreatePayoutBatchData>): Promise<WriteJobResult> {
  const data = job.data;
  return runMutation(deps, String(job.id), data, async (): Promise<Answer> => {
    const { owner, items, again } = await claimBatchRequest(deps, data);
    const scope = { project: data.project, livemode: data.livemode };
    if (owner !== data.id) {
      const made = await deps.collections.payoutBatches.findOne({ _id: owner });
      if (made) return { status: 200, body: JSON.stringify(presentPayoutBatch(made, countPayouts(Array.from({ length: made.total }, () => 'pending' as const)))), replayed: true };
    }
    // An earlier job of this key that died before its batch, after inserting all, some
    // or none of its items: the batch is made of its items, under its ids, the missing
    // ones inserted now (the request's body is the same: its key says so). Never a
    // second set of payouts, even beside that job still running.
    const earlier = owner !== data.id && !items ? await deps.collections.payouts.find({ batch: owner }).toArray() : [];
    const phones = JSON.parse(await deps.destinations.open(data.id, data.sealed)) as string[];
    const ids = items ?? data.payouts;
    const fresh = ids.map((id, i) => newPayout(data, id, data.input[i]!, phones[i]!, owner, deps.ids.next('event')));
    if (earlier.length === 0) await insertAll(deps, fresh);
    // Those an earlier run inserted are as it wrote them (their events' ids, their steps).
    const docs = earlier.length > 0 ? earlier : again ? await insertedOf(deps, fresh) : fresh;
    const batch: PayoutBatchDoc = {
      _id: owner,
      ...scope,
      status: 'processing',
      total: docs.length,
      created: docs[0]?.created ?? data.created,
      completed_at: null,
      ev: { completed: deps.ids.next('event') },
    };
    await deps.collections.payoutBatches.insertOne(batch).catch((err: unknown) => {
      if (!(err instanceof Error && 'code' in err && (err as { code?: number }).code === 11000)) throw err;
    });
    await deps.intentsQueue.addBulk(
      docs
        .filter((doc) => doc.steps === 0)
        .map((doc) => ({
          name: JOBS.processPayout,
          data: { payout: doc._id, ...scope, step: 0 },
          opts: { jobId: payoutStepJobId(doc._id, 0), attempts: 1000, backoff: { type: 'capped' }, removeOnComplete: true, removeOnFail: 1000 },
        })),
    );
    await scheduleBatchCheck(deps, owner, scope);
    return { status: 200, body: JSON.stringify(presentPayoutBatch(batch, countPayouts(docs.map(() => 'pending' as const)))) };
  });
}

/** The payouts as stored, by `_id` (an earlier job's items, some of them inserted by it). */
async function insertedOf(deps: PayoutDeps, docs: PayoutDoc[]): Promise<PayoutDoc[]> {
  const stored = await Promise.all(docs.map((doc) => deps.collections.payouts.findOne({ _id: doc._id })));
  return stored.map((doc, i) => doc ?? docs[i]!);
}

/** Inserts the batch's payouts together; those an earlier run inserted stay as they are. */
async function insertAll(deps: PayoutDeps, docs: PayoutDoc[]): Promise<void> {
  try {
    await deps.collections.payouts.insertMany(docs, { ordered: false });
  } catch (err) {
    if (!(err instanceof MongoBulkWriteError)) throw err;
    const errors = Array.isArray(err.writeErrors) ? err.writeErrors : [err.writeErrors];
    if (errors.some((e) => e.code !== 11000)) throw err;
  }
}

export function cancelPayout(deps: PayoutDeps, job: Job<CancelPayoutData>): Promise<WriteJobResult> {
  const data = job.data;
  const scope = { project: data.project, livemode: data.livemode };
  return runMutation(deps, String(job.id), data, async (): Promise<Answer> => {
    const refuse = (status: string): Answer => ({
      status: 400,
      body: errorBody(
        { code: 'payout_unexpected_state', message: `You cannot cancel this payout because it has a status of ${status}; only a pending or enqueued payout can be canceled.` },
        data.requestId,
        data.baseUrl,
      ),
    });
    const found = await withPayout(deps, data.target, scope, (doc) => Promise.resolve(doc));
    if (!found) return notFound(data, 'payout');
    const mine = `cancel:${mutationId(data).id}`;
    // This request's earlier run canceled it, or began to: finished, and answered as it stands.
    const claimed = await deps.collections.eventKeys.findOne({ _id: `${data.target}:payout.commit` });
    if (claimed?.event !== mine && found.status !== 'pending' && found.status !== 'enqueued') return refuse(found.status);
    if (!(await commit(deps, data.target, mine))) return refuse(found.status === 'canceled' ? 'canceled' : 'in_transit');
    const ended = await endPayout(deps, data.target, scope, { status: 'canceled' });
    if (!ended) return notFound(data, 'payout');
    if (ended.status !== 'canceled') return refuse(ended.status);
    return { status: 200, body: JSON.stringify(presentPayout(ended)) };
  });
}
