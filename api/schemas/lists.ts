import { ApiError, errors } from '../../common/errors.js';
import { isId, type IdKind } from '../../common/ids.js';
import { EVENT_TYPES, isEventType } from '../../common/events.js';
import { checkQueryNames } from './query.js';
import { describeValue } from './validate.js';

export const DEFAULT_LIMIT = 10;
export const MAX_LIMIT = 100;

export interface ListQuery {
  limit: number;
  startingAfter: string | null;
  endingBefore: string | null;
  /** The event type filter; null when not given (or not offered). */
  type: string | null;
}

export interface ListQueryOptions {
  /** The kind of the listed objects: cursors must be ids of this kind. */
  idKind: IdKind;
  extra?: { type?: true };
}

function parseLimit(value: string | null): number {
  if (value === null) return DEFAULT_LIMIT;
  const limit = /^[0-9]+$/.test(value) ? Number(value) : NaN;
  if (!(limit >= 1 && limit <= MAX_LIMIT)) {
    throw new ApiError(
      'parameter_invalid_integer',
      `Invalid integer: ${describeValue(value)}. The limit parameter must be a whole number from 1 to ${MAX_LIMIT}.`,
      'limit',
    );
  }
  return limit;
}

function parseCursor(value: string | null, idKind: IdKind, param: 'starting_after' | 'ending_before'): string | null {
  if (value === null) return null;
  if (value === '') {
    throw new ApiError('parameter_invalid_empty', `Invalid ${param}: it must be the id of an object, not empty.`, param);
  }
  if (!isId(idKind, value)) throw errors.cursorMissing(param, value);
  return value;
}

function parseType(value: string | null): string | null {
  if (value === null) return null;
  if (!isEventType(value)) {
    throw new ApiError(
      'event_type_invalid',
      `Invalid type: ${describeValue(value)} is not an event type. Known types: ${EVENT_TYPES.join(', ')}.`,
      'type',
    );
  }
  return value;
}

/**
 * Checks the shape of a list's query string. Whether a cursor names an existing
 * object is for the caller to check against the database (answering with
 * `errors.cursorMissing`); an id of the wrong shape or kind cannot exist, so it is
 * refused here with the same error.
 */
export function parseListQuery(query: URLSearchParams, options: ListQueryOptions): ListQuery {
  const allowed = ['limit', 'starting_after', 'ending_before'];
  if (options.extra?.type) allowed.push('type');
  checkQueryNames(query, allowed);
  const limit = parseLimit(query.get('limit'));
  const startingAfter = parseCursor(query.get('starting_after'), options.idKind, 'starting_after');
  const endingBefore = parseCursor(query.get('ending_before'), options.idKind, 'ending_before');
  if (startingAfter !== null && endingBefore !== null) {
    throw errors.parameterConflict('ending_before', 'starting_after and ending_before cannot be used together: page in one direction at a time.');
  }
  const type = parseType(options.extra?.type ? query.get('type') : null);
  return { limit, startingAfter, endingBefore, type };
}
