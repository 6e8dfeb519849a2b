/**
 * `GET /v1/payment_intents/search` (DESIGN section 18): Stripe's search, in Stripe's
 * shape (`object: "search_result"`, `next_page`, a `page` cursor), over MongoDB. It
 * reads the collection itself, not a search index fed later, so a write is found by
 * the next search. Every clause is an equality or a range on a field that an index
 * leads with after the scope (common/mongo.ts: `scope_status_id`,
 * `scope_phone_last4_id`, `scope_metadata_id`, and `scope_id` for `created`),
 * newest first; docs/storage.md gives the costs on each store.
 */
import type { Collection, Filter } from 'mongodb';
import { ApiError, errors } from '../../common/errors.js';
import type { PaymentIntentDoc } from '../../common/documents.js';
import { idBodyFloor, isId } from '../../common/ids.js';
import type { Scope } from '../../common/jobs.js';
import { matchesMetadata, parseSearchQuery, searchFilter, SearchQueryError } from '../../common/search-query.js';
import { checkQueryNames } from '../schemas/query.js';
import { DEFAULT_LIMIT, MAX_LIMIT } from '../schemas/lists.js';

export interface SearchQuery {
  query: string;
  limit: number;
  /** The last id of the page before (`next_page`), or null for the first page. */
  page: string | null;
}

export function parseSearchParams(params: URLSearchParams): SearchQuery {
  checkQueryNames(params, ['query', 'limit', 'page']);
  const query = params.get('query');
  if (query === null) throw errors.parameterMissing('query');
  if ([...query].length > 1000) throw errors.parameterInvalid('query', 'at most 1000 characters');
  const limitText = params.get('limit');
  let limit = DEFAULT_LIMIT;
  if (limitText !== null) {
    if (!/^[0-9]{1,3}$/.test(limitText) || Number(limitText) < 1 || Number(limitText) > MAX_LIMIT) {
      throw new ApiError('parameter_invalid_integer', `Invalid integer: the limit parameter must be a whole number from 1 to ${MAX_LIMIT}.`, 'limit');
    }
    limit = Number(limitText);
  }
  const page = params.get('page');
  if (page !== null && !isId('payment_intent', page)) throw errors.parameterInvalid('page', 'give the next_page of the previous result');
  return { query, limit, page };
}

/** One page of the intents of `scope` the query matches, as the search envelope's JSON. */
export async function searchPage(
  collection: Collection<PaymentIntentDoc>,
  scope: Scope,
  search: SearchQuery,
  options: { url: string; projection: Record<string, 0>; present: (doc: PaymentIntentDoc) => string; elemMatch: boolean },
): Promise<string> {
  let clauses;
  try {
    clauses = parseSearchQuery(search.query);
  } catch (err) {
    if (err instanceof SearchQueryError) throw errors.parameterInvalid('query', err.message);
    throw err;
  }
  const matched = searchFilter(clauses, (ms) => `pi_${idBodyFloor(Math.max(ms, 0))}`, { elemMatch: options.elemMatch });
  const exact = options.elemMatch || clauses.every((c) => c.field !== 'metadata');
  const docs: PaymentIntentDoc[] = [];
  let before = search.page;
  // Without `$elemMatch`, a document may match a metadata clause by two pairs: read
  // on past those until the page is full or the matches end.
  for (;;) {
    const parts: Array<Record<string, unknown>> = [{ project: scope.project, livemode: scope.livemode }, matched];
    if (before !== null) parts.push({ _id: { $lt: before } });
    const want = search.limit + 1 - docs.length;
    const batch = await collection
      .find({ $and: parts } as Filter<PaymentIntentDoc>, { projection: options.projection })
      .sort({ _id: -1 })
      .limit(want)
      .toArray();
    docs.push(...(exact ? batch : batch.filter((doc) => matchesMetadata(clauses, doc.metadata))));
    if (batch.length < want || docs.length > search.limit) break;
    before = batch[batch.length - 1]!._id;
  }
  const hasMore = docs.length > search.limit;
  const page = docs.slice(0, search.limit);
  const next = hasMore ? (page[page.length - 1]?._id ?? null) : null;
  return `{"object":"search_result","url":${JSON.stringify(options.url)},"has_more":${hasMore},"data":[${page.map(options.present).join(',')}],"next_page":${JSON.stringify(next)}}`;
}
