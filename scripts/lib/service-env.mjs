// What `npm start` records for the tools that run beside it: the URLs of the servers
// it started (or was given), in .data/service-env.json while it runs, so that the key
// CLI (`npm run cli`, scripts/cli.mjs) reaches the same Redis and MongoDB with nothing
// exported.

import fs from 'node:fs';
import path from 'node:path';

/** The file, inside npm start's data directory. */
export const SERVICE_ENV_FILE = 'service-env.json';

/** The variables recorded: what the CLI needs to find the service's data. */
export const SERVICE_ENV_NAMES = ['REDIS_URL', 'REDIS_CLUSTER_NODES', 'MONGODB_URL', 'MONGODB_DB', 'QUEUE_PREFIX'];

/** Records the set ones of SERVICE_ENV_NAMES from `env`, with the recording process's pid. */
export function recordServiceEnv(dataDir, env, pid = process.pid) {
  const values = Object.fromEntries(SERVICE_ENV_NAMES.filter((name) => env[name]).map((name) => [name, env[name]]));
  const file = path.join(dataDir, SERVICE_ENV_FILE);
  fs.writeFileSync(file, `${JSON.stringify({ pid, env: values }, null, 2)}\n`, { mode: 0o600 });
  return file;
}

/** Removes the record (npm start does, when it stops). */
export function clearServiceEnv(dataDir) {
  fs.rmSync(path.join(dataDir, SERVICE_ENV_FILE), { force: true });
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === 'EPERM';
  }
}

/**
 * `env` completed from the record of a running `npm start` in `dataDir`, when `env`
 * has no MONGODB_URL: each recorded variable that `env` leaves unset is added. Returns
 * the environment, and the record's path when it was used (null otherwise, or when the
 * record's process is gone: a record left by a start that was killed).
 */
export function withServiceEnv(env, dataDir) {
  if (env.MONGODB_URL) return { env, from: null };
  const file = path.join(dataDir, SERVICE_ENV_FILE);
  let record;
  try {
    record = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch {
    return { env, from: null };
  }
  if (!record || typeof record.env !== 'object' || !Number.isInteger(record.pid) || !alive(record.pid)) return { env, from: null };
  const merged = { ...env };
  for (const name of SERVICE_ENV_NAMES) {
    if (!merged[name] && typeof record.env[name] === 'string') merged[name] = record.env[name];
  }
  return { env: merged, from: file };
}
