/**
 * Events live in two homes: a `payment_intent.created` event is its intent itself
 * while the intent is unchanged (`evt_X` is the created event of `pi_X`), and every
 * other event, the created events of changed intents included, is a document of the
 * `events` collection (common/created-events.ts). Both kinds of ids share one
 * time-ordered body after the prefix, so a page of events is a merge of two
 * `_id`-ordered queries, each limited to the page size, compared on that body: the
 * same cursor rules as every list, and every query index-shaped for MongoDB.
 *
 * The intents are read before `events`: an intent's first change records its created
 * event in `events` before the update, so an intent found changed (and skipped) has
 * its event found by the query after; one found unchanged and recorded meanwhile is
 * found twice, and kept once. Events older than the events' retention
 * (`EVENT_RETENTION_DAYS`) are not shown, whether or not the sweeper has deleted them
 * yet (a created event derived from an intent that old has nothing to delete).
 */
import type { Collection, Filter } from 'mongodb';
import { createdEventFromIntent, createdEventOf, INTENT_FOR_EVENT, withinRetention } from '../../common/created-events.js';
import { errors } from '../../common/errors.js';
import { createdEventId, objectIdOfCreatedEvent, PAYMENT_INTENT_CREATED } from '../../common/events.js';
import type { EventDoc, PaymentIntentDoc } from '../../common/documents.js';
import { idBodyFloor } from '../../common/ids.js';
import type { Scope } from '../../common/jobs.js';
import { findByIdInScope, type Collections } from '../../common/mongo.js';
import { listEnvelopeJson } from '../../common/presenters.js';
import type { PageQuery } from './pages.js';

/** Which events are shown: those younger than `retentionMs` (`EVENT_RETENTION_DAYS`) at `nowMs` (epoch ms). */
export interface EventsKept {
  nowMs: number;
  retentionMs: number;
}

/** The events an api shows now. */
export function eventsKept(deps: { now: () => number; config: { retention: { eventMs: number } } }): EventsKept {
  return { nowMs: deps.now(), retentionMs: deps.config.retention.eventMs };
}

interface Item {
  /** The id's body: what orders events across both homes. */
  key: string;
  id: string;
  json: string;
}

interface Source {
  /** Items just past `bound` (exclusive), in the page's order, at most `limit`. */
  fetch(bound: string | null, newerFirst: boolean, limit: number): Promise<Item[]>;
  has(eventId: string): Promise<boolean>;
}

const bodyOf = (id: string) => id.slice(id.indexOf('_') + 1);

function createdSource(c: Collection<PaymentIntentDoc>, scope: Scope, kept: EventsKept, objectId: string | null = null): Source {
  const floor = `pi_${idBodyFloor(kept.nowMs - kept.retentionMs)}`;
  return {
    async fetch(bound, newerFirst, limit) {
      const range: Record<string, string> = { $gte: floor };
      if (bound !== null) range[newerFirst ? '$lt' : '$gt'] = `pi_${bound}`;
      // One object's events: its created event is that intent, if in range.
      const filter = { project: scope.project, livemode: scope.livemode, _id: objectId === null ? range : { ...range, $eq: objectId } };
      const docs = await c
        .find(filter as Filter<PaymentIntentDoc>, { projection: INTENT_FOR_EVENT })
        .sort({ _id: newerFirst ? -1 : 1 })
        .limit(limit)
        .toArray();
      // A changed intent's created event is in `events`: the other source lists it.
      return docs.flatMap((d) => {
        const json = createdEventFromIntent(d);
        return json === null ? [] : [{ key: bodyOf(d._id), id: createdEventId(d._id), json }];
      });
    },
    async has(eventId) {
      const objectId = objectIdOfCreatedEvent(eventId);
      if (objectId === eventId || !withinRetention(objectId, kept.nowMs, kept.retentionMs)) return false;
      const doc = await findByIdInScope(c, objectId, scope, { projection: { _id: 1 } });
      return doc !== null;
    },
  };
}

