import type { Collection, Filter } from 'mongodb';
import { findByIdInScope } from '../../common/mongo.js';
import { errors } from '../../common/errors.js';
import { isId, type IdKind } from '../../common/ids.js';
import type { Scope } from '../../common/jobs.js';
import { listEnvelopeJson } from '../../common/presenters.js';

export interface PageQuery {
  limit: number;
  startingAfter: string | null;
  endingBefore: string | null;
}

interface Scoped {
  _id: string;
  project: string;
  livemode: boolean;
}

/**
 * One page of a collection, newest first, by `_id` (ids are time-ordered). A page
 * is defined by the cursor object's id, never by an offset, so objects created while
 * a client pages through neither shift nor repeat the pages it has not read yet.
 * `present` returns each item's JSON, so stored JSON (events) is not parsed again.
 */
export async function listPage<T extends Scoped>(
  collection: Collection<T>,
  scope: Scope,
  query: PageQuery,
  options: {
    url: string;
    filter?: Filter<T>;
    present: (doc: T) => string;
    projection?: Record<string, 0>;
    /** The id the client gave for a stored id, in errors (events are listed by their object's id). */
    cursorIdOf?: (storedId: string) => string;
  },
): Promise<string> {
  const base = { project: scope.project, livemode: scope.livemode, ...options.filter } as Filter<T>;
  const cursorId = query.startingAfter ?? query.endingBefore;
  const newerFirst = query.endingBefore === null;
  // Without an extra filter, the cursor object is fetched with its page ($lte/$gte):
  // one query instead of two (on the local stack's store each query scans the
  // collection: docs/storage.md).
  const inline = cursorId !== null && !options.filter;
  if (cursorId !== null && !inline) {
    const exists = await findByIdInScope(collection, cursorId, scope, { projection: { _id: 1 } });
    if (!exists) throw errors.cursorMissing(cursorParam(query), options.cursorIdOf?.(cursorId) ?? cursorId);
  }
  const filter = { ...base } as Record<string, unknown>;
  if (query.startingAfter !== null) filter._id = { [inline ? '$lte' : '$lt']: query.startingAfter };
  if (query.endingBefore !== null) filter._id = { [inline ? '$gte' : '$gt']: query.endingBefore };
  let docs = (await collection
    .find(filter as Filter<T>, options.projection ? { projection: options.projection } : {})
    .sort({ _id: newerFirst ? -1 : 1 })
    .limit(query.limit + (inline ? 2 : 1))
    .toArray()) as unknown as T[];
  if (inline) {
    if (docs[0]?._id !== cursorId) throw errors.cursorMissing(cursorParam(query), options.cursorIdOf?.(cursorId as string) ?? (cursorId as string));
    docs = docs.slice(1);
  }
  const hasMore = docs.length > query.limit;
  const page = docs.slice(0, query.limit);
  if (!newerFirst) page.reverse();
  return listEnvelopeJson(options.url, page.map(options.present), hasMore);
}

function cursorParam(query: PageQuery): string {
  return query.startingAfter !== null ? 'starting_after' : 'ending_before';
}

/**
 * The object `id` names in the caller's scope, or 404 `resource_missing` (param `id`):
 * another project's object, or a malformed id, is as missing as an unknown one.
 * `storedId` maps a public id to the stored one (an event lives in its object).
 */
export async function findInScope<T extends Scoped>(
  collection: Collection<T>,
  scope: Scope,
  id: string,
  options: { kind: IdKind; projection?: Record<string, 0 | 1>; storedId?: (id: string) => string },
): Promise<T> {
  const doc = isId(options.kind, id)
    ? await findByIdInScope(collection, options.storedId?.(id) ?? id, scope, { projection: options.projection })
    : null;
  if (!doc) throw errors.resourceMissing(options.kind, id, 'id');
  return doc;
}
