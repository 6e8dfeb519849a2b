/**
 * The key CLI beside `npm start`: `npm run cli` (scripts/cli.mjs) finds the servers of
 * the running start through the URLs it records (.data/service-env.json), with nothing
 * exported; a record left by a start that is gone is ignored, and exported URLs win.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import test from 'ava';

import { clearServiceEnv, recordServiceEnv } from '#scripts/lib/service-env.mjs';

import { uniqueName } from '../../helpers/service.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../..');
const mongoUrl = process.env.MONGODB_URL as string;

/** `npm run cli -- <args>` with only PATH in the environment, and `dataDir` as npm start's data directory. */
function cli(args: string[], dataDir: string, env: Record<string, string> = {}) {
  return spawnSync(process.execPath, [path.join(root, 'scripts/cli.mjs'), ...args], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', NPM_START_DATA_DIR: dataDir, ...env },
    encoding: 'utf8',
    timeout: 60_000,
  });
}

function dataDir(t: { teardown(fn: () => void): void }): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'payments-cli-data-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('with npm start running, the CLI uses its servers with nothing exported', (t) => {
  const dir = dataDir(t);
  const db = uniqueName('cli_beside_start');
  // This test's process stands for the running start.
  recordServiceEnv(dir, { MONGODB_URL: mongoUrl, MONGODB_DB: db, REDIS_URL: process.env.REDIS_URL });
  const project = uniqueName('p');

  const created = cli(['keys', 'create', '--project', project, '--json'], dir);
  t.is(created.status, 0, created.stderr);
  t.regex(created.stderr, /using the servers of the running npm start/);
  const key = JSON.parse(created.stdout) as { id: string; secret: string; project: string };
  t.is(key.project, project);
  t.regex(key.secret, /^sk_test_/);

  const listed = cli(['keys', 'list', '--project', project, '--json'], dir);
  t.is(listed.status, 0, listed.stderr);
  t.deepEqual((JSON.parse(listed.stdout) as Array<{ id: string }>).map((k) => k.id), [key.id]);

  // Exported variables win over the record: another database has no such key.
  const elsewhere = cli(['keys', 'list', '--project', project, '--json'], dir, { MONGODB_URL: mongoUrl, MONGODB_DB: `${db}_other` });
  t.is(elsewhere.status, 0, elsewhere.stderr);
  t.deepEqual(JSON.parse(elsewhere.stdout), []);

  clearServiceEnv(dir);
  const stopped = cli(['keys', 'list', '--project', project], dir);
  t.is(stopped.status, 2);
  t.regex(stopped.stderr, /no `npm start` is running in this checkout: start it, or export MONGODB_URL/);
});

test('a record left by a start that is gone is ignored', (t) => {
  const dir = dataDir(t);
  // A pid no process has: the start that wrote it was killed.
  const gone = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  recordServiceEnv(dir, { MONGODB_URL: mongoUrl }, Number(gone.stdout));
  const result = cli(['keys', 'list'], dir);
  t.is(result.status, 2);
  t.regex(result.stderr, /MONGODB_URL is not set/);
});

test('help, --help and -h print the usage and exit 0, with no server; a wrong option or command gets it on stderr, exit 2', (t) => {
  const dir = dataDir(t);
  for (const args of [['--help'], ['-h'], ['help'], ['keys', '--help'], ['keys', 'create', '-h']]) {
    const result = cli(args, dir);
    t.is(result.status, 0, `${args.join(' ')}: ${result.stderr}`);
    t.regex(result.stdout, /^usage: npm run --silent cli -- COMMAND\n/, args.join(' '));
    t.regex(result.stdout, /keys create --project NAME/);
    t.regex(result.stdout, /a project exists once it has its first key/);
    t.is(result.stderr, '', args.join(' '));
  }
  recordServiceEnv(dir, { MONGODB_URL: mongoUrl, MONGODB_DB: uniqueName('cli_help') });
  t.teardown(() => clearServiceEnv(dir));
  const unknownOption = cli(['keys', 'list', '--bogus'], dir);
  t.is(unknownOption.status, 2);
  t.regex(unknownOption.stderr, /Unknown option '--bogus'[\s\S]*\nusage: /);
  const unknownCommand = cli(['payments', 'list'], dir);
  t.is(unknownCommand.status, 2);
  t.regex(unknownCommand.stderr, /unknown command: payments list\nusage: /);
});
