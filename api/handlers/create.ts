/**
 * The path of every request that changes something (a create, or a mutation of an
 * existing object): idempotency key → lookup → validate → admission → lock → enqueue
 * with the pre-generated id → wait for the worker's result → answer with its exact
 * bytes. Admission (api/admission.ts) refuses at once a create the queue could not
 * serve before the wait below gives up: nothing is locked, enqueued or recorded.
 */
import type { JobsOptions, Queue } from 'bullmq';
import { errors } from '../../common/errors.js';
import { idempotentJobId } from '../../common/idempotency.js';
import type { IdKind } from '../../common/ids.js';
import { requestQueue, type CreateResultMessage, type RequestJobBase, type RequestJobData, type RequestJobName } from '../../common/jobs.js';
import type { AppDeps, Ctx } from '../context.js';
import type { BodyEncoding } from '../schemas/fields.js';
import type { IdempotencyStore } from '../idempotency/store.js';
import type { KeyedRequest } from '../idempotency/keyed-request.js';
import type { Replay } from '../idempotency/replay-cache.js';
import { baseUrlOf, sendJson } from '../respond.js';
import { parseIdempotencyKey } from '../schemas/idempotency-key.js';
import { rejectQuery } from '../schemas/query.js';

/** Every create job: retried on infrastructure faults until it completes. */
export const CREATE_JOB_OPTIONS: JobsOptions = {
  attempts: 1000,
  backoff: { type: 'capped' },
  removeOnComplete: { age: 3600, count: 1000 },
  removeOnFail: { age: 7 * 24 * 3600 },
};

export interface CreateSpec<N extends RequestJobName, Input> {
  jobName: N;
  /** The job is removed from Redis once it completes (a keyed one always is). */
  removeOnComplete?: boolean;
  /** A create's new object id; a mutation (no `idKind`) takes the request's id as its own. */
  idKind?: IdKind;
  /** After validation, before the lock: a mutation's check that its object exists in the caller's scope (404). */
  precheck?: () => Promise<void>;
  /**
   * Throws an ApiError on bad input; runs only when there is nothing to replay.
   * `now` (unix seconds) is the request's one clock reading, also its `created`: a
   * default computed from it (expires_at) agrees with `created` to the second.
   */
  validate: (body: Record<string, unknown>, encoding: BodyEncoding, now: number) => Input;
  /**
   * Once the key is locked (nothing to replay, nothing in flight), just before the
   * job is enqueued: what the job needs that must not be in its data (a confirm's
   * phone number). A throw answers the request as a failed enqueue does.
   */
  beforeEnqueue?: () => Promise<void>;
  jobData: (base: RequestJobBase, input: Input) => RequestJobData<N>;
}

export type CreateHandler = <N extends RequestJobName, Input>(ctx: Ctx, spec: CreateSpec<N, Input>) => Promise<void>;

