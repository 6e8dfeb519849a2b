import test from 'ava';

import { parseUpdate } from '../../../api/schemas/payment-intent-lifecycle.js';
import { parsePaymentIntentCreate } from '../../../api/schemas/payment-intents.js';
import type { ErrorCode } from '../../../common/errors.js';
import { rejects } from '../../helpers/rejects.js';

const NOW = 1_700_000_000;
const DAY = 86_400;
const ctx = { operators: ['mtn_momo', 'orange_money', 'wave'], defaultCurrency: 'xof', now: NOW };

function parse(body: Record<string, unknown>) {
  return parsePaymentIntentCreate(body, ctx);
}

test('fills in every default when only amount is given', (t) => {
  t.deepEqual(parse({ amount: 500 }), {
    amount: 500,
    currency: 'xof',
    description: null,
    metadata: [],
    allowed_operators: ['mtn_momo', 'orange_money', 'wave'],
    selected_operator: null,
    automatic_operator: true,
    expires_at: NOW + DAY,
  });
});

test('the default allowed_operators is a copy of the catalog, not the catalog itself', (t) => {
  const input = parse({ amount: 1 });
  t.not(input.allowed_operators, ctx.operators);
  input.allowed_operators.pop();
  t.deepEqual(ctx.operators, ['mtn_momo', 'orange_money', 'wave']);
});

test('keeps every given field', (t) => {
  const input = parse({
    amount: 1234,
    currency: 'EUR',
    description: 'Order #42',
    metadata: { order: '42', color: 'blue' },
    allowed_operators: ['wave', 'mtn_momo'],
    selected_operator: 'mtn_momo',
    automatic_operator: false,
    expires_at: NOW + 3600,
  });
  t.deepEqual(input, {
    amount: 1234,
    currency: 'eur',
    description: 'Order #42',
    metadata: [
      { k: 'order', v: '42' },
      { k: 'color', v: 'blue' },
    ],
    allowed_operators: ['wave', 'mtn_momo'],
    selected_operator: 'mtn_momo',
    automatic_operator: false,
    expires_at: NOW + 3600,
  });
});

// Unknown fields

test('an unknown field is parameter_unknown, with the field as param', (t) => {
  const error = rejects(t, () => parse({ amount: 1, amout: 2 }), 'parameter_unknown', 'amout');
  t.is(error.message, 'Received unknown parameter: amout.');
});

test('unknown fields are reported before any other problem', (t) => {
  rejects(t, () => parse({ amount: 'x', currency: 5, extra: true }), 'parameter_unknown', 'extra');
  rejects(t, () => parse({ livemode: true }), 'parameter_unknown', 'livemode');
});

test('a __proto__ field is an unknown field like any other', (t) => {
  rejects(t, () => parse(JSON.parse('{"amount": 1, "__proto__": {"x": 1}}') as Record<string, unknown>), 'parameter_unknown', '__proto__');
});

// amount

test('amount is required', (t) => {
  const error = rejects(t, () => parse({ currency: 'usd' }), 'parameter_missing', 'amount');
  t.is(error.message, 'Missing required param: amount.');
});

for (const [label, amount] of [
  ['a numeric string', '100'],
  ['a negative float', -1.5],
  ['true', true],
  ['null', null],
  ['an array', [100]],
  ['an object', { value: 100 }],
] as const) {
  test(`amount as ${label} is parameter_invalid_integer`, (t) => {
    const error = rejects(t, () => parse({ amount }), 'parameter_invalid_integer', 'amount');
    t.regex(error.message, /^Invalid integer: .*amount/);
  });
}

