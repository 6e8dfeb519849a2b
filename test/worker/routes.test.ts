/**
 * The job tables of worker/routes.ts: a job runs its own route, with the worker's
 * token; a name on no table, even one that Object.prototype has, fails at once and
 * for good (UnrecoverableError, never retried).
 */
import test from 'ava';
import { UnrecoverableError, type Job } from 'bullmq';
import { JOBS, type AnyJob } from '../../common/jobs.js';
import { routeJobs, type JobRoutes } from '../../worker/routes.js';

function job(name: string): AnyJob<'events'> {
  return { name, queueName: 'events', data: { event: 'evt_1' } } as unknown as AnyJob<'events'>;
}

test('a job runs the route of its name, with the worker token', async (t) => {
  const seen: Array<[Job, string | undefined]> = [];
  const routes: JobRoutes<'events'> = {
    [JOBS.dispatchEvent]: async (j, token) => {
      seen.push([j, token]);
      return { deliveries: 3 };
    },
  };
  const dispatched = job(JOBS.dispatchEvent);
  t.deepEqual(await routeJobs(routes)(dispatched, 'lock-token'), { deliveries: 3 });
  t.deepEqual(seen, [[dispatched, 'lock-token']]);
});

test('a name on no table, or an Object.prototype member, fails for good without running a route', async (t) => {
  let ran = 0;
  const route = routeJobs<'events'>({
    [JOBS.dispatchEvent]: async () => {
      ran++;
      return { deliveries: 0 };
    },
  });
  for (const name of ['event.dispatch.v1', 'toString', 'constructor', '__proto__', 'hasOwnProperty']) {
    const err = await t.throwsAsync(route(job(name)), { instanceOf: UnrecoverableError }, name);
    t.is(err?.message, `unknown job ${name} on queue events`);
  }
  t.is(ran, 0);
});
