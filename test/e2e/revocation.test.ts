/**
 * Revocation when Redis cannot carry it: the api that revokes a key stops
 * accepting it at once all the same (it evicts before it publishes), and the CLI
 * says when it could not push a revocation.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { Service, uniqueName, until } from '../helpers/service.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

let redis: RedisServer;
let service: Service;

test.before(async () => {
  redis = await startRedisServer();
  service = await Service.start({ workers: 0, redisUrl: redis.url });
});

test.after.always(async () => {
  await service?.stop();
  await redis?.dispose();
});

async function keyId(secret: string): Promise<string> {
  const list = await service.request('GET', '/admin/v1/api_keys', { headers: { Authorization: `Bearer ${service.adminToken}` } });
  const found = (list.body.data as Array<{ id: string; last4: string }>).find((k) => secret.endsWith(k.last4));
  if (!found) throw new Error('key not listed');
  return found.id;
}

function cli(args: string[], env: Record<string, string>) {
  return spawnSync(process.execPath, [path.join(root, 'dist/api/cli.js'), ...args], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', MONGODB_URL: service.env.MONGODB_URL as string, MONGODB_DB: service.dbName, ...env },
    encoding: 'utf8',
    timeout: 30_000,
  });
}

test.serial('with Redis down, the api that revokes a key refuses it at once', async (t) => {
  const secret = await service.issueKey(uniqueName('revoke'));
  const id = await keyId(secret);
  t.is((await service.request('GET', '/v1/payment_intents', { key: secret })).status, 200, 'the key is cached as valid');
  await redis.stop();
  t.teardown(() => redis.restart());

  const revoked = await service.request('DELETE', `/admin/v1/api_keys/${id}`, { headers: { Authorization: `Bearer ${service.adminToken}` } });
  t.is(revoked.status, 200, revoked.text);
  t.is(typeof revoked.body.revoked_at, 'number');
  const after = await service.request('GET', '/v1/payment_intents', { key: secret });
  t.is(after.status, 401);
  t.is(after.body.error.code, 'api_key_invalid');
  // The line is written before the answer, but reaches the test through the process's stdout pipe, maybe after it.
  const logged = await until('the failed push to be logged', () => (service.logs().some((line) => line.includes('could not be pushed')) ? true : undefined), 5000).catch(() => false);
  t.true(logged, 'the failed push is logged');
});

test.serial('the CLI warns when it cannot push a revocation', async (t) => {
  const [a, b] = [await service.issueKey(uniqueName('cli')), await service.issueKey(uniqueName('cli'))];
  await redis.stop();
  t.teardown(() => redis.restart());

  const down = cli(['keys', 'revoke', await keyId(a)], { REDIS_URL: redis.url });
  t.is(down.status, 0, down.stderr);
  t.regex(down.stderr, /warning: .*not pushed.*Redis at REDIS_URL did not answer/);
  t.regex(down.stdout, /revoked/);

  const unset = cli(['keys', 'revoke', await keyId(b)], {});
  t.is(unset.status, 0, unset.stderr);
  t.regex(unset.stderr, /warning: .*not pushed.*REDIS_URL is not set/);
});
