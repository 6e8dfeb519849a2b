// The store's half of the fence on payment intent writes (worker/record-lock.ts): a
// write waiting on SQLite's lock is carried out when the lock frees, even if the
// worker that sent it is dead by then. With FerretDB's default wait (10 s) it would
// land after a killed worker's 3 s intent lock was taken over, and undo or repeat a
// transition. The stack's FerretDB gives up after 1 s (scripts/lib/servers.mjs): the
// write fails while its lock is still held, and nothing lands later.

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import { MongoClient } from 'mongodb';

import { findSqlite3 } from '#scripts/lib/binaries.mjs';
import { SQLITE_BUSY_TIMEOUT_MS, startFerretDB } from '#scripts/lib/servers.mjs';

import { isInfrastructureError } from '../common/infra-errors.js';
import { INTENT_LOCK } from '../worker/record-lock.js';

const sqlite3 = findSqlite3();

(sqlite3 ? test : test.skip)(
  `a FerretDB write blocked on SQLite's lock fails within the intent lock's ttl and never lands later${sqlite3 ? '' : ' (skipped: no sqlite3 shell to hold the lock with, and apt-get could not install one)'}`,
  async (t) => {
    t.true(SQLITE_BUSY_TIMEOUT_MS < INTENT_LOCK.ttlMs, 'the store gives up on a write before the lock that fenced it can lapse');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'payments-test-stack-ferretdb-busy-'));
    const server = await startFerretDB({ dir, idPathIndexes: false });
    const client = new MongoClient(server.url);
    t.teardown(async () => {
      await client.close();
      await server.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    });
    const intents = client.db('busy').collection<{ _id: string; n: number }>('intents');
    await intents.insertOne({ _id: 'pi_1', n: 0 });

    // Another writer holds SQLite's write lock for twice the intent lock's ttl.
    const holdMs = 2 * INTENT_LOCK.ttlMs;
    const holder = spawn(sqlite3!, [path.join(dir, 'sqlite', 'busy.sqlite')], { stdio: ['pipe', 'pipe', 'inherit'] });
    const exited = new Promise<void>((resolve) => holder.on('exit', () => resolve()));
    // It says when it holds the lock: the write below is sent only then.
    let said = '';
    const holding = new Promise<void>((resolve) => holder.stdout.on('data', (chunk: Buffer) => (said += chunk.toString()).includes('holding') && resolve()));
    holder.stdin.end(`BEGIN IMMEDIATE;\nUPDATE _ferretdb_collections SET name = name;\n.print holding\n.shell sleep ${holdMs / 1000}\nCOMMIT;\n.quit\n`);
    await holding;

    const sentMs = Date.now();
    const error = await intents.updateOne({ _id: 'pi_1' }, { $set: { n: 1 } }).then(
      () => null,
      (err: unknown) => err,
    );
    t.log(`the blocked write was answered after ${Date.now() - sentMs} ms: ${error === null ? 'applied' : String(error)}`);
    t.truthy(error, 'the write failed instead of waiting for the lock to free');
    t.true(isInfrastructureError(error), 'as a locked database, which its sender retries under its lock');
    await exited;
    t.deepEqual(await intents.findOne({ _id: 'pi_1' }), { _id: 'pi_1', n: 0 }, 'the failed write did not land once the lock freed');
  },
);
