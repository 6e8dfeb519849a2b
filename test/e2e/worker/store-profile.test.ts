/**
 * The worker's store profile (common/store-profile.ts): asked of the server at
 * start-up unless `STORE_PROFILE` forces one, as the suite's second pass does
 * (the services the tests start inherit it); the write gate's widths default to the
 * profile's and are set by config.
 */
import test from 'ava';
import { STORE_PROFILES, type StoreProfileName } from '../../../common/store-profile.js';
import { withService, type Proc } from '../../helpers/service.js';

async function started(worker: Proc): Promise<Record<string, unknown>> {
  return JSON.parse(await worker.waitFor(/worker started/)) as Record<string, unknown>;
}

test('a worker runs the profile the run forces, or the one its server answers to; the gate widths follow it unless set', async (t) => {
  const { service } = await withService(t, { project: 'profile' });
  const db = await service.db();
  const info = await db.admin().command({ buildInfo: 1 });
  const detected: StoreProfileName = typeof info.ferretdbVersion === 'string' ? 'ferretdb' : 'mongodb';
  const expected = (process.env.STORE_PROFILE as StoreProfileName | undefined) || detected;
  const profile = STORE_PROFILES[expected];
  t.like(await started(service.workers[0]!), {
    store_profile: expected,
    writes_in_flight: profile.writesInFlight,
    transition_writes_in_flight: profile.transitionWritesInFlight,
    intents_concurrency: profile.intentsConcurrency,
  });

  const other: StoreProfileName = expected === 'mongodb' ? 'ferretdb' : 'mongodb';
  const forced = await service.startWorker({ STORE_PROFILE: other, WORKER_WRITES_IN_FLIGHT: '5', WORKER_TRANSITION_WRITES_IN_FLIGHT: '2', WORKER_INTENTS_CONCURRENCY: '7' });
  t.like(await started(forced), { store_profile: other, writes_in_flight: 5, transition_writes_in_flight: 2, intents_concurrency: 7 });
});
