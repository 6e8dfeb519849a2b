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
 *   npm run --silent cli -- statement --project acme [--live] --currency xof --from 2026-03-01 --to 2026-03-31 [--out FILE]
 */
import { createWriteStream } from 'node:fs';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { parseArgs } from 'node:util';
import { issueKey, listKeys, PROJECT_PATTERN, revokeKey } from '../common/api-keys.js';
import type { Collection } from 'mongodb';
import { loadConfig, type Config } from '../common/config.js';
import type { ServiceKeyDoc } from '../common/documents.js';
import { connectMongo } from '../common/mongo.js';
import { presentApiKey } from '../common/presenters.js';
import { createRedis, redisTarget, waitReady } from '../common/redis.js';
import { IdGenerator } from '../common/ids.js';
import { FINGERPRINT_KEY_ID } from '../common/idempotency.js';
import { INPUT_KEY_ID } from '../common/input-seal.js';
import { ANSWER_KEY_ID } from '../common/jobs.js';
import { listServiceKeys, retireServiceKey, rotateServiceKey } from '../common/service-keys.js';
import { CALLBACK_KEY_ID } from '../worker/operators/mpesa/callbacks.js';
import { statementChunks } from './queries/statements.js';
import { parseStatementQuery, type StatementQuery } from './schemas/balance.js';

/** What each service key is for (common/service-keys.ts). */
const SERVICE_KEY_USES = [INPUT_KEY_ID, ANSWER_KEY_ID, FINGERPRINT_KEY_ID, CALLBACK_KEY_ID];

const USAGE = `usage: npm run --silent cli -- COMMAND
  keys create --project NAME [--live] [--json]    issue a secret key (sk_test_…, or sk_live_… with --live);
                                                  a project exists once it has its first key
  keys list [--project NAME] [--json]             list keys (never their secrets)
  keys revoke KEY_ID [--json]                     revoke a key at once
  service-keys list [--json]                      the service's own keys, by use and version
  service-keys rotate USE [--json]                add a version of a service key
  service-keys retire USE VERSION [--force] [--json]
                                                  delete an old version once nothing made with it is in use
  statement --project NAME [--live] --currency CODE --from YYYY-MM-DD --to YYYY-MM-DD [--out FILE]
                                                  a balance statement as CSV (the same bytes as GET /v1/statements)
  help, --help, -h                                this text
USE: ${SERVICE_KEY_USES.join(', ')}
It reaches the servers of the \`npm start\` running in this checkout, or MONGODB_URL (and REDIS_URL) when exported.`;

function fail(message: string): never {
  process.stderr.write(`${message}\n${USAGE}\n`);
  process.exit(2);
}

/** `help`, `--help` or `-h` anywhere before a `--`: the usage, on stdout, and nothing else. */
function asksForHelp(args: readonly string[]): boolean {
  const options = args.includes('--') ? args.slice(0, args.indexOf('--')) : args;
  return options[0] === 'help' || options.includes('--help') || options.includes('-h');
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  if (asksForHelp(args)) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  let parsed;
  try {
    parsed = parseArgs({
      args,
      options: {
        project: { type: 'string' },
        live: { type: 'boolean', default: false },
        json: { type: 'boolean', default: false },
        force: { type: 'boolean', default: false },
        currency: { type: 'string' },
        from: { type: 'string' },
        to: { type: 'string' },
        out: { type: 'string' },
      },
      allowPositionals: true,
    });
  } catch (err) {
    // Unknown option, or a value missing: node's message, then the usage.
    fail((err as Error).message);
  }
  const { values, positionals } = parsed;
  const [group, command, arg] = positionals;
  if (group === 'statement') return statement(values);
  if ((group !== 'keys' && group !== 'service-keys') || !command) fail(group === undefined ? 'a command is required' : `unknown command: ${positionals.join(' ')}`);
  const config = loadConfig(process.env, { needRedis: false });
  const mongo = await connectMongo(config.mongodbUrl, config.mongodbDb, 'payments-cli', config.storeProfile);
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
      const redis = process.env.REDIS_URL || config.redisClusterNodes ? createRedis(redisTarget(config), 'failFast', 'cli') : null;
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
 * A statement, the same bytes as `GET /v1/statements` (api/queries/statements.ts),
 * to `--out` or to the standard output.
 */
async function statement(values: { project?: string; live: boolean; currency?: string; from?: string; to?: string; out?: string }): Promise<void> {
  if (!values.project || !PROJECT_PATTERN.test(values.project)) fail('statement needs --project NAME');
  const params = new URLSearchParams();
  for (const name of ['currency', 'from', 'to'] as const) if (values[name] !== undefined) params.set(name, values[name]);
  let range: StatementQuery;
  try {
    range = parseStatementQuery(params);
  } catch (err) {
    fail(`statement: ${(err as Error).message}`);
  }
  const config = loadConfig(process.env, { needRedis: false });
  const mongo = await connectMongo(config.mongodbUrl, config.mongodbDb, 'payments-cli', config.storeProfile);
  try {
    const lines = Readable.from(statementChunks(mongo.collections, { project: values.project, livemode: values.live }, range));
    await pipeline(lines, values.out ? createWriteStream(values.out) : process.stdout);
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
