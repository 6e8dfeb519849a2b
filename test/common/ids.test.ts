import test from 'ava';
import { IdGenerator, idTime, isId, randomBase62, ID_BODY_LENGTH } from '../../common/ids.js';

test('ids are fixed-length, prefixed, and carry their creation time', (t) => {
  const now = Date.UTC(2026, 10, 20, 12, 0, 0);
  const ids = new IdGenerator(() => now);
  const id = ids.next('payment_intent');
  t.regex(id, /^pi_[0-9A-Za-z]{26}$/);
  t.is(id.length, 3 + ID_BODY_LENGTH);
  t.is(idTime(id), now);
  t.true(isId('payment_intent', id));
  t.false(isId('webhook_endpoint', id));
  t.regex(ids.next('event'), /^evt_[0-9A-Za-z]{26}$/);
});

test('ids sort in creation order as plain strings, within one millisecond too', (t) => {
  let now = 1_700_000_000_000;
  const ids = new IdGenerator(() => now);
  const made: string[] = [];
  for (let i = 0; i < 2000; i++) {
    if (i % 100 === 0) now += 1;
    made.push(ids.next('payment_intent'));
  }
  t.deepEqual([...made].sort(), made);
  t.is(new Set(made).size, made.length);
});

test('ids stay ordered when the clock steps back', (t) => {
  let now = 1_700_000_000_500;
  const ids = new IdGenerator(() => now);
  const a = ids.next('payment_intent');
  now -= 400;
  const b = ids.next('payment_intent');
  t.true(b > a);
});

test('ids of the same millisecond keep their random part fresh: knowing one does not help guess the next', (t) => {
  const ids = new IdGenerator(() => 1_700_000_000_000);
  const randoms = Array.from({ length: 200 }, () => ids.next('payment_intent').slice(-14));
  t.is(new Set(randoms).size, randoms.length);
  let differing = 0;
  for (let i = 0; i < 14; i++) if (randoms[0]?.[i] !== randoms[1]?.[i]) differing++;
  t.true(differing >= 8, `${randoms[0]} vs ${randoms[1]}`);
  // Unordered random parts: a counter would make them increase.
  t.notDeepEqual([...randoms].sort(), randoms);
});

test('ids made 1 ms apart compare by time first', (t) => {
  const a = new IdGenerator(() => 1_700_000_000_000).next('payment_intent');
  const b = new IdGenerator(() => 1_700_000_000_001).next('payment_intent');
  t.true(a < b);
});

test('randomBase62 gives the length asked, from the base62 alphabet', (t) => {
  for (const n of [1, 24, 40, 100]) t.regex(randomBase62(n), new RegExp(`^[0-9A-Za-z]{${n}}$`));
  t.not(randomBase62(40), randomBase62(40));
});
