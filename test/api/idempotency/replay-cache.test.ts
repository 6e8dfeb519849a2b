// Each api process's memory of replays is bounded in bytes, not in entries.

import test from 'ava';
import { ReplayCache } from '../../../api/idempotency/replay-cache.js';

const now = () => 1_000;
const later = 10_000;

function body(bytes: number): { status: number; body: string } {
  return { status: 200, body: 'x'.repeat(bytes) };
}

test('large results push out the oldest: the bytes kept never pass the bound', (t) => {
  const cache = new ReplayCache(now, 10_000);
  for (let i = 0; i < 20; i++) {
    cache.keep(`k${i}`, 'POST /v1/x\n{}', body(2_000), later);
    t.true(cache.bytes <= 10_000, `after ${i + 1}: ${cache.bytes} bytes`);
  }
  t.is(cache.size, 2, 'two results of ~4 KB fit in 10 KB');
  t.truthy(cache.get('k19'));
  t.truthy(cache.get('k18'));
  t.is(cache.get('k0'), undefined);
});

test('small results are not limited by a count: the bound is in bytes', (t) => {
  const cache = new ReplayCache(now, 32 * 1024 * 1024);
  for (let i = 0; i < 20_000; i++) cache.keep(`k${i}`, 'c', body(10), later);
  t.is(cache.size, 20_000);
  t.truthy(cache.get('k0'));
});

test('a result larger than the bound is not kept, and 0 keeps nothing', (t) => {
  const cache = new ReplayCache(now, 1_000);
  cache.keep('big', 'c', body(5_000), later);
  t.is(cache.size, 0);
  const off = new ReplayCache(now, 0);
  off.keep('k', 'c', body(1), later);
  t.is(off.size, 0);
});

test('keeping a key again replaces it without counting it twice', (t) => {
  const cache = new ReplayCache(now, 100_000);
  cache.keep('k', 'c', body(1_000), later);
  const once = cache.bytes;
  cache.keep('k', 'c', body(1_000), later);
  t.is(cache.bytes, once);
  t.is(cache.size, 1);
});

test('an expired result is dropped and its bytes freed', (t) => {
  let clock = 1_000;
  const cache = new ReplayCache(() => clock, 100_000);
  cache.keep('k', 'c', body(1_000), 2_000);
  clock = 3_000;
  t.is(cache.get('k'), undefined);
  t.is(cache.bytes, 0);
});
