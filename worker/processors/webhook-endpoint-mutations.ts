/**
 * The changes of a webhook endpoint (DESIGN.md section 9): update, delete, secret
 * rotation, resend, recover and test. Each runs as a job, answered through
 * worker/processors/mutation.ts (so keyed requests replay their first answer). What
 * they promise:
 *
 * - Resend and recover queue an event for an endpoint at most once while it is
 *   pending, and at most `endpointRedeliveryLimit` per endpoint; a recovery queues at
 *   most `recoverMax` chains and says whether it left some (`has_more`); a
 *   redelivery runs on the first steps of the schedule only (../webhooks/redeliveries.ts).
 * - Update and delete are idempotent by nature: setting the same fields again, or
 *   deleting what is gone, changes nothing more. Delivery reads the endpoint before
 *   every attempt, so a change applies to the next attempt of any delivery, retries
 *   included, and a deleted endpoint gets no further attempt (its deliveries end as
 *   `endpoint_deleted`). Its attempts are deleted with it.
 * - A rotation makes one new secret per mutation: the update is conditional on the
 *   endpoint not yet carrying this mutation's id (`rotated_by`), so a retried job
 *   answers with the secret the first run made instead of making another.
 * - The test event is sent by a job of the webhooks queue (never of the creates
 *   queue, which every tenant's creates share), in one of the endpoint's delivery
 *   slots like any delivery, with its own short timeout, to this endpoint only. It
 *   is never stored as an event: it is not listed, and `*` does not match it. A test
 *   that finds every slot of the endpoint taken for `TEST_SLOT_WAIT_MS` is answered
 *   as timed out: the endpoint is not answering in time.
 */
import { findByIdInScope } from '../../common/mongo.js';
import { randomBytes } from 'node:crypto';
import type { Job, JobsOptions } from 'bullmq';
import type { WebhookConfig } from '../../common/config.js';
import type { WebhookEndpointDoc } from '../../common/documents.js';
import { errorBody } from '../../common/errors.js';
import { ALL_EVENTS, createdEventId, PAYMENT_INTENT_CREATED, WEBHOOK_ENDPOINT_TEST } from '../../common/events.js';
import { idBodyFloor, idTime, type IdGenerator } from '../../common/ids.js';
import {
  JOBS,
  type WriteJobResult,
  type RecoverWebhookEventsData,
  type ResendWebhookEventData,
  type RotateWebhookSecretData,
  type TypedQueue,
  type UpdateWebhookEndpointData,
  type WebhookEndpointMutationData,
  type MutationJobBase,
} from '../../common/jobs.js';
import { maxAttempts } from '../webhooks/retry-policy.js';
import { redeliveryJobId, type Redeliveries } from '../webhooks/redeliveries.js';
import type { Logger } from '../../common/logger.js';
import { buildEventJson, presentWebhookAttempt, presentWebhookEndpoint } from '../../common/presenters.js';
import { mergedMetadataTooLarge, mergeMetadata, METADATA_MAX_KEYS } from '../../common/metadata.js';
import { deliveryJobOptions } from '../webhooks/delivery-jobs.js';
import { mutationId, notFound, runMutation, type Answer, type MutationDeps } from './mutation.js';
import { freezeCreateAnswer } from '../idempotency-records.js';
import { sendAttempt, type DeliverDeps, type InSlot } from '../webhooks/deliver.js';
import type { PostResult } from '../webhooks/http.js';
import { loadEvent } from '../webhooks/load-event.js';
import { changingEndpoints } from '../webhooks/endpoint-directory.js';
import { markScopeHooked } from '../webhooks/subscriptions.js';
import { endpointLockKey, withRecordLock } from '../record-lock.js';

export interface EndpointMutationDeps extends MutationDeps {
  webhooksQueue: TypedQueue<'webhooks'>;
  redeliveries: Redeliveries;
  config: WebhookConfig;
  deliver: DeliverDeps;
  ids: IdGenerator;
  logger: Logger;
}