test('an amount in major units says it is in the minor unit, with what to send by the currency\'s exponent', (t) => {
  const message = (body: Record<string, unknown>) => rejects(t, () => parse(body), 'parameter_invalid_integer', 'amount').message;
  t.is(message({ amount: '50.00', currency: 'kes' }), "Invalid amount: 50.00 is not an integer. Amounts are integers in the currency's minor unit: for 50.00 KES send 5000.");
  t.is(message({ amount: 10.5, currency: 'GHS' }), "Invalid amount: 10.5 is not an integer. Amounts are integers in the currency's minor unit: for 10.50 GHS send 1050.");
  t.is(message({ amount: '50.00' }), "Invalid amount: 50.00 is not an integer. Amounts are integers in the currency's minor unit, and XOF has none: for 50 XOF send 50.", 'the default currency');
  t.is(message({ amount: '12.5', currency: 'bhd' }), "Invalid amount: 12.5 is not an integer. Amounts are integers in the currency's minor unit: for 12.500 BHD send 12500.");
  t.is(message({ amount: '0.001', currency: 'kes' }), "Invalid amount: 0.001 is not an integer. Amounts are integers in the currency's minor unit: for 1.00 KES send 100.");
  t.is(message({ amount: '1234.567', currency: 'kes' }), "Invalid amount: 1234.567 is not an integer. Amounts are integers in the currency's minor unit: for 1 234.56 KES send 123456.");
  t.regex(message({ amount: 'abc', currency: 'kes' }), /^Invalid integer: "abc"\. The amount parameter must be a whole number/);
  const update = rejects(t, () => parseUpdate({ amount: '50.00' }, { operators: ctx.operators, now: NOW }), 'parameter_invalid_integer', 'amount');
  t.is(update.message, "Invalid amount: 50.00 is not an integer. Amounts are integers in the currency's minor unit: 5000 is 50.00 KES, and 5 000 XOF (XOF has none).", "an update does not know the intent's currency");
});

test('amount accepts the bounds 1 and 999999999999', (t) => {
  t.is(parse({ amount: 1 }).amount, 1);
  t.is(parse({ amount: 999_999_999_999 }).amount, 999_999_999_999);
});

test('amount below 1 is amount_too_small', (t) => {
  rejects(t, () => parse({ amount: 0 }), 'amount_too_small', 'amount');
  rejects(t, () => parse({ amount: -1 }), 'amount_too_small', 'amount');
  rejects(t, () => parse({ amount: -1e300 }), 'amount_too_small', 'amount');
});

test('amount above 999999999999 is amount_too_large, even beyond 2^53', (t) => {
  rejects(t, () => parse({ amount: 1_000_000_000_000 }), 'amount_too_large', 'amount');
  rejects(t, () => parse({ amount: 2 ** 60 }), 'amount_too_large', 'amount');
  rejects(t, () => parse({ amount: 1e300 }), 'amount_too_large', 'amount');
});

// currency

test('currency is case-insensitive in and lowercase out', (t) => {
  t.is(parse({ amount: 1, currency: 'XOF' }).currency, 'xof');
  t.is(parse({ amount: 1, currency: 'Eur' }).currency, 'eur');
  t.is(parse({ amount: 1, currency: 'usd' }).currency, 'usd');
});

test('currency defaults to the configured default currency', (t) => {
  t.is(parsePaymentIntentCreate({ amount: 1 }, { ...ctx, defaultCurrency: 'xaf' }).currency, 'xaf');
});

for (const currency of ['xyz', 'us', 'usdd', '', ' usd', 'dollars']) {
  test(`currency ${JSON.stringify(currency)} is currency_invalid`, (t) => {
    rejects(t, () => parse({ amount: 1, currency }), 'currency_invalid', 'currency');
  });
}

for (const currency of [840, null, ['usd'], true]) {
  test(`currency ${JSON.stringify(currency)} is parameter_invalid_string`, (t) => {
    rejects(t, () => parse({ amount: 1, currency }), 'parameter_invalid_string', 'currency');
  });
}

// description

test('description may be null or empty', (t) => {
  t.is(parse({ amount: 1, description: null }).description, null);
  t.is(parse({ amount: 1, description: '' }).description, '');
});

