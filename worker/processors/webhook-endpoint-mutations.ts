/**
 * The changes of a webhook endpoint (DESIGN.md section 9): update, delete, secret
 * rotation, resend, recover and test. Each runs as a job, answered through
 * worker/processors/mutation.ts (so keyed requests replay their first answer). What
 * they promise:
 *
 * - Update and delete are idempotent by nature: setting the same fields again, or
 *   deleting what is gone, changes nothing more. Delivery reads the endpoint before
 *   every attempt, so a change applies to the next attempt of any delivery, retries
 *   included, and a deleted endpoint gets no further attempt (its deliveries end as
 *   `endpoint_deleted`). Its attempts are deleted with it.
 * - A rotation makes one new secret per mutation: the update is conditional on the
 *   endpoint not yet carrying this mutation's id (`rotated_by`), so a retried job
 *   answers with the secret the first run made instead of making another.
 * - Resend and recover add delivery chains with ids derived from the mutation, so a
 *   retried job adds none twice.
 * - The test event is sent at once, by this job, to this endpoint only, and is
 *   never stored as an event: it is not listed, and `*` does not match it.
 */
import { findByIdInScope } from '../../common/mongo.js';
import { randomBytes } from 'node:crypto';
import type { Job } from 'bullmq';
import type { WebhookConfig } from '../../common/config.js';
import type { WebhookEndpointDoc } from '../../common/documents.js';
import { errorBody } from '../../common/errors.js';
import { ALL_EVENTS, createdEventId, PAYMENT_INTENT_CREATED, WEBHOOK_ENDPOINT_TEST } from '../../common/events.js';
import { idBodyFloor, idTime, type IdGenerator } from '../../common/ids.js';
import {
  JOBS,
  type CreateJobResult,
  type RecoverWebhookEventsData,
  type ResendWebhookEventData,
  type RotateWebhookSecretData,
  type TypedQueue,
  type UpdateWebhookEndpointData,
  type WebhookEndpointMutationData,
} from '../../common/jobs.js';
import type { Logger } from '../../common/logger.js';
import { buildEventJson, presentWebhookAttempt, presentWebhookEndpoint } from '../../common/presenters.js';
import { mergedMetadataTooLarge, mergeMetadata, METADATA_MAX_KEYS } from '../../common/metadata.js';
import { deliveryJobOptions } from './dispatch-event.js';
import { freezeCreateAnswer, mutationId, notFound, runMutation, type Answer, type MutationDeps } from './mutation.js';
import { sendAttempt, type DeliverDeps } from '../webhooks/deliver.js';
import { loadEvent } from '../webhooks/load-event.js';
import { markScopeHooked } from '../webhooks/subscriptions.js';
import { endpointLockKey, withRecordLock } from '../record-lock.js';

export interface EndpointMutationDeps extends MutationDeps {
  webhooksQueue: TypedQueue<'webhooks'>;
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
   * failure run. On FerretDB, an update replaces the whole document it read.
   */
  writes?: boolean;
}

function run(deps: EndpointMutationDeps, job: Job<Data>, apply: (doc: WebhookEndpointDoc) => Promise<Answer>, options: RunOptions = {}): Promise<CreateJobResult> {
  const data = job.data;
  const change = async (): Promise<Answer> => {
    const doc = await load(deps, data);
    if (!doc) return options.onMissing?.() ?? notFound(data, 'webhook_endpoint');
    return apply(doc);
  };
  return runMutation(deps, String(job.id), data, () =>
    options.writes ? withRecordLock(deps.redis, endpointLockKey(deps.prefix, data.target), change) : change(),
  );
}

function metadataTooLarge(data: UpdateWebhookEndpointData, keys: number): Answer {
  return { status: 400, body: errorBody(mergedMetadataTooLarge(keys, 'endpoint'), data.requestId, data.baseUrl) };
}

