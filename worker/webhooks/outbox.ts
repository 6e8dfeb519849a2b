/**
 * Hands an event to webhook delivery: its outbox entry (the durable record of its
 * pending deliveries), then its fan-out to the endpoints that take it. Both are
 * idempotent on the event id, so a retried job, or a second recorder of the same
 * event, adds nothing; the sweeper re-drives an entry whose jobs Redis lost.
 *
 * The fan-out runs in the job that recorded the event, not in a job of its own: a
 * dispatch job per event cost a BullMQ job's round of Redis scripts and stream
 * entries for a single read and an enqueue. A fan-out that fails there (MongoDB or
 * Redis away for a moment) falls back to the dispatch job, which is retried with
 * backoff; if that cannot be enqueued either, the recording job fails and is retried.
 */
import { dispatchJobId } from '../../common/events.js';
import { idTime } from '../../common/ids.js';
import { JOBS, type DispatchEventData, type Scope, type TypedQueue } from '../../common/jobs.js';
import type { Collections } from '../../common/mongo.js';
import { isDuplicateKey } from '../../common/mongo.js';
import type { InsertBatcher } from '../group-commit.js';

export interface OutboxDeps {
  collections: Collections;
  inserts: InsertBatcher;
  eventsQueue: TypedQueue<'events'>;
  /**
   * The fan-out, run in place (processors/dispatch-event.ts), given the event's JSON
   * for the first attempts; without it every event goes through a dispatch job.
   */
  fanOut?: (event: DispatchEventData, json: string) => Promise<unknown>;
}

export interface OutgoingEvent extends Scope {
  id: string;
  type: string;
  json: string;
}

/**
 * Writes the event's outbox entry and returns its fan-out, for the caller to run when
 * it suits it (a create answers its client first). The entry is what makes the
 * event's delivery certain: once it is written, a fan-out lost to a crash is done by
 * the sweeper.
 */
export async function recordOutgoing(deps: OutboxDeps, event: OutgoingEvent): Promise<() => Promise<void>> {
  return (await writeOutgoing(deps, event)).fanOut;
}

/**
 * The same, for an event whose JSON a retry may build differently (a refund's, from
 * the refund as it is then): the JSON of the entry written first stands, and is
 * returned for the event's document. One read more, on a retry only.
 */
export async function recordOutgoingFirst(deps: OutboxDeps, event: OutgoingEvent): Promise<{ json: string; fanOut: () => Promise<void> }> {
  return writeOutgoing(deps, event, true);
}

async function writeOutgoing(deps: OutboxDeps, event: OutgoingEvent, keepFirst = false): Promise<{ json: string; fanOut: () => Promise<void> }> {
  const scope = { project: event.project, livemode: event.livemode };
  // The moment of the event is its id's, the same on every retry: endpoints created
  // after it do not receive it, whoever dispatches it.
  const createdMs = idTime(event.id);
  let json = event.json;
  // On a retried job the entry may be written again after its deliveries finished:
  // the redispatch finds the delivery jobs by their ids and adds none twice.
  await deps.inserts
    .insert(deps.collections.outbox, { _id: event.id, ...scope, type: event.type, json, created_ms: createdMs })
    .catch(async (err: unknown) => {
      if (!isDuplicateKey(err)) throw err;
      if (keepFirst) json = (await deps.collections.outbox.findOne({ _id: event.id }, { projection: { json: 1 } }))?.json ?? json;
    });
  return { json, fanOut: fanOutOf(deps, { eventId: event.id, ...scope, type: event.type, createdMs }, json) };
}

function fanOutOf(deps: OutboxDeps, data: DispatchEventData, json: string): () => Promise<void> {
  const enqueue = async () => {
    await deps.eventsQueue.add(JOBS.dispatchEvent, data, { jobId: dispatchJobId(data.eventId) });
  };
  const fanOut = deps.fanOut;
  if (!fanOut) return enqueue;
  return async () => {
    try {
      await fanOut(data, json);
    } catch {
      await enqueue();
    }
  };
}
