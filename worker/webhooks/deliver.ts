/**
 * Webhook delivery: one job per (event, endpoint), for the attempts after a first one
 * made in place (first-attempt.ts, which shares `sendAttempt` and `afterAttempt`), or
 * for all of them when there was no room for that. What it promises:
 *
 * - At least once. The job is retried on the configured schedule until the
 *   receiver answers 2xx, the endpoint is disabled, or the schedule is used up. A
 *   worker that dies mid-attempt leaves the job to be recovered as stalled and sent
 *   again, so a receiver may see a delivery twice, never zero times.
 * - The same `webhook-id` (the event id) on every attempt, and the same body: the
 *   event JSON as stored, byte for byte. Each attempt is signed afresh over exactly
 *   the bytes it sends, with its own `webhook-timestamp`.
 * - Only real events, only to their own scope. A job carries ids only; the event is
 *   loaded from MongoDB by id (`loadEvent`), and sent only when it and the endpoint
 *   have the same project and livemode. A job forged through the dashboard or Redis
 *   can at most re-deliver a real event to an endpoint of its own scope.
 * - At most `endpointConcurrency` attempts in flight per endpoint, across workers:
 *   a delivery that finds its endpoint's slots taken waits (delayed, not counted as
 *   an attempt; the longer, the more deliveries wait for that endpoint), so a hanging
 *   receiver cannot hold every slot of a worker. A slot is
 *   held for the POST alone: the reads before it and the record after it do not
 *   count against the receiver's connections. A delivery checks that a slot is free
 *   before it reads anything, and a worker killed mid-POST frees its slot within a
 *   lease of a few seconds (endpoint-slots.ts).
 * - Every attempt that gets an outcome is recorded in `webhook_attempts` (status or
 *   error kind, duration, the first 1 KiB of the response) before the job moves on.
 *   An attempt cut short by the worker's own death has no outcome to record; it is
 *   sent again.
 * - No connection to an address that is not globally routable unicast (loopback,
 *   private, link-local, metadata services...): the address is checked when the
 *   connection is made, after resolution, so DNS rebinding does not get around it.
 *   Test-mode endpoints are exempt only when the operator sets
 *   `WEBHOOK_ALLOW_PRIVATE_TARGETS=true`; live-mode ones never are.
 * - The endpoint is read again before each attempt: once it is disabled, deleted or
 *   no longer subscribed to the event's type, nothing more is sent. A 410 Gone
 *   disables it at once; failing without a single success for `disableAfterMs`
 *   disables it too.
 */
