/**
 * Events live in two homes (common/documents.ts): `payment_intent.created` in its
 * object's document (`evt_X` is the created event of `pi_X`), every other type in
 * the `events` collection. Both kinds of ids share one time-ordered body after the
 * prefix, so a page of events is a merge of two `_id`-ordered queries, each limited
 * to the page size, compared on that body: the same cursor rules as every list, and
 * every query index-shaped for MongoDB.
 */
import type { Collection, Filter } from 'mongodb';
import { errors } from '../../common/errors.js';
import { createdEventId, objectIdOfCreatedEvent, PAYMENT_INTENT_CREATED } from '../../common/events.js';
import type { EventDoc, PaymentIntentDoc } from '../../common/documents.js';
import type { Scope } from '../../common/jobs.js';
import { findByIdInScope, type Collections } from '../../common/mongo.js';
import { listEnvelopeJson } from '../../common/presenters.js';
import type { PageQuery } from './pages.js';

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

function createdSource(c: Collection<PaymentIntentDoc>, scope: Scope): Source {
  return {
    async fetch(bound, newerFirst, limit) {
      const filter: Record<string, unknown> = { project: scope.project, livemode: scope.livemode };
      if (bound !== null) filter._id = { [newerFirst ? '$lt' : '$gt']: `pi_${bound}` };
      const docs = await c
        .find(filter as Filter<PaymentIntentDoc>, { projection: { created_event: 1 } })
        .sort({ _id: newerFirst ? -1 : 1 })
        .limit(limit)
        .toArray();
      return docs.map((d) => ({ key: bodyOf(d._id), id: createdEventId(d._id), json: d.created_event }));
    },
    async has(eventId) {
      if (objectIdOfCreatedEvent(eventId) === eventId) return false;
      const doc = await findByIdInScope(c, objectIdOfCreatedEvent(eventId), scope, { projection: { _id: 1 } });
      return doc !== null;
    },
  };
}

function transitionSource(c: Collection<EventDoc>, scope: Scope, type: string | null): Source {
  return {
    async fetch(bound, newerFirst, limit) {
      const filter: Record<string, unknown> = { project: scope.project, livemode: scope.livemode };
      if (type !== null) filter.type = type;
      if (bound !== null) filter._id = { [newerFirst ? '$lt' : '$gt']: `evt_${bound}` };
      const docs = await c
        .find(filter as Filter<EventDoc>, { projection: { json: 1 } })
        .sort({ _id: newerFirst ? -1 : 1 })
        .limit(limit)
        .toArray();
      return docs.map((d) => ({ key: bodyOf(d._id), id: d._id, json: d.json }));
    },
    async has(eventId) {
      const doc = await findByIdInScope(c, eventId, scope, { projection: { _id: 1 } });
      return doc !== null;
    },
  };
}

export async function eventsPage(collections: Collections, scope: Scope, query: PageQuery & { type: string | null }, url: string): Promise<string> {
  const sources: Source[] = [];
  if (query.type === null || query.type === PAYMENT_INTENT_CREATED) sources.push(createdSource(collections.paymentIntents, scope));
  if (query.type !== PAYMENT_INTENT_CREATED) sources.push(transitionSource(collections.events, scope, query.type));
  const all = query.type === null ? sources : [createdSource(collections.paymentIntents, scope), transitionSource(collections.events, scope, null)];

  const cursor = query.startingAfter ?? query.endingBefore;
  if (cursor !== null) {
    // The cursor must name an event of the caller's scope, of any type.
    const found = (await Promise.all(all.map((s) => s.has(cursor)))).some(Boolean);
    if (!found) throw errors.cursorMissing(query.startingAfter !== null ? 'starting_after' : 'ending_before', cursor);
  }
  const newerFirst = query.endingBefore === null;
  const bound = cursor === null ? null : bodyOf(cursor);
  const lists = await Promise.all(sources.map((s) => s.fetch(bound, newerFirst, query.limit + 1)));
  const merged = lists.flat().sort((a, b) => (a.key < b.key ? 1 : a.key > b.key ? -1 : 0) * (newerFirst ? 1 : -1));
  const hasMore = merged.length > query.limit;
  const page = merged.slice(0, query.limit);
  if (!newerFirst) page.reverse();
  return listEnvelopeJson(url, page.map((item) => item.json), hasMore);
}

/** One event by id, from whichever home holds it, in the caller's scope. */
export async function findEvent(collections: Collections, scope: Scope, eventId: string): Promise<string | null> {
  const other = await findByIdInScope(collections.events, eventId, scope, { projection: { json: 1 } });
  if (other) return other.json;
  const objectId = objectIdOfCreatedEvent(eventId);
  if (objectId === eventId) return null;
  const pi = await findByIdInScope(collections.paymentIntents, objectId, scope, { projection: { created_event: 1 } });
  return pi?.created_event ?? null;
}