type Data = WebhookEndpointMutationData | UpdateWebhookEndpointData | RotateWebhookSecretData | ResendWebhookEventData | RecoverWebhookEventsData;

const present = (doc: WebhookEndpointDoc, withSecret = false) => JSON.stringify(presentWebhookEndpoint(doc, { withSecret }));

async function load(deps: EndpointMutationDeps, data: Data): Promise<WebhookEndpointDoc | null> {
  return findByIdInScope(deps.collections.webhookEndpoints, data.target, data);
}

interface RunOptions {
  onMissing?: () => Answer;
  /**
   * The change writes the endpoint's document: its read and write are made under the
   * endpoint's lock (../record-lock.ts), which deliveries take too when they note a
   * failure run: a metadata merge is read, then written by `_id` alone (see there).
   */
  writes?: boolean;
}

function run(deps: EndpointMutationDeps, job: Job<Data>, apply: (doc: WebhookEndpointDoc) => Promise<Answer>, options: RunOptions = {}): Promise<WriteJobResult> {
  const data = job.data;
  const change = async (): Promise<Answer> => {
    const doc = await load(deps, data);
    if (!doc) return options.onMissing?.() ?? notFound(data, 'webhook_endpoint');
    // A write drops the scope's kept endpoint lists before and after it (../webhooks/endpoint-directory.ts).
    return options.writes ? changingEndpoints(deps.redis, deps.prefix, doc, () => apply(doc)) : apply(doc);
  };
  return runMutation(deps, String(job.id), data, () =>
    options.writes ? withRecordLock(deps.redis, endpointLockKey(deps.prefix, data.target), change) : change(),
  );
}

function metadataTooLarge(data: UpdateWebhookEndpointData, keys: number): Answer {
  return { status: 400, body: errorBody(mergedMetadataTooLarge(keys, 'endpoint'), data.requestId, data.baseUrl) };
}

export function updateWebhookEndpoint(deps: EndpointMutationDeps, job: Job<UpdateWebhookEndpointData>): Promise<WriteJobResult> {
  const data = job.data;
  const input = data.input;
  return run(deps, job, async (doc) => {
    await freezeCreateAnswer(deps, doc, () => present(doc, true));
    const set: Partial<WebhookEndpointDoc> = {};
    if (input.url !== undefined) set.url = input.url;
    if (input.enabled_events !== undefined) set.enabled_events = input.enabled_events;
    if (input.description !== undefined) set.description = input.description;
    if (input.metadata !== undefined) {
      set.metadata = mergeMetadata(doc.metadata, input.metadata);
      // Each body is checked by the api; only here is the merged whole known.
      if (set.metadata.length > METADATA_MAX_KEYS) return metadataTooLarge(data, set.metadata.length);
    }
    if (input.disabled === true) {
      set.status = 'disabled';
      set.disabled_reason = 'requested';
    } else if (input.disabled === false) {
      // Re-enabled: a fresh start, the failure run cleared.
      set.status = 'enabled';
      set.disabled_reason = null;
      set.failing_since = null;
    }
    // Before the update, as before an insert: a subscription visible in MongoDB is in the hint.
    if (set.enabled_events) await markScopeHooked(deps.redis, deps.prefix, doc, set.enabled_events);
    if (Object.keys(set).length > 0) await deps.collections.webhookEndpoints.updateOne({ _id: doc._id }, { $set: set });
    return { status: 200, body: present({ ...doc, ...set }) };
  }, { writes: true });
}

