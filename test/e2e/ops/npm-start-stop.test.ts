/**
 * Ctrl-C on `npm start` (scripts/start.mjs) stops the api first and the worker after
 * it: the creates in flight when it comes are answered 200 by jobs that the worker,
 * still running, finishes, and none is cut off with a 503. Run against this suite's
 * servers (REDIS_URL and MONGODB_URL set, so the start brings up none of its own),
 * with a data directory of its own.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { MongoClient } from 'mongodb';
import { freePort } from '#scripts/lib/net.mjs';

import { sleep, stackUrls, uniqueName } from '../../helpers/service.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../..');

test('Ctrl-C answers the creates in flight before the worker stops, then exits 0', async (t) => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'payments-start-data-'));
  t.teardown(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  const { redisUrl, mongoUrl } = stackUrls();
  const db = uniqueName('npm_start_stop');
  const port = await freePort();
  const start = spawn(process.execPath, [path.join(root, 'scripts/start.mjs')], {
    cwd: root,
    env: {
      PATH: process.env.PATH ?? '',
      REDIS_URL: redisUrl,
      MONGODB_URL: mongoUrl,
      MONGODB_DB: db,
      QUEUE_PREFIX: uniqueName('q'),
      PORT: String(port),
      HOST: '127.0.0.1',
      NPM_START_DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      // Slow creates on a narrow worker: 40 of them take about 2 s, so most are in
      // flight, and their jobs still waiting, when Ctrl-C comes.
      WORKER_CONCURRENCY: '4',
      CREATE_BATCH_WAIT_MS: '200',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  start.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  start.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => start.on('exit', (code) => resolve(code)));
  t.teardown(() => {
    if (start.exitCode === null) start.kill('SIGKILL');
  });

  for (let i = 0; i < 600 && !/Test API key\s+sk_test_/.test(stdout); i++) await sleep(100);
  const key = /Test API key\s+(sk_test_\S+)/.exec(stdout)?.[1];
  t.truthy(key, `npm start printed no test key:\n${stdout}\n${stderr}`);
  t.true(stdout.includes(`(kept in ${dataDir}/default-test-key)`), 'the banner names the data directory in use');
  t.regex(stdout, /Queue dashboard\s+http:\S+\/admin\/queues\s+\(sign in as user "admin", password: the admin token\)/, 'the banner says how to sign in to the dashboard');

  let answered = 0;
  const creates = Array.from({ length: 40 }, (_, i) =>
    fetch(`http://127.0.0.1:${port}/v1/payment_intents`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ amount: 1000 + i }),
    }).then(
      async (res) => {
        answered++;
        return { status: res.status, body: (await res.json()) as { id?: string }, at: performance.now() };
      },
      () => ({ status: 0, body: {} as { id?: string }, at: performance.now() }),
    ),
  );
  // Ctrl-C once the creates flow (the first is answered), while most are still in flight.
  for (let i = 0; i < 600 && answered === 0; i++) await sleep(10);
  const interrupted = performance.now();
  // What a terminal does on Ctrl-C: the signal reaches the start's process group only.
  start.kill('SIGINT');
  const answers = await Promise.all(creates);
  t.is(await exited, 0, stderr);

  const statuses = answers.map((a) => a.status);
  t.deepEqual(statuses.filter((s) => s !== 200), [], 'every create sent before Ctrl-C is answered 200');
  t.true(answers.some((a) => a.at > interrupted), 'some creates were still in flight at Ctrl-C');
  const stops = stderr.split('\n').filter((l) => l.startsWith('[start] stopping '));
  t.deepEqual(stops.slice(0, 2), ['[start] stopping the api', '[start] stopping the worker']);

  // Every answer names an intent that was written.
  const mongo = new MongoClient(mongoUrl);
  t.teardown(() => mongo.close());
  const intents = mongo.db(db).collection<{ _id: string }>('payment_intents');
  for (const { body } of answers) t.truthy(await intents.findOne({ _id: body.id as string }), body.id);
});
