import test from 'ava';
import { MongoServerError } from 'mongodb';
import { jitteredBackoff, retryInfrastructure } from '../../common/retry.js';

test('backoff doubles up to the cap and is jittered within its upper half', (t) => {
  const options = { baseMs: 250, capMs: 10_000 };
  t.is(jitteredBackoff(1, { ...options, random: () => 0 }), 125);
  t.is(jitteredBackoff(1, { ...options, random: () => 0.999999 }), 250);
  t.is(jitteredBackoff(3, { ...options, random: () => 0 }), 500);
  t.is(jitteredBackoff(20, { ...options, random: () => 0.999999 }), 10_000);
  t.is(jitteredBackoff(20, { ...options, random: () => 0 }), 5000);
  const draws = new Set(Array.from({ length: 50 }, () => jitteredBackoff(4, options)));
  t.true(draws.size > 10, 'retries that failed together do not come back together');
});

test('retryInfrastructure retries faults, gives up after the tries, and never retries a bug', async (t) => {
  let calls = 0;
  const busy = new MongoServerError({ errmsg: 'database is locked (SQLITE_BUSY)', code: 1 });
  const value = await retryInfrastructure(async () => {
    calls++;
    if (calls < 3) throw busy;
    return 'done';
  }, { tries: 4, baseMs: 1, capMs: 2 });
  t.is(value, 'done');
  t.is(calls, 3);

  calls = 0;
  await t.throwsAsync(retryInfrastructure(async () => {
    calls++;
    throw busy;
  }, { tries: 2, baseMs: 1, capMs: 2 }), { is: busy });
  t.is(calls, 2);

  calls = 0;
  const bug = new TypeError('undefined is not a function');
  await t.throwsAsync(retryInfrastructure(async () => {
    calls++;
    throw bug;
  }, { tries: 5, baseMs: 1, capMs: 2 }), { is: bug });
  t.is(calls, 1);
});
