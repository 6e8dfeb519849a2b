/**
 * Creates a payment intent and its `payment_intent.created` event with an outbox
 * entry, all idempotent on the ids: the event id is derived from the object id, so
 * however often the job runs there is one object and one event. Dispatch is enqueued
 * with a job id of its own, and the sweeper picks up any outbox entry a crash left.
 */
import type { Job, Queue } from 'bullmq';
import { randomBase62 } from '../../common/ids.js';
import { JOBS, type CreateJobResult, type CreatePaymentIntentData, type DispatchEventData } from '../../common/jobs.js';
import type { PaymentIntentDoc } from '../../common/mongo.js';
import { insertOnce, insertOrRead } from '../../common/mongo.js';
import { buildEventJson, presentPaymentIntent } from '../../common/presenters.js';
import { runCreate, type CreateDeps, type CreateOutcome } from './create.js';

export const PAYMENT_INTENT_CREATED = 'payment_intent.created';

/** One `payment_intent.created` event per payment intent: its id is the object's, re-prefixed. */
export function createdEventId(paymentIntentId: string): string {
  return `evt_${paymentIntentId.slice(paymentIntentId.indexOf('_') + 1)}`;
}

export interface PaymentIntentDeps extends CreateDeps {
  eventsQueue: Queue<DispatchEventData>;
}

export async function createPaymentIntent(deps: PaymentIntentDeps, job: Job<CreatePaymentIntentData>): Promise<CreateJobResult> {
  const data = job.data;
  return runCreate(deps, String(job.id), data, async (objectId): Promise<CreateOutcome> => {
    const doc = await insertOrRead(deps.collections.paymentIntents, {
      _id: objectId,
      project: data.project,
      livemode: data.livemode,
      amount: data.input.amount,
      currency: data.input.currency,
      description: data.input.description,
      status: 'new' as const,
      client_secret: `${objectId}_secret_${randomBase62(24)}`,
      automatic_operator: data.input.automatic_operator,
      allowed_operators: data.input.allowed_operators,
      selected_operator: data.input.selected_operator,
      metadata: data.input.metadata,
      created: data.created,
      expires_at: data.input.expires_at,
    });
    await recordCreatedEvent(deps, doc);
    return { id: doc._id, status: 200, body: JSON.stringify(presentPaymentIntent(doc, { withSecret: true })) };
  });
}

async function recordCreatedEvent(deps: PaymentIntentDeps, pi: PaymentIntentDoc): Promise<void> {
  const id = createdEventId(pi._id);
  const json = buildEventJson({
    id,
    type: PAYMENT_INTENT_CREATED,
    created: pi.created,
    livemode: pi.livemode,
    object: presentPaymentIntent(pi, { withSecret: false }),
  });
  const scope = { project: pi.project, livemode: pi.livemode };
  // Both are inserts (cheap on FerretDB). On a retried job the outbox entry may be
  // written again after a dispatch removed it: the redispatch finds the delivery
  // jobs by their ids and adds none twice.
  await Promise.all([
    insertOnce(deps.collections.events, { _id: id, ...scope, type: PAYMENT_INTENT_CREATED, created: pi.created, json }),
    insertOnce(deps.collections.outbox, { _id: id, ...scope, type: PAYMENT_INTENT_CREATED, json, created_ms: deps.now() }),
  ]);
  await deps.eventsQueue.add(JOBS.dispatchEvent, { eventId: id }, { jobId: `dispatch-${id}` });
}