function recordedSource(c: Collection<EventDoc>, scope: Scope, type: string | null, kept: EventsKept, objectId: string | null = null): Source {
  const floor = `evt_${idBodyFloor(kept.nowMs - kept.retentionMs)}`;
  return {
    async fetch(bound, newerFirst, limit) {
      const range: Record<string, string> = { $gte: floor };
      if (bound !== null) range[newerFirst ? '$lt' : '$gt'] = `evt_${bound}`;
      const filter: Record<string, unknown> = { project: scope.project, livemode: scope.livemode };
      if (type !== null) filter.type = type;
      if (objectId !== null) filter.object_id = objectId;
      filter._id = range;
      const docs = await c
        .find(filter as Filter<EventDoc>, { projection: { json: 1 } })
        .sort({ _id: newerFirst ? -1 : 1 })
        .limit(limit)
        .toArray();
      return docs.map((d) => ({ key: bodyOf(d._id), id: d._id, json: d.json }));
    },
    async has(eventId) {
      if (!withinRetention(eventId, kept.nowMs, kept.retentionMs)) return false;
      const doc = await findByIdInScope(c, eventId, scope, { projection: { _id: 1 } });
      return doc !== null;
    },
  };
}

/**
 * A page of events, newest first. `object`: only the events of that object (an
 * extension of Stripe's list, for a payment's timeline: `GET /v1/events?object=pi_…`).
 */
export async function eventsPage(
  collections: Collections,
  scope: Scope,
  query: PageQuery & { type: string | null; object?: string | null },
  url: string,
  kept: EventsKept,
): Promise<string> {
  const objectId = query.object ?? null;
  const createdWanted = (query.type === null || query.type === PAYMENT_INTENT_CREATED) && (objectId === null || objectId.startsWith('pi_'));
  const created = createdWanted ? createdSource(collections.paymentIntents, scope, kept, objectId) : null;
  const recorded = recordedSource(collections.events, scope, query.type, kept, objectId);

  const cursor = query.startingAfter ?? query.endingBefore;
  if (cursor !== null) {
    // The cursor must name an event of the caller's scope, of any type.
    const all = [createdSource(collections.paymentIntents, scope, kept), recordedSource(collections.events, scope, null, kept)];
    const found = (await Promise.all(all.map((s) => s.has(cursor)))).some(Boolean);
    if (!found) throw errors.cursorMissing(query.startingAfter !== null ? 'starting_after' : 'ending_before', cursor);
  }
  const newerFirst = query.endingBefore === null;
  const bound = cursor === null ? null : bodyOf(cursor);
  // The intents first, then `events` (see above): one after the other.
  const fromIntents = created ? await created.fetch(bound, newerFirst, query.limit + 1) : [];
  const fromEvents = await recorded.fetch(bound, newerFirst, query.limit + 1);
  const byId = new Map([...fromIntents, ...fromEvents].map((item) => [item.id, item]));
  const merged = [...byId.values()].sort((a, b) => (a.key < b.key ? 1 : a.key > b.key ? -1 : 0) * (newerFirst ? 1 : -1));
  const hasMore = merged.length > query.limit;
  const page = merged.slice(0, query.limit);
  if (!newerFirst) page.reverse();
  return listEnvelopeJson(url, page.map((item) => item.json), hasMore);
}

/** One event by id, from whichever home holds it, in the caller's scope. */
export async function findEvent(collections: Collections, scope: Scope, eventId: string, kept: EventsKept): Promise<string | null> {
  if (!withinRetention(eventId, kept.nowMs, kept.retentionMs)) return null;
  const recorded = await findByIdInScope(collections.events, eventId, scope, { projection: { json: 1 } });
  if (recorded) return recorded.json;
  const objectId = objectIdOfCreatedEvent(eventId);
  if (objectId === eventId) return null;
  const pi = await findByIdInScope(collections.paymentIntents, objectId, scope, { projection: INTENT_FOR_EVENT });
  // Changed since `events` was read: its created event was recorded there first.
  return pi ? createdEventOf(collections, pi) : null;
}
