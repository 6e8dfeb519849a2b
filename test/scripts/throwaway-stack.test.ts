// The throw-away stack of `npm test` and `npm run bench` (scripts/lib/throwaway-stack.mjs)
// uses a MONGODB_URL already set, so that a pass against a real MongoDB is one command,
// and starts a FerretDB of its own only without one.

import test from 'ava';

import { storeChoice } from '#scripts/lib/throwaway-stack.mjs';

test('a MONGODB_URL already set is used as it is, and no FerretDB is started', (t) => {
  t.deepEqual(storeChoice({ MONGODB_URL: 'mongodb://127.0.0.1:27017' }), { startFerretDB: false, mongoUrl: 'mongodb://127.0.0.1:27017' });
  t.deepEqual(storeChoice({ MONGODB_URL: ' mongodb://db.internal:27017/?replicaSet=rs0 \n' }), { startFerretDB: false, mongoUrl: 'mongodb://db.internal:27017/?replicaSet=rs0' });
});

test('without one (unset, empty or blank), the stack starts its own FerretDB', (t) => {
  for (const env of [{}, { MONGODB_URL: '' }, { MONGODB_URL: '  ' }, { REDIS_URL: 'redis://127.0.0.1:6379' }]) {
    t.deepEqual(storeChoice(env), { startFerretDB: true, mongoUrl: null }, JSON.stringify(env));
  }
});
