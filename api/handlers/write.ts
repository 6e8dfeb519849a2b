/**
 * The path of every request that changes something (a create, or a mutation of an
 * existing object), in three steps: begin (the idempotency key's recorded answer, or
 * a ticket) → run (validate → admission → claim the key → enqueue with the
 * pre-generated id → wait for the worker's result) → settle (the result becomes the
 * answer, sent with its exact bytes). The protocol of the key lives in the ticket
 * (../idempotency/store.ts). Admission (api/admission.ts) refuses at once a create
 * the queue could not serve before the wait gives up, and test mode's daily quota
 * (api/test-quota.ts) a create past it: nothing is locked, enqueued or recorded.
 */
import type { JobsOptions, Queue } from 'bullmq';
import { errors } from '../../common/errors.js';
import type { IdKind } from '../../common/ids.js';
import { requestQueue, type WriteResultMessage, type RequestJobBase, type RequestJobData, type RequestJobName } from '../../common/jobs.js';
import { matchedRoute, type AppDeps, type Ctx } from '../context.js';
import type { BodyEncoding } from '../schemas/fields.js';
import type { SentRequest } from '../idempotency/replay-cache.js';
import type { Answer, IdempotencyStore, Own, Ticket } from '../idempotency/store.js';
import { baseUrlOf, sendJson } from '../respond.js';
import { parseIdempotencyKey } from '../schemas/idempotency-key.js';
import { rejectQuery } from '../schemas/query.js';
import { testQuotaRefusal } from '../test-quota.js';

/** Every create job: retried on infrastructure faults until it completes. */
export const CREATE_JOB_OPTIONS: JobsOptions = {
  attempts: 1000,
  backoff: { type: 'capped' },
  removeOnComplete: { age: 3600, count: 1000 },
  removeOnFail: { age: 7 * 24 * 3600 },
};

export interface WriteSpec<N extends RequestJobName, Input> {
  jobName: N;
  /** The job is removed from Redis once it completes (a keyed one always is). */
  removeOnComplete?: boolean;
  /** A create's new object id; a mutation (no `idKind`) takes the request's id as its own. */
  idKind?: IdKind;
  /** How many new objects a create makes, for test mode's daily quota (../test-quota.ts): 1 unless it says (a payout batch: itself and its items). */
  objects?: (input: Input) => number;
  /** After validation, before the lock: a mutation's check that its object exists in the caller's scope (404). */
  precheck?: (input: Input) => Promise<void>;
  /**
   * The existing object this write changes, for the cap of writes in flight per
   * object (`OBJECT_WRITES_IN_FLIGHT`, DESIGN section 20): a mutation's path id by
   * default; a refund's payment intent; null for a write with a guard of its own.
   */
  object?: (input: Input) => string | null;
  /**
   * Throws an ApiError on bad input; runs only when there is nothing to replay.
   * `now` (unix seconds) is the request's one clock reading, also its `created`: a
   * default computed from it (expires_at) agrees with `created` to the second.
   */
  validate: (body: Record<string, unknown>, encoding: BodyEncoding, now: number) => Input;
  /** A create answered 200 with this request's own new object (not a replay of another's). */
  created?: (objectId: string) => void;
  /** The job's data; async where part of it is sealed (a confirm's phone number). */
  jobData: (base: RequestJobBase, input: Input) => RequestJobData<N> | Promise<RequestJobData<N>>;
}

export type WriteHandler = <N extends RequestJobName, Input>(ctx: Ctx, spec: WriteSpec<N, Input>) => Promise<void>;

export function writeHandler(deps: AppDeps, idempotency: IdempotencyStore): WriteHandler {
  return async (ctx, spec) => {
    const key = ctx.state.key!;
    const body = ctx.state.body ?? {};
    const encoding = ctx.state.bodyEncoding ?? 'json';

    // 1. Begin: the key's recorded answer to replay, or this request's ticket.
    const begun = await idempotency.begin(key, parseIdempotencyKey(ctx.req.headersDistinct['idempotency-key']), ctx.method, ctx.path, body, encoding, sentRequest(ctx));
    if ('replay' in begun) return sendAnswer(ctx, { ...begun.replay, replayed: true });
    const { ticket } = begun;

    // 2. Run: check the request, take the key, enqueue the job and wait for its result.
    rejectQuery(ctx.querystring);
    const now = Math.floor(deps.now() / 1000);
    const input = spec.validate(body, encoding, now);
    // Before the process has its results subscription, a result could be missed.
    if (deps.started && !deps.started()) throw errors.serviceUnavailable();
    // Before any read of MongoDB: a request refused for load must add none.
    const refusal = deps.admission?.refusal(key) ?? null;
    if (refusal !== null && !(await retriesQueuedJob(deps, spec, ticket))) throw errors.serviceUnavailable(refusal);
    // A new object of test mode counts against its project's day (../test-quota.ts).
    const overQuota = spec.idKind ? await testQuotaRefusal(deps, key, spec.objects?.(input) ?? 1) : null;
    if (overQuota !== null && !(await retriesQueuedJob(deps, spec, ticket))) throw overQuota;
    // At most OBJECT_WRITES_IN_FLIGHT writes of one object at once: more would only wait
    // for its lock. Before any read of MongoDB, so a refused one costs one Redis round trip.
    const object = spec.object ? spec.object(input) : spec.idKind ? null : ((ctx.params?.id as string | undefined) ?? null);
    const slot = object && deps.objectWrites ? await deps.objectWrites.take(key, object) : null;
    if (slot === false) throw errors.lockTimeout();
    try {
      await spec.precheck?.(input);
      const claimed = await ticket.claim();
      if (claimed) return sendAnswer(ctx, { ...claimed, replayed: true });
      const own = { requestId: ctx.state.requestId, objectId: spec.idKind ? deps.ids.next(spec.idKind) : ctx.state.requestId };
      const result = await runJob(deps, ctx, spec, ticket, own, input, now);

      // 3. Settle: the job's result (or its absence) becomes this request's answer.
      const answer = await ticket.settle(result, own);
      if (spec.idKind && answer.status === 200 && !answer.replayed) spec.created?.(own.objectId);
      sendAnswer(ctx, answer);
    } finally {
      if (slot) await slot.release();
    }
  };
}

