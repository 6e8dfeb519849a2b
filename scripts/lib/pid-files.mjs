// The pid file of a data dir lists the processes a parent started there (the
// servers, and for `npm start` the api and worker too), so that a later run
// can stop those that a killed parent left behind.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { readJson } from './json-file.mjs';
import { log } from './log.mjs';
import { sameProcess, waitForExit } from './processes.mjs';

const PID_FILE = 'stack.pid.json';

/**
 * Reaps the servers recorded in `dataDir` by a parent that no longer runs.
 * Throws when that parent still runs (the data dir is in use).
 */
export async function reapStale(dataDir) {
  const file = path.join(dataDir, PID_FILE);
  const record = readJson(file);
  if (!record) return false;
  if (
    record.parent !== process.pid &&
    sameProcess(record.parent, record.parentBin ?? process.execPath, record.parentArg)
  ) {
    throw new Error(
      `${dataDir} is in use by another running stack (pid ${record.parent}); stop it first`,
    );
  }
  let reaped = false;
  for (const { pid, bin, arg, name } of record.children ?? []) {
    if (!sameProcess(pid, bin, arg)) continue;
    log(`stopping stale ${name ?? bin} (pid ${pid}) left by an earlier run`);
    reaped = true;
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      continue;
    }
    if (!(await waitForExit(pid, 10_000))) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone
      }
      await waitForExit(pid, 2000);
    }
  }
  fs.rmSync(file, { force: true });
  return reaped;
}

function newRecord() {
  return { parent: process.pid, parentBin: process.execPath, parentArg: process.argv[1], children: [] };
}

/** Records `children` as the processes this process runs in `dataDir` (replacing the record). */
export function writePidFile(dataDir, children) {
  const record = newRecord();
  record.children = children.map(({ name, pid, bin }) => ({ name, pid, bin }));
  fs.writeFileSync(path.join(dataDir, PID_FILE), `${JSON.stringify(record, null, 2)}\n`);
}

/** Forgets the processes recorded in `dataDir` (after they were stopped). */
export function clearPidFile(dataDir) {
  fs.rmSync(path.join(dataDir, PID_FILE), { force: true });
}

/**
 * Adds a process (e.g. the api started by start.mjs) to the pid file of
 * `dataDir`, so that a later run stops it if this one is killed. `arg`: a
 * string its command line contains (guards against recycled pids).
 */
export function recordChild(dataDir, { name, pid, bin, arg }) {
  const file = path.join(dataDir, PID_FILE);
  const record = readJson(file) ?? newRecord();
  record.children = [...record.children.filter((c) => c.pid !== pid), { name, pid, bin, arg }];
  fs.writeFileSync(file, `${JSON.stringify(record, null, 2)}\n`);
}

/** Removes throw-away stacks (`prefix*` dirs in the temp dir) of test runs that were killed. */
export async function reapStaleTempStacks(prefix) {
  const tmp = os.tmpdir();
  let entries;
  try {
    entries = fs.readdirSync(tmp).filter((name) => name.startsWith(prefix));
  } catch {
    return;
  }
  for (const name of entries) {
    const dir = path.join(tmp, name);
    const record = readJson(path.join(dir, PID_FILE));
    if (!record || record.parent === process.pid) continue;
    try {
      await reapStale(dir);
      fs.rmSync(dir, { recursive: true, force: true });
    } catch {
      // still in use by a running test
    }
  }
}
