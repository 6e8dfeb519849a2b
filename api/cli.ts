/**
 * Operator CLI for API keys, against the configured MongoDB (and Redis, when
 * REDIS_URL is set, to push revocations to running api processes at once).
 *
 *   npm run --silent cli -- keys create --project acme [--live] [--json]
 *   npm run --silent cli -- keys list --project acme [--json]
 *   npm run --silent cli -- keys revoke key_… [--json]
 */
import { parseArgs } from 'node:util';
import { issueKey, listKeys, PROJECT_PATTERN, revokeKey } from '../common/api-keys.js';
import { loadConfig } from '../common/config.js';
import { connectMongo } from '../common/mongo.js';
import { presentApiKey } from '../common/presenters.js';
import { createRedis, waitReady } from '../common/redis.js';
import { IdGenerator } from '../common/ids.js';

const USAGE = `usage:
  cli keys create --project NAME [--live] [--json]
  cli keys list [--project NAME] [--json]
  cli keys revoke KEY_ID [--json]`;

function fail(message: string): never {
  process.stderr.write(`${message}\n${USAGE}\n`);
  process.exit(2);
}

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    args: process.argv.slice(2),
    options: { project: { type: 'string' }, live: { type: 'boolean', default: false }, json: { type: 'boolean', default: false } },
    allowPositionals: true,
  });
  const [group, command, arg] = positionals;
  if (group !== 'keys' || !command) fail('unknown command');
  const config = loadConfig(process.env, { needRedis: false });
  const mongo = await connectMongo(config.mongodbUrl, config.mongodbDb, 'payments-cli');
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

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
