// The `_id` index that the stack scripts add to FerretDB's SQLite tables
// (scripts/lib/ferretdb-indexes.mjs): made for every collection, used by FerretDB's
// own lookup by `_id`, invisible to the MongoDB protocol, gone with its database.

import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import { MongoClient } from 'mongodb';

import { findSqlite3 } from '#scripts/lib/binaries.mjs';
import { ID_PATH_INDEX_SUFFIX } from '#scripts/lib/ferretdb-indexes.mjs';
import { startFerretDB } from '#scripts/lib/servers.mjs';

import { until } from './helpers/service.js';

const sqlite3 = findSqlite3();
/** The index keeper looks at the files every second (keepIdPathIndexes): one look has come after this. */
const PAST_A_KEEPER_TICK_MS = 1500;
const sql = (file: string, query: string) => execFileSync(sqlite3!, ['-batch', `file:${file}?mode=ro`, query], { encoding: 'utf8' });

(sqlite3 ? test : test.skip)(
  `FerretDB's lookups by _id use the index the stack adds${sqlite3 ? '' : ' (skipped: no sqlite3 shell, and apt-get could not install one)'}`,
  async (t) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'payments-test-stack-ferretdb-index-'));
    const server = await startFerretDB({ dir });
    const client = new MongoClient(server.url);
    t.teardown(async () => {
      await client.close();
      await server.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    });
    const db = client.db('indexed');
    const intents = db.collection<{ _id: string; n: number }>('intents');
    await intents.insertMany(Array.from({ length: 50 }, (_, i) => ({ _id: `pi_${i}`, n: i })));
    await db.collection('others').createIndex({ n: 1 });

    const file = path.join(dir, 'sqlite', 'indexed.sqlite');
    const tables = sql(file, 'SELECT table_name FROM _ferretdb_collections ORDER BY table_name').split('\n').filter(Boolean);
    t.is(tables.length, 2);
    const indexed = () => sql(file, "SELECT name FROM sqlite_master WHERE type = 'index'").split('\n').filter(Boolean);
    await until('an index on every table', () => (tables.every((table) => indexed().includes(table + ID_PATH_INDEX_SUFFIX)) ? true : undefined));

    // FerretDB's own statement for a find, update or delete by _id (backends/sqlite).
    const table = sql(file, "SELECT table_name FROM _ferretdb_collections WHERE name = 'intents'").trim();
    const plan = sql(file, `EXPLAIN QUERY PLAN SELECT _ferretdb_sjson FROM "${table}" WHERE _ferretdb_sjson->'$._id' = '"pi_7"'`);
    t.regex(plan, new RegExp(`USING INDEX ${table}${ID_PATH_INDEX_SUFFIX}`), plan);

    // The MongoDB protocol sees FerretDB's indexes only, and documents as they were.
    t.deepEqual((await intents.listIndexes().toArray()).map((i) => i.name), ['_id_']);
    await intents.updateOne({ _id: 'pi_7' }, { $inc: { n: 100 } });
    t.deepEqual(await intents.findOne({ _id: 'pi_7' }), { _id: 'pi_7', n: 107 });
    await intents.deleteOne({ _id: 'pi_8' });
    t.is(await intents.countDocuments({}), 49);

    // A dropped database is not brought back by a later look at its file.
    await db.dropDatabase();
    await new Promise((resolve) => setTimeout(resolve, PAST_A_KEEPER_TICK_MS));
    t.false(fs.existsSync(file));
  },
);