export function deleteWebhookEndpoint(deps: EndpointMutationDeps, job: Job<WebhookEndpointMutationData>): Promise<WriteJobResult> {
  const data = job.data;
  const deleted: Answer = { status: 200, body: JSON.stringify({ id: data.target, object: 'webhook_endpoint', deleted: true }) };
  return run(
    deps,
    job,
    async (doc) => {
      await freezeCreateAnswer(deps, doc, () => present(doc, true));
      await deps.collections.webhookEndpoints.deleteOne({ _id: doc._id });
      // Its attempts go with it (docs/webhooks.md, Managing endpoints).
      await deps.collections.webhookAttempts.deleteMany({ endpoint_id: doc._id });
      return deleted;
    },
    // The api saw it before enqueueing: gone now means this job (or another delete) removed it.
    { onMissing: () => deleted, writes: true },
  );
}

export function rotateWebhookSecret(deps: EndpointMutationDeps, job: Job<RotateWebhookSecretData>): Promise<WriteJobResult> {
  const data = job.data;
  const rotation = mutationId(data).id;
  return run(deps, job, async (doc) => {
    if (doc.rotated_by === rotation) return { status: 200, body: present(doc, true) };
    await freezeCreateAnswer(deps, doc, () => present(doc, true));
    const graceMs = data.input.expire_previous_in * 1000;
    const set: Partial<WebhookEndpointDoc> = {
      secret: `whsec_${randomBytes(24).toString('base64')}`,
      previous_secret: graceMs > 0 ? doc.secret : null,
      previous_secret_expires_at: graceMs > 0 ? deps.now() + graceMs : null,
      rotated_by: rotation,
    };
    const updated = await deps.collections.webhookEndpoints.updateOne({ _id: doc._id, rotated_by: doc.rotated_by ?? null }, { $set: set });
    if (updated.matchedCount === 0) {
      // Another rotation came first, or this one (a retried job): answer what is stored if it is ours.
      const now = await load(deps, data);
      if (now?.rotated_by === rotation) return { status: 200, body: present(now, true) };
      throw new Error(`webhook endpoint ${doc._id}: rotated concurrently; retrying`);
    }
    return { status: 200, body: present({ ...doc, ...set }, true) };
  }, { writes: true });
}

/**
 * A redelivery chain: one job per (event, endpoint) whatever asked for it, removed
 * once over (so a later resend can queue it again; its attempts are recorded in
 * MongoDB), on a shorter schedule than a first delivery: the first steps only.
 */
function redeliveryOptions(config: WebhookConfig, eventId: string, endpointId: string): JobsOptions {
  return {
    ...deliveryJobOptions(config, eventId, endpointId),
    jobId: redeliveryJobId(eventId, endpointId),
    attempts: Math.min(config.redeliveryAttempts, maxAttempts(config)),
    removeOnComplete: true,
    removeOnFail: true,
  };
}

function redeliveryLimit(data: MutationJobBase, limit: number): Answer {
  return {
    status: 400,
    body: errorBody(
      {
        code: 'webhook_redelivery_limit',
        message: `This webhook endpoint already has ${limit} redeliveries pending. Retry once they have been delivered or given up.`,
      },
      data.requestId,
      data.baseUrl,
    ),
  };
}

/**
 * Queues the redelivery of `eventIds` to the endpoint: those whose redelivery is not
 * pending already, while the endpoint has room. Null when it has none at all. (An
 * event's own chain may still be waiting for a retry hours away: a redelivery is
 * what the merchant asks for instead of that wait.)
 */
async function queueRedeliveries(deps: EndpointMutationDeps, endpointId: string, candidates: string[]): Promise<{ queued: number; left: number } | null> {
  const reserved = await deps.redeliveries.reserve(endpointId, candidates, deps.now());
  if ('full' in reserved) return null;
  const added = reserved.added;
  if (added.length > 0) {
    try {
      await deps.webhooksQueue.addBulk(
        added.map((eventId) => ({
          name: JOBS.deliverWebhook as typeof JOBS.deliverWebhook,
          data: { eventId, endpointId, redelivery: true as const },
          opts: redeliveryOptions(deps.config, eventId, endpointId),
        })),
      );
    } catch (err) {
      await deps.redeliveries.unreserve(endpointId, added).catch(() => undefined);
      throw err;
    }
  }
  return { queued: added.length, left: candidates.length - added.length };
}