test('description accepts 1000 code points, astral characters counting as one', (t) => {
  const emoji = '😀'.repeat(1000);
  t.is(emoji.length, 2000);
  t.is(parse({ amount: 1, description: emoji }).description, emoji);
  t.is(parse({ amount: 1, description: 'a'.repeat(1000) }).description, 'a'.repeat(1000));
});

test('description of 1001 code points is parameter_invalid_string', (t) => {
  rejects(t, () => parse({ amount: 1, description: 'a'.repeat(1001) }), 'parameter_invalid_string', 'description');
  rejects(t, () => parse({ amount: 1, description: '😀'.repeat(1001) }), 'parameter_invalid_string', 'description');
});

test('description containing NUL is parameter_invalid_string', (t) => {
  rejects(t, () => parse({ amount: 1, description: 'a\u0000b' }), 'parameter_invalid_string', 'description');
});

test('description that is not a string is parameter_invalid_string', (t) => {
  rejects(t, () => parse({ amount: 1, description: 5 }), 'parameter_invalid_string', 'description');
  rejects(t, () => parse({ amount: 1, description: { text: 'x' } }), 'parameter_invalid_string', 'description');
});

// metadata

test('metadata keys may be ".", "$" and "__proto__", kept as pairs in order', (t) => {
  const body = JSON.parse('{"amount": 1, "metadata": {"a.b": "1", "$set": "2", "__proto__": "3", "constructor": "4"}}') as Record<
    string,
    unknown
  >;
  t.deepEqual(parse(body).metadata, [
    { k: 'a.b', v: '1' },
    { k: '$set', v: '2' },
    { k: '__proto__', v: '3' },
    { k: 'constructor', v: '4' },
  ]);
});

test('metadata values may be empty strings', (t) => {
  t.deepEqual(parse({ amount: 1, metadata: { note: '' } }).metadata, [{ k: 'note', v: '' }]);
});

for (const [label, metadata] of [
  ['null', null],
  ['an array', [['k', 'v']]],
  ['a string', 'k=v'],
  ['a number', 1],
] as const) {
  test(`metadata as ${label} is metadata_invalid on metadata`, (t) => {
    rejects(t, () => parse({ amount: 1, metadata }), 'metadata_invalid', 'metadata');
  });
}

function keys(count: number): Record<string, string> {
  return Object.fromEntries(Array.from({ length: count }, (_, i) => [`key${i}`, 'v']));
}

test('metadata accepts 50 keys', (t) => {
  t.is(parse({ amount: 1, metadata: keys(50) }).metadata.length, 50);
});

test('metadata with 51 keys is metadata_invalid on metadata', (t) => {
  rejects(t, () => parse({ amount: 1, metadata: keys(51) }), 'metadata_invalid', 'metadata');
});

test('metadata keys of 1 and 40 code points are accepted', (t) => {
  const long = '😀'.repeat(40);
  t.deepEqual(parse({ amount: 1, metadata: { k: 'v', [long]: 'v' } }).metadata, [
    { k: 'k', v: 'v' },
    { k: long, v: 'v' },
  ]);
});

test('a metadata key of 41 code points is metadata_invalid on metadata[key]', (t) => {
  const key = 'k'.repeat(41);
  rejects(t, () => parse({ amount: 1, metadata: { [key]: 'v' } }), 'metadata_invalid', `metadata[${key}]`);
});

test('an empty metadata key is metadata_invalid on metadata[]', (t) => {
  rejects(t, () => parse({ amount: 1, metadata: { '': 'v' } }), 'metadata_invalid', 'metadata[]');
});

test('a metadata key containing NUL is metadata_invalid on that key', (t) => {
  rejects(t, () => parse({ amount: 1, metadata: { 'a\u0000': 'v' } }), 'metadata_invalid', 'metadata[a\u0000]');
});