export function createHandler(deps: AppDeps, idempotency: IdempotencyStore): CreateHandler {
  return async (ctx, spec) => {
    const key = ctx.state.key!;
    const body = ctx.state.body ?? {};
    const encoding = ctx.state.bodyEncoding ?? 'json';
    const idempotencyKey = parseIdempotencyKey(ctx.headers['idempotency-key']);
    let keyed: KeyedRequest | null = null;
    if (idempotencyKey !== null) {
      keyed = idempotency.describe(key, idempotencyKey, ctx.method, ctx.path, body, encoding);
      const found = await idempotency.lookup(keyed);
      if (found.kind === 'replay') return sendReplay(ctx, found.replay);
    }

    rejectQuery(ctx.querystring);
    const now = Math.floor(deps.now() / 1000);
    const input = spec.validate(body, encoding, now);

    // Before the process has its results subscription, a result could be missed.
    if (deps.started && !deps.started()) throw errors.serviceUnavailable();
    // Before any read of MongoDB: a request refused for load must add none.
    const refusal = deps.admission?.refusal(key) ?? null;
    if (refusal !== null) throw errors.serviceUnavailable(refusal);
    await spec.precheck?.();

    let token: string | null = null;
    if (keyed) {
      const locked = await idempotency.lock(keyed);
      if ('replay' in locked) return sendReplay(ctx, locked.replay);
      token = locked.token;
    }

    const id = spec.idKind ? deps.ids.next(spec.idKind) : ctx.state.requestId;
    const jobId = keyed ? idempotentJobId(keyed.info.scopeHash) : id;
    const data = spec.jobData(
      {
        id,
        project: key.project,
        livemode: key.livemode,
        created: now,
        requestId: ctx.state.requestId,
        baseUrl: baseUrlOf(deps.config, ctx),
        idempotency: keyed ? keyed.info : null,
      },
      input,
    );

    // A keyed job is removed once it completes: the durable record answers from then
    // on, and a completed job left in Redis would swallow the next use of an expired key.
    const options = keyed || spec.removeOnComplete ? { ...CREATE_JOB_OPTIONS, jobId, removeOnComplete: true } : { ...CREATE_JOB_OPTIONS, jobId };
    // The endpoint test goes to the delivery machinery's queue, first in line there
    // (deliveries waiting for slots must not make the caller's wait time out).
    const toWebhooks = requestQueue(spec.jobName) === 'webhooks';
    const queue = toWebhooks ? deps.queues.webhooks : deps.queues.creates;
    const jobOptions = toWebhooks ? { ...options, lifo: true } : options;
    // The name and data agree by CreateSpec's types; the queue is the name's own.
    const enqueue = () => (queue as unknown as Queue).add(spec.jobName, data, jobOptions);
    // Run when the results' subscription is back after Redis went away: the answer may
    // have been published meanwhile (the worker also caches a keyed one), or the job
    // lost with Redis's data. Enqueued again under its id, it is idempotent.
    const recheck = async (): Promise<CreateResultMessage | null> => {
      if (keyed) {
        const late = await idempotency.lookupCached(keyed);
        if (late) return { jobId, fingerprint: keyed.info.fingerprint, status: late.status, body: late.body, replayed: late.madeBy !== id };
      }
      if ((await queue.getJobState(jobId)) === 'unknown') await enqueue();
      return null;
    };
    const waiting = deps.results.register(jobId, recheck);
    try {
      await spec.beforeEnqueue?.();
      await enqueue();
    } catch (err) {
      waiting.cancel();
      if (keyed && token) await idempotency.release(keyed, token);
      throw err;
    }

    const result = await waiting.result(deps.config.createTimeoutMs);
    if (result) {
      // A success has replaced the lock with its record; a refusal frees the key for a retry.
      if (keyed && token && result.status !== 200) await idempotency.release(keyed, token);
      // The key's job may be another request's (this one retried after a timeout with another body).
      if (keyed && !idempotency.answers(keyed, result.fingerprint)) throw errors.idempotencyKeyReused();
      // The answer of another request's job with this key (it ran, or ran again after
      // Redis lost its answer, while this one waited) is a replay for this request.
      const replayed = result.replayed === true || (result.requestId !== undefined && result.requestId !== ctx.state.requestId);
      if (replayed) ctx.set('Idempotent-Replayed', 'true');
      // This request's own answer, just recorded: kept, so that its replays to this
      // process read nothing from MongoDB (a client that lost the answer retries at once).
      if (keyed && result.status === 200 && !replayed) idempotency.keepAnswer(keyed, { status: result.status, body: result.body });
      sendJson(ctx, result.body, result.status);
      return;
    }
    // No answer in time. The job goes on and records its result; free the key so a
    // retry attaches to the same job (same job id) instead of getting 409. The worker
    // caches the result in Redis as it publishes it: a missed message is found there,
    // without a read of MongoDB (which, under load, is what is slow).
    if (keyed && token) {
      const late = await idempotency.lookupCached(keyed).catch(() => null);
      await idempotency.release(keyed, token);
      if (late) {
        // Another request's answer (this one retried after a timeout): a replay.
        if (late.madeBy !== id) ctx.set('Idempotent-Replayed', 'true');
        return sendJson(ctx, late.body, late.status);
      }
    }
    throw errors.processingTimeout();
  };
}

function sendReplay(ctx: Ctx, replay: Replay): void {
  ctx.set('Idempotent-Replayed', 'true');
  sendJson(ctx, replay.body, replay.status);
}
