// The admin API's key bodies and query (api/schemas/api-keys.ts): the same joi
// schemas, form coercion and translator as /v1, so the same input gets the same error.
import test from 'ava';
import { parseApiKeyCreate, parseApiKeyListQuery } from '../../../api/schemas/api-keys.js';
import { rejects } from '../../helpers/rejects.js';

test('a key create body: a project, and livemode false unless given as a boolean (JSON) or true/false (form)', (t) => {
  t.deepEqual(parseApiKeyCreate({ project: 'acme' }), { project: 'acme', livemode: false });
  t.deepEqual(parseApiKeyCreate({ project: 'acme', livemode: true }), { project: 'acme', livemode: true });
  t.deepEqual(parseApiKeyCreate({ project: 'acme', livemode: 'true' }, 'form'), { project: 'acme', livemode: true });
  const json = rejects(t, () => parseApiKeyCreate({ project: 'acme', livemode: 'true' }), 'parameter_invalid_boolean', 'livemode');
  t.is(json.message, 'Invalid boolean: "true". The livemode parameter must be true or false.', "the /v1 translator's wording");
  rejects(t, () => parseApiKeyCreate({ project: 'acme', livemode: 'yes' }, 'form'), 'parameter_invalid_boolean', 'livemode');
  rejects(t, () => parseApiKeyCreate({}), 'parameter_missing', 'project');
  rejects(t, () => parseApiKeyCreate({ project: '' }, 'form'), 'parameter_invalid_string', 'project');
  const bad = rejects(t, () => parseApiKeyCreate({ project: 'Acme!' }), 'parameter_invalid', 'project');
  t.regex(bad.message, /1 to 63 characters/);
  rejects(t, () => parseApiKeyCreate({ project: 'acme', customer: 'x' }), 'parameter_unknown', 'customer');
  rejects(t, () => parseApiKeyCreate({ project: 7 }), 'parameter_invalid_string', 'project');
});

test('the key list query: an optional project, nothing else', (t) => {
  t.deepEqual(parseApiKeyListQuery(new URLSearchParams('')), { project: null });
  t.deepEqual(parseApiKeyListQuery(new URLSearchParams('project=acme')), { project: 'acme' });
  rejects(t, () => parseApiKeyListQuery(new URLSearchParams('foo=1')), 'parameter_unknown', 'foo');
  rejects(t, () => parseApiKeyListQuery(new URLSearchParams('project=a&project=b')), 'parameter_invalid', 'project');
});
