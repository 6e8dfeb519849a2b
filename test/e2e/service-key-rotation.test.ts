/**
 * A service key rotated while the service runs loses nothing (DESIGN.md section 20,
 * security review L2), black-box: the rotation is `npm run cli -- service-keys
 * rotate`, against an api and two workers that keep running. The api reads its keys
 * every 500 ms (so it seals under the new version a second after the rotation); the
 * workers would read theirs only every 10 minutes, so a text under the new version is
 * one they do not hold yet, and read at once.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { Queue } from 'bullmq';
import { FINGERPRINT_KEY_ID } from '../../common/idempotency.js';
import { INPUT_KEY_ID } from '../../common/input-seal.js';
import { QUEUES } from '../../common/jobs.js';
import { confirm, createIntent, phone, PI } from '../helpers/payment-intent-lifecycle.js';
import { Service, sleep, uniqueName, until } from '../helpers/service.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const API_RELOAD_MS = 500;
/** A rotated key is in the api's use after this: read within a reload, used once a second old. */
const NEW_VERSION_IN_USE_MS = 2 * API_RELOAD_MS + 500;

let service: Service;

test.before(async () => {
  // Admission control off: a test holds the queue back on purpose.
  service = await Service.start({ workers: 0, env: { SERVICE_KEYS_RELOAD_MS: String(API_RELOAD_MS), CREATE_ADMISSION_WAIT_MS: '0' } });
  await Promise.all([service.startWorker({ SERVICE_KEYS_RELOAD_MS: '600000' }), service.startWorker({ SERVICE_KEYS_RELOAD_MS: '600000' })]);
});

test.after.always(async () => {
  await service?.stop();
});

/** `npm run cli -- service-keys <args>` against the service's MongoDB. */
function cli(args: string[]) {
  return spawnSync(process.execPath, [path.join(root, 'scripts/cli.mjs'), 'service-keys', ...args], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', MONGODB_URL: service.env.MONGODB_URL as string, MONGODB_DB: service.dbName, NPM_START_DATA_DIR: path.join(root, 'no-such-dir') },
    encoding: 'utf8',
    timeout: 60_000,
  });
}

function rotate(use: string): { version: number; id: string } {
  const run = cli(['rotate', use, '--json']);
  if (run.status !== 0) throw new Error(`service-keys rotate ${use}: ${run.status} ${run.stderr}`);
  return JSON.parse(run.stdout) as { version: number; id: string };
}

test.serial('a rotation of the confirm input key with two workers running loses no confirm: 12 confirms sealed under the new version all answer 200', async (t) => {
  const key = await service.issueKey(uniqueName('rotation'));
  const intents = await Promise.all(Array.from({ length: 16 }, () => createIntent(service, key, { allowed_operators: ['mtn_momo'] })));
  // Before the rotation: both workers open confirms, under the first version.
  const warm = await Promise.all(intents.slice(0, 4).map((pi, i) => confirm(service, key, pi.id, { operator: 'mtn_momo', phone_number: phone('225', '000', i) })));
  t.deepEqual(warm.map((r) => r.status), [200, 200, 200, 200], warm.map((r) => r.text).join('\n'));

  t.like(rotate(INPUT_KEY_ID), { version: 2 });
  // The api reads the keys within 500 ms, and seals with the new version once it is a second old.
  await sleep(NEW_VERSION_IN_USE_MS);

  // Held back in the queue, to read what the api put in the jobs.
  const writes = new Queue(QUEUES.writes, { connection: { url: service.env.REDIS_URL }, prefix: service.prefix });
  t.teardown(async () => {
    await writes.resume();
    await writes.close();
  });
  await writes.pause();
  const confirms = intents.slice(4).map((pi, i) => confirm(service, key, pi.id, { operator: 'mtn_momo', phone_number: phone('225', '000', 100 + i) }));
  const waiting = await until('the 12 confirms to wait in the queue', async () => {
    const jobs = (await writes.getWaiting()).filter((j) => j.name === 'payment_intent.confirm.v1');
    return jobs.length >= 12 ? jobs : undefined;
  });
  const sealed = waiting.map((j) => (j.data as { sealed: string }).sealed);
  t.true(sealed.every((s) => s.startsWith('v2.2.')), `sealed under version 2: ${sealed.map((s) => s.slice(0, 6)).join(' ')}`);
  await writes.resume();

  const answers = await Promise.all(confirms);
  t.deepEqual(
    answers.map((r) => r.status),
    Array.from({ length: 12 }, () => 200),
    answers.filter((r) => r.status !== 200).map((r) => r.text).join('\n'),
  );
  t.true(answers.every((r) => r.body.status === 'requires_action'));
  t.false(service.logs().some((line) => line.includes('does not open')), 'no job failed for its seal');

  // The CLI lists versions (never keys), and keeps the old one while what it sealed may live.
  const listed = cli(['list', '--json']);
  t.is(listed.status, 0, listed.stderr);
  t.false(listed.stdout.includes('"key"'));
  t.like(JSON.parse(listed.stdout), [{ use: INPUT_KEY_ID, version: 1 }, { use: INPUT_KEY_ID, version: 2 }]);
  const retired = cli(['retire', INPUT_KEY_ID, '1']);
  t.is(retired.status, 2);
  t.regex(retired.stderr, /younger than 48 h/);
});

