// A confirm's phone number and code sealed in its job (security review M2): against
// the real MongoDB of the test stack, which holds the service's key.

import test from 'ava';
import { MongoClient } from 'mongodb';
import { InputSeal } from '../../common/input-seal.js';
import { collections } from '../../common/mongo.js';
import { stackUrls, uniqueName } from '../helpers/service.js';

let client: MongoClient;
const dbName = uniqueName('seal');

test.before(async () => {
  client = new MongoClient(stackUrls().mongoUrl);
  await client.connect();
});

test.after.always(async () => {
  await client?.db(dbName).dropDatabase().catch(() => undefined);
  await client?.close();
});

const input = { phone_number: '+2250700001234', otp: '123456' };

test('what one process seals, another opens, under the one key they made between them', async (t) => {
  const keys = collections(client.db(dbName)).serviceKeys;
  // Two processes starting at once on an empty store: one key is made, both use it.
  const api = new InputSeal(keys);
  const worker = new InputSeal(keys);
  await Promise.all([api.ready(), worker.ready()]);
  t.is(await keys.countDocuments({}), 1);

  const sealed = await api.seal('req_1', input);
  t.false(sealed.includes(input.phone_number.slice(1)), 'no phone number in the clear');
  t.false(sealed.includes(input.otp), 'no code in the clear');
  t.deepEqual(await worker.open('req_1', sealed), input);
  t.deepEqual(await worker.open('req_2', await api.seal('req_2', { phone_number: input.phone_number, otp: null })), {
    phone_number: input.phone_number,
    otp: null,
  });
  // A new process reads the key made earlier.
  t.deepEqual(await new InputSeal(keys).open('req_1', sealed), input);
});

test('a sealed input opens only for its own request, unaltered, under its own service key', async (t) => {
  const seal = new InputSeal(collections(client.db(dbName)).serviceKeys);
  const sealed = await seal.seal('req_a', input);
  await t.throwsAsync(seal.open('req_b', sealed), undefined, 'moved to another job');

  const [format, kid, iv, tag, body] = sealed.split('.') as [string, string, string, string, string];
  const bytes = Buffer.from(body, 'base64url');
  bytes[0] = bytes[0]! ^ 1;
  await t.throwsAsync(seal.open('req_a', [format, kid, iv, tag, bytes.toString('base64url')].join('.')), undefined, 'altered');
  await t.throwsAsync(seal.open('req_a', 'plain text'), { message: /unknown form/ });

  const other = new InputSeal(collections(client.db(`${dbName}-other`)).serviceKeys);
  t.teardown(() => client.db(`${dbName}-other`).dropDatabase().then(() => undefined, () => undefined));
  await t.throwsAsync(other.open('req_a', sealed), undefined, 'another service\'s key');
});
