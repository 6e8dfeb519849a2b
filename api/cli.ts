/**
 * Operator CLI for API keys and the service's own keys, against the configured
 * MongoDB (and Redis, when REDIS_URL is set, to push revocations to running api
 * processes at once).
 *
 *   npm run --silent cli -- keys create --project acme [--live] [--json]
 *   npm run --silent cli -- keys list --project acme [--json]
 *   npm run --silent cli -- keys revoke key_… [--json]
 *   npm run --silent cli -- service-keys list [--json]
 *   npm run --silent cli -- service-keys rotate USE [--json]
 *   npm run --silent cli -- service-keys retire USE VERSION [--force] [--json]
 */
import { parseArgs } from 'node:util';
import { issueKey, listKeys, PROJECT_PATTERN, revokeKey } from '../common/api-keys.js';
import type { Collection } from 'mongodb';
import { loadConfig, type Config } from '../common/config.js';
import type { ServiceKeyDoc } from '../common/documents.js';
import { connectMongo } from '../common/mongo.js';
import { presentApiKey } from '../common/presenters.js';
import { createRedis, waitReady } from '../common/redis.js';
import { IdGenerator } from '../common/ids.js';
import { FINGERPRINT_KEY_ID } from '../common/idempotency.js';
import { INPUT_KEY_ID } from '../common/input-seal.js';
import { ANSWER_KEY_ID } from '../common/jobs.js';
import { listServiceKeys, retireServiceKey, rotateServiceKey } from '../common/service-keys.js';
import { CALLBACK_KEY_ID } from '../worker/operators/mpesa/callbacks.js';

/** What each service key is for (common/service-keys.ts). */
const SERVICE_KEY_USES = [INPUT_KEY_ID, ANSWER_KEY_ID, FINGERPRINT_KEY_ID, CALLBACK_KEY_ID];

const USAGE = `usage:
  cli keys create --project NAME [--live] [--json]
  cli keys list [--project NAME] [--json]
  cli keys revoke KEY_ID [--json]
  cli service-keys list [--json]
  cli service-keys rotate USE [--json]
  cli service-keys retire USE VERSION [--force] [--json]
USE: ${SERVICE_KEY_USES.join(', ')}`;

function fail(message: string): never {
  process.stderr.write(`${message}\n${USAGE}\n`);
  process.exit(2);
}

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    args: process.argv.slice(2),
    options: {
      project: { type: 'string' },
      live: { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
      force: { type: 'boolean', default: false },
    },
    allowPositionals: true,
  });
  const [group, command, arg] = positionals;
  if ((group !== 'keys' && group !== 'service-keys') || !command) fail('unknown command');
  const config = loadConfig(process.env, { needRedis: false });
  const mongo = await connectMongo(config.mongodbUrl, config.mongodbDb, 'payments-cli');
  if (group === 'service-keys') {
    try {
      await serviceKeys(mongo.collections.serviceKeys, config, command, positionals.slice(2), values);
    } finally {
      await mongo.client.close();
    }
    return;
  }
  const keyStore = { collections: mongo.collections, ids: new IdGenerator(Date.now), now: Date.now };
  const print = (value: unknown, text: string) => process.stdout.write(values.json ? `${JSON.stringify(value)}\n` : `${text}\n`);
  try {
    if (command === 'create') {
      const project = values.project ?? fail('--project is required');
      if (!PROJECT_PATTERN.test(project)) fail(`invalid project name: ${project}`);
      const { doc, secret } = await issueKey(keyStore, project, values.live);
      print(presentApiKey(doc, secret), `${doc._id}  ${doc.livemode ? 'live' : 'test'}  project=${project}\n${secret}`);
    } else if (command === 'list') {
      const docs = values.project ? await listKeys(mongo.collections, values.project) : await mongo.collections.apiKeys.find({}).sort({ _id: -1 }).toArray();
      print(
        docs.map((d) => presentApiKey(d)),
        docs.map((d) => `${d._id}  ${d.project}  ${d.livemode ? 'live' : 'test'}  …${d.last4}  ${d.revoked_at === null ? 'active' : `revoked ${new Date(d.revoked_at * 1000).toISOString()}`}`).join('\n') || '(no keys)',
      );
    } else if (command === 'revoke') {
      const id = arg ?? fail('the key id is required');
      const redis = process.env.REDIS_URL ? createRedis(config.redisUrl, 'failFast', 'cli') : null;
      if (redis) await waitReady(redis, 3000).catch(() => undefined);
      const revoked = await revokeKey(keyStore, redis?.status === 'ready' ? redis : null, config.queuePrefix, id);
      redis?.disconnect();
      if (!revoked) fail(`no such key: ${id}`);
      if (!revoked.pushed) {
        const why = redis ? `Redis at REDIS_URL did not answer` : 'REDIS_URL is not set';
        process.stderr.write(
          `warning: ${id} is revoked, but the revocation was not pushed to running api processes (${why}). ` +
            `They keep accepting the key until their cached lookup expires (API_KEY_CACHE_MS, 30 s by default) or they reconnect to Redis.\n`,
        );
      }
      print(presentApiKey(revoked.doc), `${revoked.doc._id} revoked`);
    } else {
      fail(`unknown command: keys ${command}`);
    }
  } finally {
    await mongo.client.close();
  }
}

/**
 * The service's own keys: `rotate` adds a version, which running processes read
 * within SERVICE_KEYS_RELOAD_MS and seal or sign with once twice that old; every
 * version held still opens and verifies. `retire` deletes an old version once its
 * successor is older than an idempotency key's lifetime (what it made is gone).
 */
async function serviceKeys(
  keys: Collection<ServiceKeyDoc>,
  config: Config,
  command: string,
  args: string[],
  values: { json?: boolean; force?: boolean },
): Promise<void> {
  const print = (value: unknown, text: string) => process.stdout.write(values.json ? `${JSON.stringify(value)}\n` : `${text}\n`);
  const useOf = (name: string | undefined) => {
    if (!name || !SERVICE_KEY_USES.includes(name)) fail(`the key's use is required, one of: ${SERVICE_KEY_USES.join(', ')}`);
    return name;
  };
  if (command === 'list') {
    const versions = await listServiceKeys(keys);
    print(versions, versions.map((v) => `${v.use}  v${v.version}  ${v.id}  created ${new Date(v.createdMs).toISOString()}`).join('\n') || '(no service keys yet)');
  } else if (command === 'rotate') {
    const use = useOf(args[0]);
    const made = await rotateServiceKey(keys, use);
    const activeFrom = new Date(Date.now() + 2 * config.serviceKeysReloadMs).toISOString();
    print(
      { use, version: made.version, id: made.id, sealing_from: activeFrom },
      `${use} v${made.version} added (${made.id}); running processes read it within ${config.serviceKeysReloadMs / 1000} s and seal or sign with it from ${activeFrom}`,
    );
  } else if (command === 'retire') {
    const use = useOf(args[0]);
    const version = Number(args[1]);
    if (!Number.isInteger(version) || version < 1) fail('the version to retire is required');
    const refused = await retireServiceKey(keys, use, version, values.force ? 0 : config.idempotencyTtlMs);
    if (refused) fail(values.force ? refused : `${refused} (--force retires it anyway)`);
    print({ use, version, retired: true }, `${use} v${version} retired`);
  } else {
    fail(`unknown command: service-keys ${command}`);
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
