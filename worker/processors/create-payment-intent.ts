/**
 * Creates a payment intent, and so its `payment_intent.created` event, in one insert
 * idempotent on the id: until the intent changes, the event is the intent itself,
 * derived from it, and stored nowhere else (common/created-events.ts). When the scope
 * has webhook endpoints, an outbox entry is written before the answer (the durable
 * record of the event's pending deliveries) and the event is fanned out to its
 * endpoints after it, both idempotent on the event id, which is derived from the
 * object id; the sweeper re-drives any outbox entry whose jobs a crash or a Redis
 * failover lost.
 */
import type { Job } from 'bullmq';
import { randomBase62 } from '../../common/ids.js';
import type { WriteJobResult, CreatePaymentIntentData, TypedQueue } from '../../common/jobs.js';
import type { PaymentIntentDoc } from '../../common/documents.js';
import { createdEventOf } from '../../common/created-events.js';
import { createdEventId, PAYMENT_INTENT_CREATED } from '../../common/events.js';
import { recordOutgoing, type OutboxDeps } from '../webhooks/outbox.js';
import { presentPaymentIntent } from '../../common/presenters.js';
import { scopeMayWant } from '../webhooks/subscriptions.js';
import { scheduleExpiry } from '../lifecycle/follow-ups.js';
import { runCreate, type CreateDeps } from './create.js';

export interface PaymentIntentDeps extends CreateDeps, OutboxDeps {
  /** The expiry of each new intent is a delayed job at its `expires_at`. */
  intentsQueue: TypedQueue<'intents'>;
}

export async function createPaymentIntent(deps: PaymentIntentDeps, job: Job<CreatePaymentIntentData>): Promise<WriteJobResult> {
  const data = job.data;
  // Asked while the object is inserted: it depends on the scope's subscriptions only.
  const hooked = scopeMayWant(deps.redis, deps.prefix, deps.collections, data, PAYMENT_INTENT_CREATED);
  hooked.catch(() => undefined); // awaited below; this only keeps an early insert failure from leaving it unhandled
  return runCreate(deps, String(job.id), data, {
    collection: deps.collections.paymentIntents,
    build: (objectId): PaymentIntentDoc => ({
      _id: objectId,
      project: data.project,
      livemode: data.livemode,
      amount: data.input.amount,
      currency: data.input.currency,
      description: data.input.description,
      status: 'new',
      client_secret: `${objectId}_secret_${randomBase62(24)}`,
      automatic_operator: data.input.automatic_operator,
      allowed_operators: data.input.allowed_operators,
      selected_operator: data.input.selected_operator,
      metadata: data.input.metadata,
      created: data.created,
      expires_at: data.input.expires_at,
      attempt: 0,
      rev: 0,
    }),
    present: (doc) => JSON.stringify(presentPaymentIntent(doc, { withSecret: true })),
    after: async (doc) => {
      const expiry = scheduleExpiry(deps.intentsQueue, doc, deps.now());
      // The entry before the answer; the fan-out after it, in this job.
      const fanOut = (await hooked) ? await recordCreatedEvent(deps, doc) : undefined;
      await expiry;
      return fanOut;
    },
  });
}

/**
 * The created event's outbox entry. A retried job may find the intent changed since
 * (its event recorded in `events` then), or its event deleted for its age: nothing
 * is left to deliver then.
 */
async function recordCreatedEvent(deps: PaymentIntentDeps, pi: PaymentIntentDoc): Promise<(() => Promise<void>) | undefined> {
  const json = await createdEventOf(deps.collections, pi);
  if (json === null) return undefined;
  return recordOutgoing(deps, {
    id: createdEventId(pi._id),
    project: pi.project,
    livemode: pi.livemode,
    type: PAYMENT_INTENT_CREATED,
    json,
  });
}