test('metadata values of 500 code points are accepted, 501 are metadata_invalid', (t) => {
  t.is(parse({ amount: 1, metadata: { note: '😀'.repeat(500) } }).metadata[0]?.v, '😀'.repeat(500));
  rejects(t, () => parse({ amount: 1, metadata: { ok: 'v', note: 'a'.repeat(501) } }), 'metadata_invalid', 'metadata[note]');
});

test('a metadata value containing NUL is metadata_invalid on its key', (t) => {
  rejects(t, () => parse({ amount: 1, metadata: { note: 'a\u0000b' } }), 'metadata_invalid', 'metadata[note]');
});

test('a metadata value that is not a string is metadata_invalid on its key', (t) => {
  rejects(t, () => parse({ amount: 1, metadata: { count: 3 } }), 'metadata_invalid', 'metadata[count]');
  rejects(t, () => parse({ amount: 1, metadata: { gone: null } }), 'metadata_invalid', 'metadata[gone]');
  rejects(t, () => parse({ amount: 1, metadata: { nested: { a: 'b' } } }), 'metadata_invalid', 'metadata[nested]');
});

// allowed_operators

test('allowed_operators keeps the given subset in the given order', (t) => {
  t.deepEqual(parse({ amount: 1, allowed_operators: ['wave', 'mtn_momo'] }).allowed_operators, ['wave', 'mtn_momo']);
});

for (const allowed of ['wave', null, { wave: true }, 3]) {
  test(`allowed_operators ${JSON.stringify(allowed)} is parameter_invalid`, (t) => {
    rejects(t, () => parse({ amount: 1, allowed_operators: allowed }), 'parameter_invalid', 'allowed_operators');
  });
}

test('an empty allowed_operators is parameter_invalid_empty', (t) => {
  rejects(t, () => parse({ amount: 1, allowed_operators: [] }), 'parameter_invalid_empty', 'allowed_operators');
});

test('a non-string operator is parameter_invalid_string on its index', (t) => {
  rejects(t, () => parse({ amount: 1, allowed_operators: ['wave', 7] }), 'parameter_invalid_string', 'allowed_operators[1]');
  rejects(t, () => parse({ amount: 1, allowed_operators: [null] }), 'parameter_invalid_string', 'allowed_operators[0]');
});

test('an operator outside the catalog is operator_invalid on its index', (t) => {
  rejects(t, () => parse({ amount: 1, allowed_operators: ['mtn_momo', 'wave', 'paypal'] }), 'operator_invalid', 'allowed_operators[2]');
  rejects(t, () => parse({ amount: 1, allowed_operators: ['WAVE'] }), 'operator_invalid', 'allowed_operators[0]');
});

test('a repeated operator is parameter_invalid on its second occurrence', (t) => {
  rejects(t, () => parse({ amount: 1, allowed_operators: ['wave', 'mtn_momo', 'wave'] }), 'parameter_invalid', 'allowed_operators[2]');
});

test('operator items are checked one by one, in order', (t) => {
  rejects(t, () => parse({ amount: 1, allowed_operators: ['wave', 'wave', 5] }), 'parameter_invalid', 'allowed_operators[1]');
  rejects(t, () => parse({ amount: 1, allowed_operators: ['nope', 5] }), 'operator_invalid', 'allowed_operators[0]');
});

// selected_operator and automatic_operator

test('a selected_operator from the catalog turns automatic_operator off by default', (t) => {
  const input = parse({ amount: 1, selected_operator: 'wave' });
  t.is(input.selected_operator, 'wave');
  t.false(input.automatic_operator);
});

test('a null selected_operator is the same as none', (t) => {
  const input = parse({ amount: 1, selected_operator: null });
  t.is(input.selected_operator, null);
  t.true(input.automatic_operator);
});

test('selected_operator must be one of the given allowed_operators', (t) => {
  rejects(t, () => parse({ amount: 1, allowed_operators: ['wave'], selected_operator: 'mtn_momo' }), 'operator_invalid', 'selected_operator');
});

