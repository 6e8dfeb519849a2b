// Sealed texts name their key's version, a keyring opens every version it holds (and
// reads a newer one it does not hold yet), and tags are 16 bytes (DESIGN.md section 20,
// security review L2): against the real MongoDB of the test stack.

import { createCipheriv, randomBytes } from 'node:crypto';
import test from 'ava';
import { MongoClient } from 'mongodb';
import { describeKeyedRequest } from '../../api/idempotency/keyed-request.js';
import { fingerprintMatches } from '../../common/idempotency.js';
import { collections } from '../../common/mongo.js';
import { Seal, SealRefused } from '../../common/seal.js';
import { retireServiceKey, rotateServiceKey, ServiceKeyring } from '../../common/service-keys.js';
import { stackUrls, uniqueName } from '../helpers/service.js';

let client: MongoClient;
const dbName = uniqueName('seal-ring');

test.before(async () => {
  client = new MongoClient(stackUrls().mongoUrl);
  await client.connect();
});

test.after.always(async () => {
  await client?.db(dbName).dropDatabase().catch(() => undefined);
  await client?.close();
});

const keys = () => collections(client.db(dbName)).serviceKeys;

/** A wall clock the test moves: a new version seals once twice the reload interval old. */
function clock() {
  let at = Date.now();
  return { now: () => at, advance: (ms: number) => (at += ms) };
}

const RELOAD_MS = 1000;

test('a sealed text names its key version; after a rotation the old version still opens, and a process that never saw the rotation opens the new one', async (t) => {
  const use = uniqueName('use');
  const time = clock();
  const before = new Seal(keys(), use, { reloadMs: RELOAD_MS, now: time.now });
  const old = await before.seal('job_1', 'a client_secret');
  t.regex(old, /^v2\.1\.[\w-]{16}\.[\w-]{22}\.[\w-]+$/, 'v2.<version>.<iv>.<tag>.<ciphertext>');
  t.false(old.includes('client_secret'));
  t.is(await before.open('job_1', old), 'a client_secret');

  const { version } = await rotateServiceKey(keys(), use, time.now);
  t.is(version, 2);
  const after = new Seal(keys(), use, { reloadMs: RELOAD_MS, now: time.now });
  t.regex(await after.seal('job_2', 'x'), /^v2\.1\./, 'a version younger than twice the reload interval does not seal yet');
  time.advance(2 * RELOAD_MS);
  const fresh = await after.seal('job_2', 'sealed under v2');
  t.regex(fresh, /^v2\.2\./, 'then it does');
  t.is(await after.open('job_1', old), 'a client_secret', 'the old version opens what it sealed');
  // `before` loaded its keys before the rotation and is not due to read them again:
  // the text names a version newer than any it holds, so it reads them at once.
  t.is(await before.open('job_2', fresh), 'sealed under v2');
  t.regex(await before.seal('job_3', 'y'), /^v2\.2\./, 'and seals with it from then on');
});

test('a tag of any length but 16 bytes is refused, and so is a text under a version that does not exist', async (t) => {
  const seal = new Seal(keys(), uniqueName('use'));
  const sealed = await seal.seal('job', 'secret');
  const [format, kid, iv, tag, body] = sealed.split('.') as [string, string, string, string, string];
  const short = Buffer.from(tag, 'base64url').subarray(0, 4).toString('base64url');
  const refused = await t.throwsAsync(seal.open('job', [format, kid, iv, short, body].join('.')));
  t.true(refused instanceof SealRefused);
  t.regex(refused!.message, /tag is 4 bytes, not 16/);
  // The old form carried the tag at the end of the text: one of 4 bytes is refused too.
  const v1Short = ['v1', iv, Buffer.from(tag, 'base64url').subarray(0, 4).toString('base64url')].join('.');
  await t.throwsAsync(seal.open('job', v1Short), { instanceOf: SealRefused, message: /too short/ });
  await t.throwsAsync(seal.open('job', [format, '0', iv, tag, body].join('.')), { instanceOf: SealRefused, message: /no key version/ });
  await t.throwsAsync(seal.open('job', [format, '7', iv, tag, body].join('.')), { instanceOf: SealRefused, message: /version 7, which this service does not hold/ });
  await t.throwsAsync(seal.open('other job', sealed), { instanceOf: SealRefused }, 'bound to its job');
  t.is(await seal.open('job', sealed), 'secret');
});

test('a text sealed in the v1 form (no key named) opens under the first version, also after a rotation', async (t) => {
  const use = uniqueName('use');
  // A first key as the service made it before keys had versions.
  const legacy = randomBytes(32);
  await keys().insertOne({ _id: use, key: legacy.toString('base64'), created_ms: Date.now() - 86_400_000 });
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', legacy, iv);
  cipher.setAAD(Buffer.from('req_1'));
  const body = Buffer.concat([cipher.update('["+2250700001234",null]', 'utf8'), cipher.final(), cipher.getAuthTag()]);
  const v1 = ['v1', iv.toString('base64url'), body.toString('base64url')].join('.');

  const time = clock();
  await rotateServiceKey(keys(), use, () => time.now() - 3 * RELOAD_MS);
  const seal = new Seal(keys(), use, { reloadMs: RELOAD_MS, now: time.now });
  t.regex(await seal.seal('req_2', 'x'), /^v2\.2\./, 'the rotated version seals');
  t.is(await seal.open('req_1', v1), '["+2250700001234",null]');
  await t.throwsAsync(seal.open('req_2', v1), { instanceOf: SealRefused });
});

test('a retired version no longer opens; the newest cannot be retired, nor one whose successor is young', async (t) => {
  const use = uniqueName('use');
  const time = clock();
  const seal = new Seal(keys(), use, { reloadMs: RELOAD_MS, now: time.now });
  const old = await seal.seal('job', 'text');
  t.regex(await retireServiceKey(keys(), use, 1, 0) ?? '', /newest/);
  await rotateServiceKey(keys(), use);
  t.regex(await retireServiceKey(keys(), use, 1, 3_600_000) ?? '', /younger than 1 h/);
  t.is(await retireServiceKey(keys(), use, 1, 0), null);
  const later = new Seal(keys(), use, { reloadMs: RELOAD_MS });
  await t.throwsAsync(later.open('job', old), { instanceOf: SealRefused, message: /version 1, which this service does not hold/ });
});

test("fingerprints made under a rotated key's older version still match the same request, never another", async (t) => {
  const use = uniqueName('fp');
  const ring = new ServiceKeyring(keys(), use);
  const [v1] = await ring.all();
  await rotateServiceKey(keys(), use, () => Date.now() - 3_600_000);
  const rotated = new ServiceKeyring(keys(), use);
  const current = await rotated.current();
  t.is(current.version, 2);
  const former = (await rotated.all()).filter((v) => v.version !== current.version).map((v) => v.key);
  const describe = (key: Buffer, formerKeys: Buffer[], amount: number) =>
    describeKeyedRequest({ prefix: 'p', expiresAt: 0, fingerprintKey: key, formerFingerprintKeys: formerKeys }, { project: 'p', livemode: false }, 'k', 'POST', '/v1/payment_intents', { amount }).info;
  const recordedBefore = describe(v1!.key, [], 100).fingerprint;
  const now = describe(current.key, former, 100);
  t.not(now.fingerprint, recordedBefore);
  t.true(fingerprintMatches(now, recordedBefore), 'a record made before the rotation');
  t.false(fingerprintMatches(describe(current.key, former, 200), recordedBefore), 'another body');
  t.is(describe(current.key, [], 100).formerFingerprints, undefined, 'one version: nothing more in the job');
});
