import type { SchemaLike } from 'joi';

import { ApiError, errors } from '../../common/errors.js';
import { isId, type IdKind } from '../../common/ids.js';
import { EVENT_TYPES } from '../../common/events.js';
import { bodySchema, type BodySchema } from './body.js';
import { describeValue, type ErrorTable, type Raise } from './joi-errors.js';
import { Joi } from './joi.js';
import { checkQuery } from './query.js';

export const DEFAULT_LIMIT = 10;
export const MAX_LIMIT = 100;

export interface ListQuery {
  limit: number;
  startingAfter: string | null;
  endingBefore: string | null;
  /** The event type filter; null when not given (or not offered). */
  type: string | null;
  /** The events of one object (`object=pi_…`); null when not given (or not offered). */
  object: string | null;
}

export interface ListQueryOptions {
  /** The kind of the listed objects: cursors must be ids of this kind. */
  idKind: IdKind;
  extra?: { type?: true };
}

/** Plain decimal digits from 1 to 100; every other spelling gets the one message. */
const limit = () => Joi.string().integerBetween(1, MAX_LIMIT);
const limitInvalid: Raise = ({ param, value }) =>
  new ApiError('parameter_invalid_integer', `Invalid integer: ${describeValue(value)}. The limit parameter must be a whole number from 1 to ${MAX_LIMIT}.`, param);

/**
 * A cursor: an id of the listed kind (`$idKind`). Whether it names an existing
 * object is for the caller to check against the database (answering with
 * `errors.cursorMissing`); an id of the wrong shape or kind cannot exist, so it is
 * refused here with the same error.
 */
const cursor = () =>
  Joi.string().custom((value: string, helpers) => (isId((helpers.prefs.context as { idKind: IdKind }).idKind, value) ? value : helpers.error('cursor.unknown')));
const CURSOR_ERRORS: Record<string, Raise> = {
  'string.empty': ({ param }) => new ApiError('parameter_invalid_empty', `Invalid ${param}: it must be the id of an object, not empty.`, param),
  'cursor.unknown': ({ param, value }) => errors.cursorMissing(param, value as string),
};

const eventTypeInvalid: Raise = ({ param, value }) =>
  new ApiError('event_type_invalid', `Invalid type: ${describeValue(value)} is not an event type. Known types: ${EVENT_TYPES.join(', ')}.`, param);

/** The parameters of every list, then a list's own (`type`, `payment_intent`). */
export function listQuerySchema(extra: Record<string, SchemaLike> = {}, extraErrors: ErrorTable = {}): BodySchema {
  return bodySchema(
    {
      limit: limit(),
      // Both cursors at once is the conflict, whatever they name: checked before either.
      starting_after: Joi.string().custom((value: string, helpers) =>
        (helpers.state.ancestors[0] as Record<string, unknown>).ending_before === undefined ? value : helpers.error('cursor.conflict'),
      ).concat(cursor()),
      ending_before: cursor(),
      ...extra,
    },
    {
      limit: { 'string.empty': limitInvalid, 'string.integerBetween': limitInvalid },
      starting_after: {
        ...CURSOR_ERRORS,
        'cursor.conflict': () => errors.parameterConflict('ending_before', 'starting_after and ending_before cannot be used together: page in one direction at a time.'),
      },
      ending_before: CURSOR_ERRORS,
      ...extraErrors,
    },
  );
}

export const LIST_QUERY = listQuerySchema();
const objectInvalid: Raise = () => errors.parameterInvalid('object', 'give the id of an object, e.g. pi_…');
export const EVENT_LIST_QUERY = listQuerySchema(
  { type: Joi.string().valid(...EVENT_TYPES), object: Joi.string().pattern(/^[a-z]{2,4}_[0-9A-Za-z]{26}$/) },
  {
    type: { 'string.empty': eventTypeInvalid, 'any.only': eventTypeInvalid },
    object: { 'string.empty': objectInvalid, 'string.pattern.base': objectInvalid },
  },
);

/** The cursors and limit of a list's checked parameters. */
export function listOf(params: Record<string, string>): ListQuery {
  return {
    limit: params.limit === undefined ? DEFAULT_LIMIT : Number(params.limit),
    startingAfter: params.starting_after ?? null,
    endingBefore: params.ending_before ?? null,
    type: params.type ?? null,
    object: params.object ?? null,
  };
}

/** Checks the shape of a list's query string. */
export function parseListQuery(query: URLSearchParams, options: ListQueryOptions): ListQuery {
  const params = checkQuery(options.extra?.type ? EVENT_LIST_QUERY : LIST_QUERY, query, { idKind: options.idKind });
  return listOf(params);
}
