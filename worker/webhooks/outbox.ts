/**
 * Hands an event to webhook delivery: its outbox entry (the durable record of its
 * pending deliveries, common/documents.ts) and then its dispatch job. Both are
 * idempotent on the event id, so a retried job, or a second recorder of the same
 * event, adds nothing; the sweeper re-drives an entry whose jobs Redis lost.
 */
import { dispatchJobId } from '../../common/events.js';
import { idTime } from '../../common/ids.js';
import { JOBS, type Scope, type TypedQueue } from '../../common/jobs.js';
import type { Collections } from '../../common/mongo.js';
import { isDuplicateKey } from '../../common/mongo.js';
import type { InsertBatcher } from '../group-commit.js';

export interface OutboxDeps {
  collections: Collections;
  inserts: InsertBatcher;
  eventsQueue: TypedQueue<'events'>;
}

export interface OutgoingEvent extends Scope {
  id: string;
  type: string;
  json: string;
}

export async function dispatchEventOnce(deps: OutboxDeps, event: OutgoingEvent): Promise<void> {
  const scope = { project: event.project, livemode: event.livemode };
  // The moment of the event is its id's, the same on every retry: endpoints created
  // after it do not receive it, whoever dispatches it.
  const createdMs = idTime(event.id);
  // On a retried job the entry may be written again after its deliveries finished:
  // the redispatch finds the delivery jobs by their ids and adds none twice.
  await deps.inserts
    .insert(deps.collections.outbox, { _id: event.id, ...scope, type: event.type, json: event.json, created_ms: createdMs })
    .catch((err: unknown) => {
      if (!isDuplicateKey(err)) throw err;
    });
  await deps.eventsQueue.add(JOBS.dispatchEvent, { eventId: event.id, ...scope, type: event.type, createdMs }, { jobId: dispatchJobId(event.id) });
}
