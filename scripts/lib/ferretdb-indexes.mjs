// The `_id` index that FerretDB v1's SQLite backend can actually use.
//
// FerretDB finds, updates and deletes a document by `_id` with
//   WHERE _ferretdb_sjson->'$._id' = ?
// but the unique index it creates for `_id` is on `_ferretdb_sjson->"_id"`. SQLite
// matches an index to a query by the text of its expression, so every lookup by
// `_id` reads the whole table: 39 ms per update of one intent among 5,000 on the
// development machine, 2.9 ms with the index below (docs/decisions/0003-ferretdb-id-index.md). A real
// MongoDB, where MONGODB_URL points in production, looks `_id` up in its own index.
//
// For every collection table of every database file under FerretDB's SQLite
// directory, this adds a plain index on FerretDB's exact expression, through the
// sqlite3 command-line shell (Debian's `sqlite3`), beside the running server: SQLite's
// own locking (FerretDB runs in WAL mode, with a busy timeout) keeps the two apart.
// FerretDB's catalogue does not list the index, so `listIndexes` is unchanged; dropping
// a collection drops its table and the index with it.

import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { findSqlite3 } from './binaries.mjs';

/** The suffix of the index's name: `<table>_id_path`. */
export const ID_PATH_INDEX_SUFFIX = '_id_path';

// Tables of FerretDB's catalogue that have no index of ours yet.
const MISSING = `SELECT c.table_name FROM _ferretdb_collections c
  WHERE NOT EXISTS (SELECT 1 FROM sqlite_master m WHERE m.type = 'index' AND m.name = c.table_name || '${ID_PATH_INDEX_SUFFIX}');`;

function sqlite3(bin, file, sql) {
  return new Promise((resolve, reject) => {
    // A busy timeout: FerretDB may hold the write lock for a moment. mode=rw: a file
    // that FerretDB has just dropped is not created again.
    const uri = `file:${encodeURI(file).replaceAll('?', '%3f').replaceAll('#', '%23')}?mode=rw`;
    execFile(bin, ['-batch', '-cmd', '.timeout 10000', uri, sql], { timeout: 60_000 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`sqlite3 ${path.basename(file)}: ${stderr.trim() || error.message}`));
      else resolve(stdout);
    });
  });
}

const quote = (name) => `"${name.replaceAll('"', '""')}"`;

/**
 * Adds the index to every table of `file` (one FerretDB database) that lacks it.
 * Resolves to the names of the tables indexed now.
 */
export async function indexDatabaseFile(file, { bin = findSqlite3() } = {}) {
  if (!bin) return [];
  const missing = (await sqlite3(bin, file, MISSING)).split('\n').filter(Boolean);
  if (missing.length === 0) return [];
  const statements = missing.map(
    (table) => `CREATE INDEX IF NOT EXISTS ${quote(table + ID_PATH_INDEX_SUFFIX)} ON ${quote(table)} (_ferretdb_sjson->'$._id');`,
  );
  await sqlite3(bin, file, statements.join('\n'));
  return missing;
}

/**
 * Keeps every database file under `sqliteDir` indexed while FerretDB runs: a file is
 * looked at when it appears, a few times more while its application creates its
 * collections (at start-up), then once a minute. Returns a function that stops it.
 * Without a `sqlite3` shell it does nothing but say so once: only speed depends on it.
 */
export function keepIdPathIndexes(sqliteDir, { bin = findSqlite3(), onError = () => {}, onMissingShell = () => {} } = {}) {
  if (!bin) {
    onMissingShell();
    return () => {};
  }
  // Seconds after a file is first seen at which it is looked at again.
  const followUps = [1, 3, 10, 30];
  const files = new Map(); // file -> { seenAt, checks }
  let stopped = false;
  let running = false;

  const tick = async () => {
    if (running || stopped) return;
    running = true;
    try {
      const now = Date.now();
      let names = [];
      try {
        names = fs.readdirSync(sqliteDir).filter((name) => name.endsWith('.sqlite'));
      } catch {
        names = [];
      }
      for (const name of names) {
        const file = path.join(sqliteDir, name);
        let state = files.get(file);
        if (!state) files.set(file, (state = { seenAt: now, checks: 0, lastAt: 0 }));
        const due = state.checks < followUps.length ? state.seenAt + followUps[state.checks] * 1000 : state.lastAt + 60_000;
        if (state.checks > 0 && now < due) continue;
        state.checks++;
        state.lastAt = now;
        if (stopped) break;
        await indexDatabaseFile(file, { bin }).catch(onError);
      }
      for (const file of files.keys()) if (!names.includes(path.basename(file))) files.delete(file);
    } finally {
      running = false;
    }
  };

  const timer = setInterval(() => void tick(), 1000);
  timer.unref();
  void tick();
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}
