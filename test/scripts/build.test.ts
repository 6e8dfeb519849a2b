// `npm start`, `npm test` and the bench skip the build when nothing it reads has
// changed since the last one (scripts/lib/build.mjs): the fingerprint of the sources.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';

import { buildIsCurrent, sourceFingerprint } from '#scripts/lib/build.mjs';

function project(t: { teardown(fn: () => void): void }): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'payments-build-fingerprint-'));
  t.teardown(() => fs.rmSync(root, { recursive: true, force: true }));
  const write = (file: string, text: string) => {
    fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    fs.writeFileSync(path.join(root, file), text);
  };
  write('api/main.ts', 'export const a = 1;\n');
  write('tsconfig.json', '{}\n');
  write('bench/results/latest.json', '{"rps": 1}\n');
  write('test/artifacts/shot.json', '{}\n');
  write('README.md', '# x\n');
  return root;
}

test('the fingerprint follows the sources, and not what runs write', (t) => {
  const root = project(t);
  const before = sourceFingerprint(root);
  t.regex(before, /^[0-9a-f]{64}$/);

  fs.writeFileSync(path.join(root, 'bench/results/latest.json'), '{"rps": 2}\n');
  fs.writeFileSync(path.join(root, 'bench/results/bench-runs.csv'), 'when\n1\n');
  fs.writeFileSync(path.join(root, 'test/artifacts/shot.json'), '{"x": 1}\n');
  fs.writeFileSync(path.join(root, 'README.md'), '# y\n');
  t.is(sourceFingerprint(root), before, 'run outputs and docs do not count');

  fs.writeFileSync(path.join(root, 'api/main.ts'), 'export const a = 2;\n');
  const edited = sourceFingerprint(root);
  t.not(edited, before, 'an edit counts');

  fs.writeFileSync(path.join(root, 'api/extra.ts'), '');
  t.not(sourceFingerprint(root), edited, 'a new file counts');
});

test('a build is current only with the fingerprint of these sources and both bundles', (t) => {
  const root = project(t);
  t.false(buildIsCurrent(root), 'never built');
  fs.mkdirSync(path.join(root, 'dist/bundle'), { recursive: true });
  fs.writeFileSync(path.join(root, 'dist/.build-fingerprint'), `${sourceFingerprint(root)}\n`);
  t.false(buildIsCurrent(root), 'the bundles are missing');
  fs.writeFileSync(path.join(root, 'dist/bundle/api.mjs'), '');
  fs.writeFileSync(path.join(root, 'dist/bundle/worker.mjs'), '');
  t.true(buildIsCurrent(root));
  fs.writeFileSync(path.join(root, 'api/main.ts'), 'export const a = 3;\n');
  t.false(buildIsCurrent(root), 'a source changed since');
});
