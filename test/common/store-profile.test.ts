import test from 'ava';
import { conditionalUpdateFilter, STORE_PROFILES } from '../../common/store-profile.js';
import { readSource, sourceFiles } from '../helpers/sources.js';

test('a conditional update names its condition where the store applies it atomically, and `_id` alone elsewhere', (t) => {
  const condition = { status: 'processing', rev: { $exists: false } };
  t.deepEqual(conditionalUpdateFilter(STORE_PROFILES.mongodb, 'pi_1', condition), { _id: 'pi_1', status: 'processing', rev: { $exists: false } });
  t.deepEqual(conditionalUpdateFilter(STORE_PROFILES.ferretdb, 'pi_1', condition), { _id: 'pi_1' });
});

test('the fork on atomicConditionalUpdates is written once: the worker asks conditionalUpdateFilter', (t) => {
  const forks = sourceFiles(['worker', 'api']).filter((file) => /\.atomicConditionalUpdates\s*\?/.test(readSource(file)));
  t.deepEqual(forks, []);
});
