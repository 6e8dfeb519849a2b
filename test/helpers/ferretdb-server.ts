/**
 * A private FerretDB for tests that stop and restart their MongoDB. Uses
 * $FERRETDB_BIN (set by `npm test`), a free port and a temporary data directory that
 * survives restarts.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MongoClient } from 'mongodb';
import { freePort, sleep } from './service.js';

export interface FerretDBServer {
  readonly url: string;
  stop(): Promise<void>;
  restart(): Promise<void>;
  dispose(): Promise<void>;
}

export async function startFerretDBServer(): Promise<FerretDBServer> {
  const bin = process.env.FERRETDB_BIN ?? 'ferretdb';
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferretdb-test-'));
  fs.mkdirSync(path.join(dir, 'sqlite'));
  const port = await freePort();
  const url = `mongodb://127.0.0.1:${port}/`;
  let child: ChildProcess | null = null;

  const start = async () => {
    const log = fs.openSync(path.join(dir, 'ferretdb.log'), 'a');
    child = spawn(
      bin,
      [
        '--handler=sqlite', `--sqlite-url=file:${dir}/sqlite/`, '--telemetry=disable',
        `--listen-addr=127.0.0.1:${port}`, '--debug-addr=-', `--state-dir=${dir}`,
      ],
      { stdio: ['ignore', log, log] },
    );
    fs.closeSync(log);
    const deadline = Date.now() + 30_000;
    for (;;) {
      const client = new MongoClient(url, { serverSelectionTimeoutMS: 500 });
      try {
        await client.db('admin').command({ ping: 1 });
        return;
      } catch (err) {
        if (Date.now() > deadline) throw new Error(`FerretDB did not start on ${port}: ${(err as Error).message}`);
        await sleep(100);
      } finally {
        await client.close().catch(() => undefined);
      }
    }
  };

  const stop = async () => {
    const running = child;
    child = null;
    if (!running || running.exitCode !== null) return;
    const exited = new Promise((resolve) => running.once('exit', resolve));
    running.kill('SIGTERM');
    const timer = setTimeout(() => running.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  };

  await start();
  return {
    url,
    stop,
    restart: async () => {
      await stop();
      await start();
    },
    dispose: async () => {
      await stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
