/**
 * An api that cannot listen (its port taken, a HOST that is no address of this
 * machine) stops with its reason in one line and exit code 1, as a bad setting does
 * (DESIGN.md section 2), not with an unhandled 'error' event's stack.
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import test from 'ava';

function startApi(env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [path.resolve('dist/bundle/api.mjs')], {
    // Nothing needs to answer: the api listens before it connects.
    env: { PATH: process.env.PATH ?? '', REDIS_URL: 'redis://127.0.0.1:1', MONGODB_URL: 'mongodb://127.0.0.1:1', ...env },
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  return new Promise((resolve) =>
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    }),
  );
}

test('a port in use stops the api with its reason, exit code 1', async (t) => {
  const taken = createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  t.teardown(() => taken.close());
  const port = (taken.address() as AddressInfo).port;
  const { code, stderr } = await startApi({ PORT: String(port), HOST: '127.0.0.1' });
  t.is(code, 1);
  t.regex(stderr, new RegExp(`api failed to start: listen EADDRINUSE.*127\\.0\\.0\\.1:${port}`));
  t.notRegex(stderr, /Unhandled 'error' event/);
});

test('a HOST that is no address of this machine stops the api with its reason, exit code 1', async (t) => {
  const { code, stderr } = await startApi({ PORT: '0', HOST: '192.0.2.1' });
  t.is(code, 1);
  t.regex(stderr, /api failed to start: listen EADDRNOTAVAIL/);
});