import { DelayedError, UnrecoverableError, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { WebhookConfig } from '../../common/config.js';
import { ALL_EVENTS } from '../../common/events.js';
import type { IdGenerator } from '../../common/ids.js';
import type { DeliverWebhookData } from '../../common/jobs.js';
import type { Logger } from '../../common/logger.js';
import type { WebhookAttemptDoc, WebhookEndpointDoc } from '../../common/documents.js';
import { isDuplicateKey, type Collections } from '../../common/mongo.js';
import { isForbiddenAddress } from '../../common/net.js';
import { retryInfrastructure } from '../../common/retry.js';
import { signingSecrets, webhookHeaders } from '../../common/webhooks/sign.js';
import type { InsertBatcher } from '../group-commit.js';
import { endpointLockKey, withRecordLock } from '../record-lock.js';
import { changingEndpoints } from './endpoint-directory.js';
import type { EndpointSlots } from './endpoint-slots.js';
import { postWebhook, type PostResult } from './http.js';
import { loadEvent } from './load-event.js';
import { redeliveredKey } from './redeliveries.js';
import { DeliveryFailedError, parseRetryAfter } from './retry-policy.js';

export const USER_AGENT = 'payments-service-webhooks/1';
const RESPONSE_BODY_LIMIT = 1024;

export type AttemptError = 'http_error' | 'timeout' | 'connection_error' | 'address_refused' | 'redirect';

export interface DeliverDeps {
  collections: Collections;
  config: WebhookConfig;
  logger: Logger;
  now: () => number;
  ids: IdGenerator;
  slots: EndpointSlots;
  /** Where the endpoints' locks are kept (../record-lock.ts). */
  redis: Redis;
  prefix: string;
  /**
   * Group commit for the attempts' records: every delivery writes one, and on the
   * local stack's store each write is a commit on the database's one writer.
   */
  attempts: InsertBatcher;
}

export type DeliverResult =
  | { delivered: true; attempt: number; http_status: number }
  | { delivered: false; skipped: 'endpoint_deleted' | 'endpoint_disabled' | 'not_subscribed' | 'event_missing' | 'scope_mismatch' | 'redelivered' };

/**
 * How many waiting deliveries of one endpoint may come back to try again, per second,
 * on average. Above the rate of any receiver that makes a backlog form, so no slot
 * stays idle for want of a delivery; far below what the workers can churn.
 */
const WAITERS_BACK_PER_S = 75;

/**
 * How long a delivery whose endpoint has no free slot waits before trying again:
 * 1 to 2 s, longer in proportion when many wait (`waiting` of them, itself included),
 * at most 30 to 60 s.
 */
export function slotWaitMs(waiting: number, random: () => number = Math.random): number {
  const base = Math.min(30_000, Math.max(1000, (waiting * 1000) / WAITERS_BACK_PER_S));
  return Math.round(base * (1 + random()));
}

/** What one attempt came to. */
export interface Outcome {
  http_status: number | null;
  error: AttemptError | null;
  response_body: string | null;
  retryAfterMs: number | null;
  durationMs: number;
}

function outcomeOf(result: PostResult, nowMs: number): Outcome {
  if (result.kind === 'error') {
    return { http_status: null, error: result.error, response_body: null, retryAfterMs: null, durationMs: result.durationMs };
  }
  const status = result.status;
  // The local stack's store refuses NUL in strings; the body is for people to read anyway.
  const body = result.body.toString('utf8').replace(/\u0000/g, '\ufffd');
  const error: AttemptError | null = status >= 200 && status < 300 ? null : status >= 300 && status < 400 ? 'redirect' : 'http_error';
  const retryAfterHeader = result.headers['retry-after'];
  const retryAfterMs = status === 429 || status === 503 ? parseRetryAfter(retryAfterHeader, nowMs) : null;
  return { http_status: status, error, response_body: body, retryAfterMs, durationMs: result.durationMs };
}

/**
 * MongoDB steps of a delivery retry a fault (a lost connection, a locked database)
 * in place, briefly: failing the job instead would spend one of the delivery's
 * scheduled attempts, and after the POST, send the event again.
 */
const STEP_RETRY = { tries: 4, baseMs: 200, capMs: 2000 };

/** A delivery whose endpoint has no free slot asks again this many times, this far apart, before it waits in the queue. */
const SLOT_TRIES = 4;
const SLOT_RETRY_MS = 100;

/** `token` is the worker's lock on the job, needed to move it back to delayed. */
export async function deliverWebhook(deps: DeliverDeps, job: Job<DeliverWebhookData>, token?: string): Promise<DeliverResult> {
  const { endpointId } = job.data;
  const waiter = job.id ?? `${job.data.eventId}:${endpointId}`;
  const wait = async (waiting: number): Promise<never> => {
    await job.moveToDelayed(Date.now() + slotWaitMs(waiting), token);
    throw new DelayedError();
  };
  // Before any read: under a slow receiver most deliveries find the slots taken, and
  // each of those would otherwise read the endpoint and the event for nothing.
  const waiting = await deps.slots.waiting(endpointId, waiter);
  if (waiting > 0) await wait(waiting);
  return attempt(deps, job, async (post) => {
    let slot = await deps.slots.acquire(endpointId, waiter);
    // A slot taken between the check and now is usually free again within a POST.
    for (let tries = 1; !slot && tries < SLOT_TRIES; tries++) {
      await new Promise((resolve) => setTimeout(resolve, SLOT_RETRY_MS));
      slot = await deps.slots.acquire(endpointId, waiter);
    }
    if (!slot) return wait(await deps.slots.park(endpointId, waiter));
    try {
      return await post();
    } finally {
      await slot.release().catch(() => undefined);
    }
  });
}

export type InSlot = <T>(post: () => Promise<T>) => Promise<T>;

async function attempt(deps: DeliverDeps, job: Job<DeliverWebhookData>, inSlot: InSlot): Promise<DeliverResult> {
  const { eventId, endpointId } = job.data;
  const c = deps.collections;
  const endpoint = await retryInfrastructure(() => c.webhookEndpoints.findOne({ _id: endpointId }), STEP_RETRY);
  // A delivery job exists only for an endpoint that existed: missing now means deleted.
  if (!endpoint) {
    deps.logger.info({ event_id: eventId, endpoint_id: endpointId }, 'webhook endpoint deleted: delivery dropped');
    return { delivered: false, skipped: 'endpoint_deleted' };
  }
  if (endpoint.status !== 'enabled') return { delivered: false, skipped: 'endpoint_disabled' };
  const event = await loadEvent(c, eventId);
  if (!event) {
    deps.logger.warn({ event_id: eventId, endpoint_id: endpointId }, 'delivery names no stored event: nothing sent');
    return { delivered: false, skipped: 'event_missing' };
  }
  if (event.project !== endpoint.project || event.livemode !== endpoint.livemode) {
    deps.logger.warn({ event_id: eventId, endpoint_id: endpointId }, 'delivery pairs an event and an endpoint of different scopes: nothing sent');
    return { delivered: false, skipped: 'scope_mismatch' };
  }
  // An update of enabled_events applies to the retries of earlier events too. A
  // redelivery (resend, recover) was asked for this very event: it is sent anyway.
  if (!job.data.redelivery && !subscribes(endpoint, event.type)) {
    deps.logger.info({ event_id: eventId, endpoint_id: endpointId, type: event.type }, 'webhook endpoint no longer subscribed: delivery dropped');
    return { delivered: false, skipped: 'not_subscribed' };
  }
  // Attempts made before this job (a first attempt made in place, first-attempt.ts) count too.
  const attempt = job.attemptsMade + 1 + (job.data.prior ?? 0);
  // A retry of a first chain whose event a resend or a recover has delivered since
  // (../webhooks/redeliveries.ts): the endpoint has it, so the chain ends here.
  if (!job.data.redelivery && attempt > 1 && (await deps.redis.exists(redeliveredKey(deps.prefix, eventId, endpointId))) === 1) {
    deps.logger.info({ event_id: eventId, endpoint_id: endpointId, attempt }, 'webhook redelivered since: retry dropped');
    return { delivered: false, skipped: 'redelivered' };
  }
  const sent = await sendAttempt(deps, endpoint, eventId, event.json, attempt, inSlot);
  return afterAttempt(deps, endpoint, eventId, attempt, sent);
}

/**
 * What an attempt's outcome leads to: delivered (a failure run of the endpoint
 * cleared), or thrown: `DeliveryFailedError` to be retried on the schedule,
 * `UnrecoverableError` when the endpoint is now disabled (410 Gone, or failing for
 * too long). Logs the attempt either way.
 */
export async function afterAttempt(
  deps: DeliverDeps,
  endpoint: WebhookEndpointDoc,
  eventId: string,
  attempt: number,
  { outcome, result }: { outcome: Outcome; result: PostResult },
  /** Logged with the attempt (a first attempt made in place says so). */
  context: Record<string, unknown> = {},
): Promise<DeliverResult> {
  const c = deps.collections;
  const endpointId = endpoint._id;
  const logFields = { event_id: eventId, endpoint_id: endpointId, attempt, ...context, http_status: outcome.http_status, error: outcome.error };
  if (outcome.error === null) {
    // Only an endpoint that was failing has a run to clear: no write on the common path.
    if (endpoint.failing_since !== null) {
      await withEndpointLock(deps, endpoint, () =>
        retryInfrastructure(
          () => c.webhookEndpoints.updateOne({ _id: endpointId, failing_since: { $ne: null } }, { $set: { failing_since: null } }),
          STEP_RETRY,
        ),
      );
    }
    deps.logger.info({ ...logFields, duration_ms: outcome.durationMs }, 'webhook delivered');
    return { delivered: true, attempt, http_status: outcome.http_status as number };
  }

  deps.logger.info(
    { ...logFields, detail: result.kind === 'error' ? result.message : undefined },
    'webhook attempt failed',
  );
  if (outcome.http_status === 410) {
    await withEndpointLock(deps, endpoint, () => disable(c, endpoint, 'gone'));
    deps.logger.warn({ endpoint_id: endpointId }, 'webhook endpoint answered 410 Gone: disabled');
    throw new UnrecoverableError('endpoint answered 410 Gone; it is now disabled');
  }
  if (await withEndpointLock(deps, endpoint, () => failingTooLong(deps, endpoint, deps.now()))) {
    deps.logger.warn({ endpoint_id: endpointId }, 'webhook endpoint failing for too long: disabled');
    throw new UnrecoverableError('endpoint has been failing for too long; it is now disabled');
  }
  const what = outcome.http_status !== null ? `HTTP ${outcome.http_status}` : (outcome.error as string);
  throw new DeliveryFailedError(`attempt ${attempt} failed: ${what}`, outcome.retryAfterMs);
}

/**
 * One signed POST of an event's JSON to an endpoint, recorded in `webhook_attempts`:
 * the delivery chain's attempts, and the endpoint test's single one.
 */
export async function sendAttempt(
  deps: DeliverDeps,
  endpoint: WebhookEndpointDoc,
  eventId: string,
  json: string,
  attempt: number,
  inSlot: InSlot = (post) => post(),
  /** The POST's timeout: the deliveries' own by default (an endpoint test has a shorter one). */
  timeoutMs: number = deps.config.timeoutMs,
): Promise<{ record: WebhookAttemptDoc; outcome: Outcome; result: PostResult }> {
  const guarded = endpoint.livemode || !deps.config.allowPrivateTargets;
  const body = Buffer.from(json, 'utf8');
  let startedAt = deps.now();
  const result = await inSlot(() => {
    // Signed when sent: a wait for the slot must not age the timestamp.
    startedAt = deps.now();
    const timestamp = Math.floor(startedAt / 1000);
    return postWebhook({
      url: endpoint.url,
      headers: {
        'Content-Type': 'application/json',
        'User-Agent': USER_AGENT,
        ...webhookHeaders(signingSecrets(endpoint, startedAt), eventId, timestamp, body),
      },
      body,
      timeoutMs,
      refuseAddress: guarded ? isForbiddenAddress : undefined,
      responseBodyLimit: RESPONSE_BODY_LIMIT,
    });
  });
  const finishedAt = deps.now();
  const outcome = outcomeOf(result, finishedAt);
  const record: WebhookAttemptDoc = {
    _id: deps.ids.next('attempt'),
    project: endpoint.project,
    livemode: endpoint.livemode,
    endpoint_id: endpoint._id,
    event_id: eventId,
    attempt,
    created: Math.floor(startedAt / 1000),
    duration_ms: outcome.durationMs,
    http_status: outcome.http_status,
    error: outcome.error,
    succeeded: outcome.error === null,
    response_body: outcome.response_body,
  };
  // A retry after a fault may find the record stored by the batch that failed.
  await retryInfrastructure(
    () =>
      deps.attempts.insert(deps.collections.webhookAttempts, record).catch((err: unknown) => {
        if (!isDuplicateKey(err)) throw err;
      }),
    STEP_RETRY,
  );
  return { record, outcome, result };
}

/**
 * A write to the endpoint's document, under its lock (../record-lock.ts): on the
 * local stack's store an update replaces the whole document it read, so a failure
 * noted while the merchant changes the endpoint would otherwise put the old fields
 * back (docs/storage.md). The scope's kept endpoint lists are dropped before and
 * after it (./endpoint-directory.ts).
 */
function withEndpointLock<T>(deps: DeliverDeps, endpoint: WebhookEndpointDoc, write: () => Promise<T>): Promise<T> {
  return withRecordLock(deps.redis, endpointLockKey(deps.prefix, endpoint._id), () => changingEndpoints(deps.redis, deps.prefix, endpoint, write));
}

function subscribes(endpoint: WebhookEndpointDoc, type: string): boolean {
  return endpoint.enabled_events.includes(ALL_EVENTS) || endpoint.enabled_events.includes(type);
}

async function disable(c: Collections, endpoint: WebhookEndpointDoc, reason: string): Promise<void> {
  await c.webhookEndpoints.updateOne({ _id: endpoint._id, status: 'enabled' }, { $set: { status: 'disabled', disabled_reason: reason } });
}

/**
 * Notes a failure: starts the endpoint's run of failures if none is running, and
 * disables the endpoint once the run has lasted `disableAfterMs`. True when disabled.
 */
async function failingTooLong(deps: DeliverDeps, endpoint: WebhookEndpointDoc, nowMs: number): Promise<boolean> {
  const c = deps.collections;
  await c.webhookEndpoints.updateOne({ _id: endpoint._id, failing_since: null }, { $set: { failing_since: nowMs } });
  const current = await c.webhookEndpoints.findOne({ _id: endpoint._id }, { projection: { failing_since: 1, status: 1 } });
  if (!current || current.status !== 'enabled' || current.failing_since === null) return false;
  if (nowMs - current.failing_since < deps.config.disableAfterMs) return false;
  await disable(c, endpoint, 'failing');
  return true;
}