test('selected_operator outside the catalog is operator_invalid', (t) => {
  rejects(t, () => parse({ amount: 1, selected_operator: 'paypal' }), 'operator_invalid', 'selected_operator');
  rejects(t, () => parse({ amount: 1, selected_operator: '' }), 'operator_invalid', 'selected_operator');
});

test('a non-string selected_operator is parameter_invalid_string', (t) => {
  rejects(t, () => parse({ amount: 1, selected_operator: 1 }), 'parameter_invalid_string', 'selected_operator');
  rejects(t, () => parse({ amount: 1, selected_operator: ['wave'] }), 'parameter_invalid_string', 'selected_operator');
});

test('automatic_operator may be given explicitly', (t) => {
  t.false(parse({ amount: 1, automatic_operator: false }).automatic_operator);
  t.true(parse({ amount: 1, automatic_operator: true }).automatic_operator);
  t.false(parse({ amount: 1, selected_operator: 'wave', automatic_operator: false }).automatic_operator);
});

for (const automatic of ['true', 1, 0, null]) {
  test(`automatic_operator ${JSON.stringify(automatic)} is parameter_invalid_boolean`, (t) => {
    rejects(t, () => parse({ amount: 1, automatic_operator: automatic }), 'parameter_invalid_boolean', 'automatic_operator');
  });
}

test('automatic_operator true with a selected_operator is parameter_conflict', (t) => {
  rejects(t, () => parse({ amount: 1, selected_operator: 'wave', automatic_operator: true }), 'parameter_conflict', 'automatic_operator');
});

// expires_at

test('expires_at accepts exactly 60 seconds and exactly 30 days from now', (t) => {
  t.is(parse({ amount: 1, expires_at: NOW + 60 }).expires_at, NOW + 60);
  t.is(parse({ amount: 1, expires_at: NOW + 30 * DAY }).expires_at, NOW + 30 * DAY);
});

test('expires_at one second outside the window is parameter_out_of_range', (t) => {
  rejects(t, () => parse({ amount: 1, expires_at: NOW + 59 }), 'parameter_out_of_range', 'expires_at');
  rejects(t, () => parse({ amount: 1, expires_at: NOW + 30 * DAY + 1 }), 'parameter_out_of_range', 'expires_at');
  rejects(t, () => parse({ amount: 1, expires_at: NOW - DAY }), 'parameter_out_of_range', 'expires_at');
});

for (const expiresAt of [String(NOW + DAY), NOW + DAY + 0.5, null, true]) {
  test(`expires_at ${JSON.stringify(expiresAt)} is parameter_invalid_integer`, (t) => {
    rejects(t, () => parse({ amount: 1, expires_at: expiresAt }), 'parameter_invalid_integer', 'expires_at');
  });
}

// Order

test('fields are checked in contract order, the first problem winning', (t) => {
  const body: Record<string, unknown> = {
    expires_at: 0,
    automatic_operator: 'yes',
    selected_operator: 5,
    allowed_operators: [],
    metadata: [],
    description: 5,
    currency: 'xyz',
    amount: 0,
  };
  const expected: Array<[string, ErrorCode, unknown]> = [
    ['amount', 'amount_too_small', 1],
    ['currency', 'currency_invalid', 'usd'],
    ['description', 'parameter_invalid_string', null],
    ['metadata', 'metadata_invalid', {}],
    ['allowed_operators', 'parameter_invalid_empty', ['wave']],
    ['selected_operator', 'parameter_invalid_string', null],
    ['automatic_operator', 'parameter_invalid_boolean', true],
    ['expires_at', 'parameter_out_of_range', NOW + 60],
  ];
  for (const [field, code, fix] of expected) {
    rejects(t, () => parse(body), code, field);
    body[field] = fix;
  }
  t.notThrows(() => parse(body));
});

