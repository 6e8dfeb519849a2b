import test from 'ava';

import { parseListQuery, type ListQueryOptions } from '../../../api/schemas/lists.js';
import { rejects } from '../../helpers/rejects.js';
import { IdGenerator, type IdKind } from '../../../common/ids.js';

const ids = new IdGenerator(Date.now);
const newId = (kind: IdKind) => ids.next(kind);

const PAYMENT_INTENTS: ListQueryOptions = { idKind: 'payment_intent' };
const EVENTS: ListQueryOptions = { idKind: 'event', extra: { type: true } };

function parse(query: string, options: ListQueryOptions = PAYMENT_INTENTS) {
  return parseListQuery(new URLSearchParams(query), options);
}

test('an empty query gives the defaults', (t) => {
  t.deepEqual(parse(''), { limit: 10, startingAfter: null, endingBefore: null, type: null, object: null });
});

// limit

test('limit accepts 1, 100 and leading zeros', (t) => {
  t.is(parse('limit=1').limit, 1);
  t.is(parse('limit=100').limit, 100);
  t.is(parse('limit=007').limit, 7);
});

for (const limit of ['', 'abc', '1.5', '0', '101', '-1', '+5', ' 5', '1e2', '0x10', '١', '99999999999999999999']) {
  test(`limit ${JSON.stringify(limit)} is parameter_invalid_integer`, (t) => {
    const error = rejects(t, () => parse(`limit=${encodeURIComponent(limit)}`), 'parameter_invalid_integer', 'limit');
    t.regex(error.message, /limit/);
  });
}

// Unknown and repeated parameters

test('an unknown parameter is parameter_unknown with its name as param', (t) => {
  rejects(t, () => parse('limit=5&offset=10'), 'parameter_unknown', 'offset');
  rejects(t, () => parse('Limit=5'), 'parameter_unknown', 'Limit');
  rejects(t, () => parse('limit[]=5'), 'parameter_unknown', 'limit[]');
});

test('type is an unknown parameter unless the list offers it', (t) => {
  rejects(t, () => parse('type=payment_intent.created'), 'parameter_unknown', 'type');
});

test('a repeated parameter is parameter_invalid with its name as param', (t) => {
  rejects(t, () => parse('limit=5&limit=6'), 'parameter_invalid', 'limit');
  rejects(t, () => parse('limit=5&limit=5'), 'parameter_invalid', 'limit');
  rejects(t, () => parse(`ending_before=&ending_before=${newId('payment_intent')}`), 'parameter_invalid', 'ending_before');
});

test('unknown parameters are reported before repeated ones, and both before values', (t) => {
  rejects(t, () => parse('limit=5&limit=6&foo=1'), 'parameter_unknown', 'foo');
  rejects(t, () => parse('limit=abc&starting_after=x&starting_after=y'), 'parameter_invalid', 'starting_after');
});

// Cursors

test('cursors accept an id of the listed kind', (t) => {
  const id = newId('payment_intent');
  t.is(parse(`starting_after=${id}`).startingAfter, id);
  t.is(parse(`ending_before=${id}`).endingBefore, id);
  const event = newId('event');
  t.is(parse(`starting_after=${event}`, EVENTS).startingAfter, event);
});

test('an empty cursor is parameter_invalid_empty', (t) => {
  rejects(t, () => parse('starting_after='), 'parameter_invalid_empty', 'starting_after');
  rejects(t, () => parse('ending_before='), 'parameter_invalid_empty', 'ending_before');
});

test('a cursor that cannot be an id of the listed kind is a 400 resource_missing', (t) => {
  const pi = newId('payment_intent');
  for (const cursor of ['pi_123', 'nope', pi + 'x', pi.slice(0, -1), newId('event'), pi.replace('pi_', 'PI_')]) {
    rejects(t, () => parse(`starting_after=${encodeURIComponent(cursor)}`), 'resource_missing', 'starting_after');
    rejects(t, () => parse(`ending_before=${encodeURIComponent(cursor)}`), 'resource_missing', 'ending_before');
  }
  rejects(t, () => parse(`starting_after=${pi}`, { idKind: 'webhook_endpoint' }), 'resource_missing', 'starting_after');
});

test('starting_after with ending_before is parameter_conflict on ending_before', (t) => {
  const error = rejects(
    t,
    () => parse(`starting_after=${newId('payment_intent')}&ending_before=${newId('payment_intent')}`),
    'parameter_conflict',
    'ending_before',
  );
  t.regex(error.message, /starting_after.*ending_before/);
});

test('both cursors at once are parameter_conflict before either is looked at', (t) => {
  for (const [after, before] of [['x', 'y'], ['pi_123', newId('payment_intent')], [newId('payment_intent'), 'nope']]) {
    rejects(t, () => parse(`starting_after=${after}&ending_before=${before}`), 'parameter_conflict', 'ending_before');
    rejects(t, () => parse(`ending_before=${before}&starting_after=${after}`), 'parameter_conflict', 'ending_before');
  }
});

// type

test('type accepts an event type of the catalog', (t) => {
  t.is(parse('type=payment_intent.created', EVENTS).type, 'payment_intent.created');
  t.is(parse('', EVENTS).type, null);
});

for (const type of ['payment_intent.paid', '*', '', 'PAYMENT_INTENT.CREATED']) {
  test(`type ${JSON.stringify(type)} is event_type_invalid`, (t) => {
    rejects(t, () => parse(`type=${encodeURIComponent(type)}`, EVENTS), 'event_type_invalid', 'type');
  });
}

test('every value is returned together', (t) => {
  const id = newId('event');
  t.deepEqual(parse(`type=payment_intent.created&limit=100&ending_before=${id}`, EVENTS), {
    limit: 100,
    startingAfter: null,
    endingBefore: id,
    type: 'payment_intent.created',
    object: null,
  });
});

test('object names one object by its id; anything else is parameter_invalid', (t) => {
  const id = newId('payment_intent');
  t.is(parse(`object=${id}`, EVENTS).object, id);
  for (const bad of ['object=', 'object=pi_short', 'object=not%20an%20id']) rejects(t, () => parse(bad, EVENTS), 'parameter_invalid', 'object');
});