/** Enqueues the request's job under its pre-generated id and waits for its result: null when none came in time. */
async function runJob<N extends RequestJobName, Input>(
  deps: AppDeps,
  ctx: Ctx,
  spec: WriteSpec<N, Input>,
  ticket: Ticket,
  own: Own,
  input: Input,
  now: number,
): Promise<WriteResultMessage | null> {
  const id = own.objectId;
  const jobId = ticket.jobId(id);
  const data = await spec.jobData(
    {
      id,
      project: ctx.state.key!.project,
      livemode: ctx.state.key!.livemode,
      created: now,
      requestId: ctx.state.requestId,
      baseUrl: baseUrlOf(deps.config, ctx),
      idempotency: ticket.idempotency,
    },
    input,
  );

  // A keyed job is removed once it completes: the durable record answers from then
  // on, and a completed job left in Redis would swallow the next use of an expired key.
  const options = ticket.idempotency || spec.removeOnComplete ? { ...CREATE_JOB_OPTIONS, jobId, removeOnComplete: true } : { ...CREATE_JOB_OPTIONS, jobId };
  // The endpoint test goes to the delivery machinery's queue, first in line there
  // (deliveries waiting for slots must not make the caller's wait time out).
  const queue = queueOf(deps, spec);
  const jobOptions = queue === deps.queues.webhooks ? { ...options, lifo: true } : options;
  // The name and data agree by WriteSpec's types; the queue is the name's own.
  const enqueue = () => (queue as unknown as Queue).add(spec.jobName, data, jobOptions);
  // Run when the results' subscription is back after Redis went away: the answer may
  // have been published meanwhile (the worker also caches a keyed one), or the job
  // lost with Redis's data. Enqueued again under its id, it is idempotent.
  const recheck = async (): Promise<WriteResultMessage | null> => {
    const late = await ticket.recorded(own);
    if (late) return late;
    if ((await queue.getJobState(jobId)) === 'unknown') await enqueue();
    return null;
  };
  const waiting = deps.results.register(jobId, recheck);
  try {
    await enqueue();
  } catch (err) {
    waiting.cancel();
    await ticket.abandon();
    throw err;
  }
  return waiting.result(deps.config.writeTimeoutMs);
}

function queueOf<N extends RequestJobName, Input>(deps: AppDeps, spec: WriteSpec<N, Input>) {
  return requestQueue(spec.jobName) === 'webhooks' ? deps.queues.webhooks : deps.queues.writes;
}

/**
 * Whether a keyed request retries a job still queued: its first request got 503
 * `processing_timeout` and freed the key, and the job goes on. The retry waits for
 * that job and adds nothing to the backlog, so admission does not refuse it; it gets
 * the job's answer, or `processing_timeout` again.
 */
async function retriesQueuedJob<N extends RequestJobName, Input>(deps: AppDeps, spec: WriteSpec<N, Input>, ticket: Ticket): Promise<boolean> {
  if (!ticket.idempotency) return false;
  const state = await (queueOf(deps, spec) as unknown as Queue).getJobState(ticket.jobId('')).catch(() => 'unknown');
  return ['waiting', 'active', 'delayed', 'prioritized', 'waiting-children'].includes(state);
}

/** The request as it was read, for the replays before routing; none before its body was read. */
function sentRequest(ctx: Ctx): SentRequest | undefined {
  const text = ctx.state.bodyText;
  const route = matchedRoute(ctx);
  if (text === undefined || route === undefined) return undefined;
  return { method: ctx.method, path: ctx.path, contentType: ctx.get('Content-Type'), text, route };
}

export function sendAnswer(ctx: Ctx, answer: Answer): void {
  if (answer.replayed) ctx.set('Idempotent-Replayed', 'true');
  // A worker's 409 (`lock_timeout`): retry shortly.
  if (answer.status === 409) ctx.set('Retry-After', '1');
  sendJson(ctx, answer.body, answer.status);
}
