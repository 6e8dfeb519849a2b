import test from 'ava';

import { parseIdempotencyKey } from '../../../api/schemas/idempotency-key.js';
import { rejects } from '../../helpers/rejects.js';

test('no header means no key', (t) => {
  t.is(parseIdempotencyKey(undefined), null);
});

test('accepts keys of 1 and of 255 printable ASCII characters', (t) => {
  t.is(parseIdempotencyKey(['a']), 'a');
  t.is(parseIdempotencyKey(['k'.repeat(255)]), 'k'.repeat(255));
  t.is(parseIdempotencyKey(['550e8400-e29b-41d4-a716-446655440000']), '550e8400-e29b-41d4-a716-446655440000');
});

test('accepts every printable ASCII character, space and tilde included', (t) => {
  let all = '';
  for (let c = 0x20; c <= 0x7e; c++) all += String.fromCharCode(c);
  t.is(parseIdempotencyKey([all]), all);
  t.is(parseIdempotencyKey([' ']), ' ');
});

for (const [label, header] of [
  ['empty', ''],
  ['of 256 characters', 'k'.repeat(256)],
  ['with a control character', 'key\u001f'],
  ['with DEL', 'key\u007f'],
  ['with a tab', 'a\tb'],
  ['with a NUL', 'a\u0000b'],
  ['with a non-ASCII character', 'clé'],
  ['with an emoji', 'key😀'],
] as const) {
  test(`a key ${label} is idempotency_key_invalid`, (t) => {
    const error = rejects(t, () => parseIdempotencyKey([header]), 'idempotency_key_invalid');
    t.regex(error.message, /Idempotency-Key/);
  });
}

for (const [label, lines] of [
  ['sent twice', ['a1', 'b1']],
  ['sent twice with one value', ['a1', 'a1']],
  ['sent as no line at all', []],
] as const) {
  test(`a header ${label} is idempotency_key_invalid`, (t) => {
    const error = rejects(t, () => parseIdempotencyKey([...lines]), 'idempotency_key_invalid');
    t.regex(error.message, /Idempotency-Key/);
  });
}
