// The stack's FerretDB runs with Go's collector at GOGC=400 unless the environment
// sets GOGC (scripts/lib/servers.mjs): read from the running process's own
// environment, as the kernel holds it.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';

import { startFerretDB } from '#scripts/lib/servers.mjs';

function environOf(pid: number): Map<string, string> {
  const pairs = fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').filter(Boolean);
  return new Map(pairs.map((p) => [p.slice(0, p.indexOf('=')), p.slice(p.indexOf('=') + 1)]));
}

test.serial('FerretDB collects at GOGC=400 by default, and at the GOGC the environment sets', async (t) => {
  const saved = process.env.GOGC;
  t.teardown(() => {
    if (saved === undefined) delete process.env.GOGC;
    else process.env.GOGC = saved;
  });
  for (const [set, expected] of [[undefined, '400'], ['150', '150']] as const) {
    if (set === undefined) delete process.env.GOGC;
    else process.env.GOGC = set;
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'payments-test-stack-ferretdb-gogc-'));
    const server = await startFerretDB({ dir, idPathIndexes: false });
    try {
      t.truthy(server.pid);
      t.is(environOf(server.pid!).get('GOGC'), expected, `GOGC ${set ?? 'unset'} in the environment`);
    } finally {
      await server.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }
});
