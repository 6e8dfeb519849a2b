import test from 'ava';
import { fromPairs, toPairs } from '../../common/metadata.js';

test('metadata pairs keep keys that MongoDB refuses as field names, in order', (t) => {
  const input = JSON.parse('{"z":"1","a.b":"2","$x":"3","__proto__":"4"}') as Record<string, string>;
  const pairs = toPairs(input);
  t.deepEqual(pairs.map((p) => p.k), ['z', 'a.b', '$x', '__proto__']);
  const back = fromPairs(pairs);
  t.is(JSON.stringify(back), JSON.stringify(input));
  t.is(Object.getPrototypeOf(back), null, 'no prototype pollution through __proto__');
});