export function resendWebhookEvent(deps: EndpointMutationDeps, job: Job<ResendWebhookEventData>): Promise<WriteJobResult> {
  const data = job.data;
  return run(deps, job, async (doc) => {
    const event = await loadEvent(deps.collections, data.input.event);
    if (!event || event.project !== doc.project || event.livemode !== doc.livemode) {
      return notFound({ ...data, target: data.input.event }, 'event');
    }
    // Queued now, or pending already: either way the event is on its way, once.
    const queued = await queueRedeliveries(deps, doc._id, [event.id]);
    if (queued === null) return redeliveryLimit(data, deps.config.endpointRedeliveryLimit);
    return { status: 200, body: JSON.stringify({ object: 'resend', event: event.id, webhook_endpoint: doc._id, queued: 1 }) };
  });
}

export function recoverWebhookEvents(deps: EndpointMutationDeps, job: Job<RecoverWebhookEventsData>): Promise<WriteJobResult> {
  const data = job.data;
  return run(deps, job, async (doc) => {
    const { eventIds, more } = await recoverableEvents(deps, doc, data.input.since, deps.config.recoverMax);
    const queued = await queueRedeliveries(deps, doc._id, eventIds);
    if (queued === null) return redeliveryLimit(data, deps.config.endpointRedeliveryLimit);
    const hasMore = more || queued.left > 0;
    deps.logger.info({ endpoint_id: doc._id, queued: queued.queued, has_more: hasMore }, 'webhook recovery queued');
    return { status: 200, body: JSON.stringify({ object: 'recovery', queued: queued.queued, has_more: hasMore }) };
  });
}

/** A recovery reads at most this many times its cap of events, in pages, looking for ones to queue. */
const RECOVER_SCAN_FACTOR = 4;

/**
 * The events of the endpoint's scope and subscriptions since `since` (unix seconds;
 * never before the endpoint existed) that have no successful attempt on it and no
 * redelivery pending, oldest first, at most `max` of them (`more`: there may be
 * others). Ids are time-ordered, so "since" is an `_id` bound on both homes of
 * events. Every read is bounded: pages of `max` ids, at most RECOVER_SCAN_FACTOR
 * times `max` in all per home, so that a scope's long history costs a recovery a
 * bounded scan; what it did not reach, the next recovery does.
 */
