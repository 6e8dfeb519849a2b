import { createHash, randomBytes } from 'node:crypto';
import test from 'ava';
import { canonicalJson, canonicalRequest, decodeEntry, encodeDone, idempotentJobId, requestFingerprint, scopeHash } from '../../common/idempotency.js';

const KEY = randomBytes(32);

test('canonical JSON ignores key order and white space at every level', (t) => {
  const a = JSON.parse('{"b": 1, "a": {"y": [1, {"d": 2, "c": 3}], "x": null}}');
  const b = JSON.parse('{"a":{"x":null,"y":[1,{"c":3,"d":2}]},"b":1}');
  t.is(canonicalJson(a), canonicalJson(b));
  t.is(canonicalJson(a), '{"a":{"x":null,"y":[1,{"c":3,"d":2}]},"b":1}');
});

test('canonical JSON keeps array order and value types apart', (t) => {
  t.not(canonicalJson([1, 2]), canonicalJson([2, 1]));
  t.not(canonicalJson({ a: 1 }), canonicalJson({ a: '1' }));
  t.is(canonicalJson(JSON.parse('{"__proto__":"x"}')), '{"__proto__":"x"}');
});

test('the fingerprint covers method, path and body', (t) => {
  const base = requestFingerprint(KEY, 'POST', '/v1/payment_intents', { amount: 1 });
  t.is(base, requestFingerprint(KEY, 'post', '/v1/payment_intents', { amount: 1 }));
  t.not(base, requestFingerprint(KEY, 'POST', '/v1/webhook_endpoints', { amount: 1 }));
  t.not(base, requestFingerprint(KEY, 'POST', '/v1/payment_intents', { amount: 2 }));
});

test('the fingerprint is keyed: without the service key, a confirm body cannot be guessed from it', (t) => {
  const path = '/v1/payment_intents/pi_x/confirm';
  const body = { operator: 'orange_money', phone_number: '+2250700000123', otp: '123456' };
  const fingerprint = requestFingerprint(KEY, 'POST', path, body);
  t.not(fingerprint, createHash('sha256').update(canonicalRequest('POST', path, body)).digest('hex'), 'not the plain hash of the request');
  t.not(fingerprint, requestFingerprint(randomBytes(32), 'POST', path, body), 'another key, another fingerprint');
  t.is(fingerprint, requestFingerprint(Buffer.from(KEY), 'POST', path, body), 'the same key, the same fingerprint (every process shares it)');
});

test('a form body is the same request as the same form, never as JSON of the same parsed value', (t) => {
  const form = requestFingerprint(KEY, 'POST', '/v1/payment_intents', { amount: '5', metadata: { b: '2', a: '1' } }, 'form');
  t.is(form, requestFingerprint(KEY, 'POST', '/v1/payment_intents', { metadata: { a: '1', b: '2' }, amount: '5' }, 'form'));
  t.not(form, requestFingerprint(KEY, 'POST', '/v1/payment_intents', { amount: '5', metadata: { b: '2', a: '1' } }, 'json'));
  t.is(requestFingerprint(KEY, 'POST', '/v1/payment_intents', { amount: 1 }, 'json'), requestFingerprint(KEY, 'POST', '/v1/payment_intents', { amount: 1 }));
});

test('the scope hash separates projects and modes', (t) => {
  const key = 'k1';
  const hashes = new Set([
    scopeHash({ project: 'a', livemode: false }, key),
    scopeHash({ project: 'a', livemode: true }, key),
    scopeHash({ project: 'b', livemode: false }, key),
    scopeHash({ project: 'a', livemode: false }, 'k2'),
  ]);
  t.is(hashes.size, 4);
});

test('job ids derived from keys never contain a colon', (t) => {
  const id = idempotentJobId(scopeHash({ project: 'p', livemode: false }, 'a:b:c'));
  t.false(id.includes(':'));
  t.regex(id, /^idem-[0-9a-f]{64}$/);
});

test('cached entries round-trip and garbage decodes to null', (t) => {
  t.deepEqual(decodeEntry(encodeDone('fp', 'pi_1', 200, 5)), { s: 'done', fp: 'fp', id: 'pi_1', status: 200, exp: 5 });
  t.is(decodeEntry('{"s":"done","fp":"fp","status":200,"body":"{}","exp":5}'), null, 'an entry of the old format, with a body, is not trusted');
  t.is(decodeEntry(null), null);
  t.is(decodeEntry('not json'), null);
  t.is(decodeEntry('{"s":"other"}'), null);
});
