import test from 'ava';
import type { Queue } from 'bullmq';
import { CreateAdmission } from '../../api/admission.js';

function queueWithOldest(timestamp: () => number | null): Pick<Queue, 'getWaiting'> {
  return {
    getWaiting: async () => {
      const ts = timestamp();
      return (ts === null ? [] : [{ timestamp: ts }]) as Awaited<ReturnType<Queue['getWaiting']>>;
    },
  };
}

test('admits while the oldest waiting create is within the limit, refuses with a Retry-After once it is past it', async (t) => {
  let now = 100_000;
  let oldest: number | null = null;
  const admission = new CreateAdmission(queueWithOldest(() => oldest), { limitMs: 5000, now: () => now });
  await admission.sample();
  t.is(admission.refusal(), null, 'an empty queue admits');

  oldest = now - 4000;
  await admission.sample();
  t.is(admission.refusal(), null);

  oldest = now - 7500;
  await admission.sample();
  t.is(admission.refusal(), 3, 'refused; retry once the excess should have drained');

  oldest = now - 60_000;
  await admission.sample();
  t.is(admission.refusal(), 10, 'Retry-After is capped');

  now += 1;
  oldest = null;
  await admission.sample();
  t.is(admission.refusal(), null, 'admits again once the backlog is gone');
});

test('a failed sample admits (the enqueue answers for Redis), and a limit of 0 admits everything', async (t) => {
  const failing = new CreateAdmission({ getWaiting: async () => Promise.reject(new Error('Connection is closed.')) }, { limitMs: 1000, now: () => 0 });
  await failing.sample();
  t.is(failing.refusal(), null);
  const off = new CreateAdmission(queueWithOldest(() => -1_000_000), { limitMs: 0, now: () => 0 });
  await off.sample();
  t.is(off.refusal(), null);
});

test('jobs started before (recovered as stalled, or retried) do not count: the oldest never-started job does', async (t) => {
  const now = 100_000;
  // A killed worker's jobs, back at the head of the queue with the age of their first enqueue.
  const recovered = Array.from({ length: 10 }, () => ({ timestamp: now - 20_000, attemptsStarted: 1 }));
  let fresh = [{ timestamp: now - 300, attemptsStarted: 0 }];
  const queue = { getWaiting: async () => [...recovered, ...fresh] as unknown as Awaited<ReturnType<Queue['getWaiting']>> };
  const admission = new CreateAdmission(queue, { limitMs: 5000, now: () => now });
  await admission.sample();
  t.is(admission.refusal(), null, 'a new job waits behind ten quick ones: admitted');

  fresh = [{ timestamp: now - 9000, attemptsStarted: 0 }];
  await admission.sample();
  t.is(admission.refusal(), 4, 'a never-started job that has waited past the limit still refuses');
});
