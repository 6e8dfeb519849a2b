import test from 'ava';
import { ReplayCache } from '../../../api/idempotency/replay-cache.js';
import { FakeClock } from '../../helpers/in-process.js';

const replay = (n: number) => ({ status: 200, body: `{"n":${n}}` });

test('keeps a replay, with the canonical request it answered, until its key expires', (t) => {
  const clock = new FakeClock(1_000_000);
  const cache = new ReplayCache(clock.now);
  cache.keep('k', 'POST /v1/payment_intents\n{"amount":1}', replay(1), clock.now() + 500);
  t.like(cache.get('k'), { status: 200, body: '{"n":1}', canonical: 'POST /v1/payment_intents\n{"amount":1}' });
  clock.advance(499);
  t.truthy(cache.get('k'));
  clock.advance(1);
  t.is(cache.get('k'), undefined, 'gone once the clock reaches the expiry');
  t.is(cache.size, 0, 'and dropped, not just hidden');
});

test('a result whose key has already expired is not kept', (t) => {
  const clock = new FakeClock(1_000_000);
  const cache = new ReplayCache(clock.now);
  cache.keep('past', 'c', replay(1), clock.now() - 1);
  cache.keep('now', 'c', replay(2), clock.now());
  t.is(cache.size, 0);
});

test('past the bound, the oldest replay goes first', (t) => {
  const clock = new FakeClock(1_000_000);
  const cache = new ReplayCache(clock.now, 2);
  const expiresAt = clock.now() + 1000;
  cache.keep('a', 'c', replay(1), expiresAt);
  cache.keep('b', 'c', replay(2), expiresAt);
  cache.keep('c', 'c', replay(3), expiresAt);
  t.is(cache.size, 2);
  t.is(cache.get('a'), undefined);
  t.is(cache.get('b')?.body, '{"n":2}');
  t.is(cache.get('c')?.body, '{"n":3}');
});

test('reading a replay does not make it newer: eviction follows the order they were kept', (t) => {
  const clock = new FakeClock(1_000_000);
  const cache = new ReplayCache(clock.now, 2);
  const expiresAt = clock.now() + 1000;
  cache.keep('a', 'c', replay(1), expiresAt);
  cache.keep('b', 'c', replay(2), expiresAt);
  t.truthy(cache.get('a'));
  cache.keep('c', 'c', replay(3), expiresAt);
  t.is(cache.get('a'), undefined);
  t.truthy(cache.get('b'));
});

test('the default bound is 10 000 replays', (t) => {
  const clock = new FakeClock(1_000_000);
  const cache = new ReplayCache(clock.now);
  const expiresAt = clock.now() + 1000;
  for (let i = 0; i <= 10_000; i++) cache.keep(`k${i}`, 'c', replay(i), expiresAt);
  t.is(cache.size, 10_000);
  t.is(cache.get('k0'), undefined);
  t.truthy(cache.get('k1'));
  t.truthy(cache.get('k10000'));
});