test.serial('a rotation of the fingerprint key loses no replay: a request made before it is replayed after it, and another body is still refused', async (t) => {
  const key = await service.issueKey(uniqueName('fingerprints'));
  const created = await service.request('POST', PI, { key, body: { amount: 700, currency: 'xof', allowed_operators: ['mtn_momo'] }, headers: { 'Idempotency-Key': 'create-before' } });
  t.is(created.status, 200, created.text);
  const path = `${PI}/${created.body.id}/confirm`;
  const body = { operator: 'mtn_momo', phone_number: phone('225', '000', 999) };
  const confirmed = await service.request('POST', path, { key, body, headers: { 'Idempotency-Key': 'confirm-before' } });
  t.is(confirmed.status, 200, confirmed.text);

  t.like(rotate(FINGERPRINT_KEY_ID), { version: 2 });
  await sleep(NEW_VERSION_IN_USE_MS);
  // Another api, which kept no answer in memory: it compares fingerprints, made under version 2.
  const extra = await service.startExtraApi();
  const replays = [
    [PI, { amount: 700, currency: 'xof', allowed_operators: ['mtn_momo'] }, 'create-before', created],
    [path, body, 'confirm-before', confirmed],
  ] as const;
  for (const [url, sent, idemKey, first] of replays) {
    const replay = await service.request('POST', url, { key, body: sent, headers: { 'Idempotency-Key': idemKey }, baseUrl: extra.baseUrl });
    t.is(replay.status, 200, replay.text);
    t.is(replay.headers.get('idempotent-replayed'), 'true');
    t.is(replay.text, first.text, `${url}: the first answer, byte for byte`);
  }
  const other = await service.request('POST', PI, { key, body: { amount: 701, currency: 'xof' }, headers: { 'Idempotency-Key': 'create-before' }, baseUrl: extra.baseUrl });
  t.is(other.status, 400, other.text);
  t.is(other.body.error.code, 'idempotency_key_reused');

  // A key first used after the rotation, replayed by the first api.
  const after = await service.request('POST', PI, { key, body: { amount: 702, currency: 'xof' }, headers: { 'Idempotency-Key': 'create-after' }, baseUrl: extra.baseUrl });
  t.is(after.status, 200, after.text);
  const again = await service.request('POST', PI, { key, body: { amount: 702, currency: 'xof' }, headers: { 'Idempotency-Key': 'create-after' } });
  t.is(again.text, after.text);
  const stored = await (await service.db()).collection<{ _id: string; version?: number }>('service_keys').find({ _id: { $regex: `^${FINGERPRINT_KEY_ID}` } }).toArray();
  t.deepEqual(stored.map((d) => d.version ?? 1).sort(), [1, 2]);
});
