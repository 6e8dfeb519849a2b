// npm run cli: the key CLI (dist/api/cli.js). Without MONGODB_URL in the environment
// it uses the servers of the `npm start` running in this checkout, whose URLs that
// start records in .data/service-env.json; exported variables win.
// NPM_START_DATA_DIR names another data directory than .data/ (the tests use it).

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { ROOT } from './lib/build.mjs';
import { withServiceEnv } from './lib/service-env.mjs';

const cli = path.join(ROOT, 'dist', 'api', 'cli.js');
if (!fs.existsSync(cli)) {
  process.stderr.write('npm run cli: dist/api/cli.js is missing: run `npm run build` (or `npm start`) first\n');
  process.exit(2);
}

const args = process.argv.slice(2);
// `help`, `--help`, `-h`: the usage, which needs no server (the CLI's asksForHelp).
const options = args.includes('--') ? args.slice(0, args.indexOf('--')) : args;
const help = options[0] === 'help' || options.includes('--help') || options.includes('-h');

const dataDir = process.env.NPM_START_DATA_DIR || path.join(ROOT, '.data');
const { env, from } = withServiceEnv(process.env, dataDir);
if (!env.MONGODB_URL && !help) {
  process.stderr.write(
    'npm run cli: MONGODB_URL is not set and no `npm start` is running in this checkout: ' +
      'start it, or export MONGODB_URL (and REDIS_URL, so that revocations reach running apis at once)\n',
  );
  process.exit(2);
}
if (from && !help) process.stderr.write(`npm run cli: using the servers of the running npm start (${path.relative(process.cwd(), from)})\n`);

const child = spawn(process.execPath, [cli, ...args], { cwd: ROOT, env, stdio: 'inherit' });
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 130 : 1)));