async function recoverableEvents(deps: EndpointMutationDeps, endpoint: WebhookEndpointDoc, since: number, max: number): Promise<{ eventIds: string[]; more: boolean }> {
  const c = deps.collections;
  const scope = { project: endpoint.project, livemode: endpoint.livemode };
  // The endpoint's own millisecond, as the dispatch compares (`created` is whole
  // seconds: events of the second before the endpoint existed would pass).
  const fromMs = Math.max(since * 1000, idTime(endpoint._id));
  const floor = idBodyFloor(fromMs);
  const all = endpoint.enabled_events.includes(ALL_EVENTS);
  const wants = (type: string) => all || endpoint.enabled_events.includes(type);
  const pending = await deps.redeliveries.pending(endpoint._id, deps.now());

  /**
   * Pages through one home of events: `page(after)` reads up to `max` documents after
   * the cursor (from the floor when null) and answers the event ids wanted among them
   * and the cursor for the next page (null once the home is read to its end).
   */
  const scan = async (page: (after: string | null) => Promise<{ ids: string[]; read: number; next: string | null }>): Promise<{ ids: string[]; more: boolean }> => {
    const found: string[] = [];
    let after: string | null = null;
    for (let read = 0; read < RECOVER_SCAN_FACTOR * max; ) {
      const got = await page(after);
      read += got.read;
      const open = got.ids.filter((id) => !pending.has(id));
      if (open.length > 0) {
        const delivered = await c.webhookAttempts
          .find({ endpoint_id: endpoint._id, succeeded: true, event_id: { $in: open } }, { projection: { event_id: 1 } })
          .toArray();
        const done = new Set(delivered.map((a) => a.event_id));
        for (const id of open) if (!done.has(id)) found.push(id);
      }
      if (got.next === null) return { ids: found, more: false };
      if (found.length > max) return { ids: found, more: true };
      after = got.next;
    }
    return { ids: found, more: true };
  };
  const cursorOf = <T extends { _id: string }>(docs: T[]) => (docs.length < max ? null : (docs[docs.length - 1] as T)._id);

  const homes: Array<Promise<{ ids: string[]; more: boolean }>> = [];
  if (wants(PAYMENT_INTENT_CREATED)) {
    homes.push(
      scan(async (after) => {
        const from = after ? { $gt: after } : { $gte: `pi_${floor}` };
        const intents = await c.paymentIntents.find({ ...scope, _id: from }, { projection: { _id: 1 }, sort: { _id: 1 }, limit: max }).toArray();
        return { ids: intents.map((pi) => createdEventId(pi._id)), read: intents.length, next: cursorOf(intents) };
      }),
    );
  }
  homes.push(
    scan(async (after) => {
      const from = after ? { $gt: after } : { $gte: `evt_${floor}` };
      const events = await c.events.find({ ...scope, _id: from }, { projection: { _id: 1, type: 1 }, sort: { _id: 1 }, limit: max }).toArray();
      return { ids: events.filter((e) => wants(e.type)).map((e) => e._id), read: events.length, next: cursorOf(events) };
    }),
  );
  const results = await Promise.all(homes);
  // A changed intent's created event is in both homes (common/created-events.ts): once.
  const ids = [...new Set(results.flatMap((r) => r.ids))].sort();
  return { eventIds: ids.slice(0, max), more: ids.length > max || results.some((r) => r.more) };
}

export function testWebhookEndpoint(deps: EndpointMutationDeps, job: Job<WebhookEndpointMutationData>): Promise<WriteJobResult> {
  const data = job.data;
  return run(deps, job, async (doc) => {
    // The same event id on a retried job: a receiver sees one test, maybe twice, never two.
    const eventId = `evt_${data.id.slice(data.id.indexOf('_') + 1)}`;
    const json = buildEventJson({
      id: eventId,
      type: WEBHOOK_ENDPOINT_TEST,
      created: data.created,
      livemode: doc.livemode,
      object: presentWebhookEndpoint(doc, { withSecret: false }),
    });
    const { record } = await sendAttempt(deps.deliver, doc, eventId, json, 1, inTestSlot(deps, doc._id), deps.config.testTimeoutMs);
    return { status: 200, body: JSON.stringify(presentWebhookAttempt(record)) };
  });
}

/** How long a test waits for one of its endpoint's delivery slots, at most. */
const TEST_SLOT_WAIT_MS = 2000;
const TEST_SLOT_RETRY_MS = 100;

function inTestSlot(deps: EndpointMutationDeps, endpointId: string): InSlot {
  return async <T>(post: () => Promise<T>): Promise<T> => {
    const started = Date.now();
    let slot = await deps.deliver.slots.acquire(endpointId);
    while (!slot && Date.now() - started < TEST_SLOT_WAIT_MS) {
      await new Promise((resolve) => setTimeout(resolve, TEST_SLOT_RETRY_MS));
      slot = await deps.deliver.slots.acquire(endpointId);
    }
    if (!slot) {
      const busy: PostResult = { kind: 'error', error: 'timeout', message: 'every delivery slot of the endpoint stayed taken', durationMs: Date.now() - started };
      return busy as T;
    }
    try {
      return await post();
    } finally {
      await slot.release().catch(() => undefined);
    }
  };
}
