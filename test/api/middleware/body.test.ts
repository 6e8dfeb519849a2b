/**
 * Whole numbers written as floats in JSON bodies (api/middleware/body.ts): quoted
 * before JSON.parse, so the field checks see them as written and refuse them as
 * integers; nothing else in the text changes.
 */
import test from 'ava';
import { quoteWholeFloats } from '../../../api/middleware/body.js';

test('a whole number written with a fraction or an exponent is quoted, wherever it is', (t) => {
  t.is(quoteWholeFloats('{"amount":5000.0}'), '{"amount":"5000.0"}');
  t.is(quoteWholeFloats('{"amount":5e3}'), '{"amount":"5e3"}');
  t.is(quoteWholeFloats('{"a":[1.0,2,-3.0E2],"b":{"c":9.00}}'), '{"a":["1.0",2,"-3.0E2"],"b":{"c":"9.00"}}');
  t.deepEqual(JSON.parse(quoteWholeFloats('{"amount": 5000.0 }')), { amount: '5000.0' });
});

test('integers, true fractions and everything inside strings stay as they are', (t) => {
  for (const text of ['{"amount":5000}', '{"a":50.5}', '{"a":1.0e-1}', '{"d":"5.0 \\" 7.0 \\\\","e":"1e3"}', '{"5.0":1}', '{"amount":-12}', '[1.5e400]']) {
    t.is(quoteWholeFloats(text), text, text);
  }
});

test('text that is not JSON is left for JSON.parse to refuse', (t) => {
  for (const text of ['{"amount":5.0', '{"amount":"5.0}', '5.0.0', '{"a":01.0}']) {
    t.throws(() => JSON.parse(quoteWholeFloats(text)), undefined, text);
  }
});