export function updateWebhookEndpoint(deps: EndpointMutationDeps, job: Job<UpdateWebhookEndpointData>): Promise<CreateJobResult> {
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

export function deleteWebhookEndpoint(deps: EndpointMutationDeps, job: Job<WebhookEndpointMutationData>): Promise<CreateJobResult> {
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

export function rotateWebhookSecret(deps: EndpointMutationDeps, job: Job<RotateWebhookSecretData>): Promise<CreateJobResult> {
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

function redeliveryOptions(config: WebhookConfig, eventId: string, endpointId: string, data: ResendWebhookEventData | RecoverWebhookEventsData) {
  // Job ids may not contain ':'; a key's hash or a request id is safe.
  const mutation = data.idempotency ? data.idempotency.scopeHash : data.id;
  return { ...deliveryJobOptions(config, eventId, endpointId), jobId: `redeliver-${eventId}-${endpointId}-${mutation}` };
}

export function resendWebhookEvent(deps: EndpointMutationDeps, job: Job<ResendWebhookEventData>): Promise<CreateJobResult> {
  const data = job.data;
  return run(deps, job, async (doc) => {
    const event = await loadEvent(deps.collections, data.input.event);
    if (!event || event.project !== doc.project || event.livemode !== doc.livemode) {
      return notFound({ ...data, target: data.input.event }, 'event');
    }
    await deps.webhooksQueue.add(
      JOBS.deliverWebhook,
      { eventId: event.id, endpointId: doc._id, redelivery: true },
      redeliveryOptions(deps.config, event.id, doc._id, data),
    );
    return { status: 200, body: JSON.stringify({ object: 'resend', event: event.id, webhook_endpoint: doc._id, queued: 1 }) };
  });
}

export function recoverWebhookEvents(deps: EndpointMutationDeps, job: Job<RecoverWebhookEventsData>): Promise<CreateJobResult> {
  const data = job.data;
  return run(deps, job, async (doc) => {
    const eventIds = await recoverableEvents(deps, doc, data.input.since);
    if (eventIds.length > 0) {
      await deps.webhooksQueue.addBulk(
        eventIds.map((eventId) => ({
          name: JOBS.deliverWebhook as typeof JOBS.deliverWebhook,
          data: { eventId, endpointId: doc._id, redelivery: true as const },
          opts: redeliveryOptions(deps.config, eventId, doc._id, data),
        })),
      );
    }
    deps.logger.info({ endpoint_id: doc._id, queued: eventIds.length }, 'webhook recovery queued');
    return { status: 200, body: JSON.stringify({ object: 'recovery', queued: eventIds.length }) };
  });
}

/**
 * The events of the endpoint's scope and subscriptions since `since` (unix seconds;
 * never before the endpoint existed) that have no successful attempt on it. Ids are
 * time-ordered, so "since" is an `_id` bound on both homes of events.
 */
async function recoverableEvents(deps: EndpointMutationDeps, endpoint: WebhookEndpointDoc, since: number): Promise<string[]> {
  const c = deps.collections;
  const scope = { project: endpoint.project, livemode: endpoint.livemode };
  // The endpoint's own millisecond, as the dispatch compares (`created` is whole
  // seconds: events of the second before the endpoint existed would pass).
  const fromMs = Math.max(since * 1000, idTime(endpoint._id));
  const floor = idBodyFloor(fromMs);
  const all = endpoint.enabled_events.includes(ALL_EVENTS);
  const wants = (type: string) => all || endpoint.enabled_events.includes(type);
  const ids: string[] = [];
  if (wants(PAYMENT_INTENT_CREATED)) {
    const intents = await c.paymentIntents.find({ ...scope, _id: { $gte: `pi_${floor}` } }, { projection: { _id: 1 } }).toArray();
    for (const pi of intents) ids.push(createdEventId(pi._id));
  }
  const others = await c.events.find({ ...scope, _id: { $gte: `evt_${floor}` } }, { projection: { _id: 1, type: 1 } }).toArray();
  for (const e of others) if (wants(e.type)) ids.push(e._id);
  if (ids.length === 0) return [];
  const delivered = await c.webhookAttempts
    .find({ endpoint_id: endpoint._id, succeeded: true, event_id: { $in: ids } }, { projection: { event_id: 1 } })
    .toArray();
  const done = new Set(delivered.map((a) => a.event_id));
  return ids.filter((id) => !done.has(id)).sort();
}

export function testWebhookEndpoint(deps: EndpointMutationDeps, job: Job<WebhookEndpointMutationData>): Promise<CreateJobResult> {
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
    const { record } = await sendAttempt(deps.deliver, doc, eventId, json, 1);
    return { status: 200, body: JSON.stringify(presentWebhookAttempt(record)) };
  });
}
