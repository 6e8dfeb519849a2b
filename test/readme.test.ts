// The README stays short and hands off to docs/: at most about 200 lines, every link
// into docs/ (and every relative link inside docs/) names a file that exists, and
// the five-minute walkthrough waits before it shows the events it promises.

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import test from 'ava';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const README_MAX_LINES = 200;

const read = (file: string) => fs.readFileSync(path.join(root, file), 'utf8');

/** The targets of the Markdown links `[text](target)` in `text`, outside code blocks. */
function links(text: string): string[] {
  const prose = text.replace(/```[\s\S]*?```/g, '');
  return [...prose.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1] as string);
}

/** The relative targets among `targets`, as files (no anchor), from the directory `from`. */
function relativeFiles(targets: string[], from: string): string[] {
  return targets
    .filter((target) => !/^[a-z]+:/i.test(target) && !target.startsWith('#'))
    .map((target) => path.posix.normalize(path.posix.join(from, target.split('#')[0] as string)));
}

function markdownFiles(dir: string): string[] {
  return fs.readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const file = path.posix.join(dir, entry.name);
    if (entry.isDirectory()) return markdownFiles(file);
    return entry.name.endsWith('.md') ? [file] : [];
  });
}

test(`the README is at most ${README_MAX_LINES} lines`, (t) => {
  const lines = read('README.md').split('\n').length;
  t.true(lines <= README_MAX_LINES, `README.md has ${lines} lines: move the detail into docs/`);
});

test('every docs/ link of the README names an existing file', (t) => {
  const targets = relativeFiles(links(read('README.md')), '.').filter((file) => file.startsWith('docs/'));
  t.true(targets.length >= 5, 'the README links into docs/');
  const missing = targets.filter((file) => !fs.existsSync(path.join(root, file)) || !fs.statSync(path.join(root, file)).isFile());
  t.deepEqual(missing, []);
});

test('every relative link inside docs/ names an existing file', (t) => {
  const missing = markdownFiles('docs').flatMap((doc) =>
    relativeFiles(links(read(doc)), path.posix.dirname(doc))
      .filter((file) => !fs.existsSync(path.join(root, file)))
      .map((file) => `${doc} → ${file}`),
  );
  t.deepEqual(missing, []);
});

test('the walkthrough waits for the payment before it lists the events', (t) => {
  const readme = read('README.md');
  const walkthrough = /## Five minutes[\s\S]*?```sh\n([\s\S]*?)```/.exec(readme)?.[1];
  if (walkthrough === undefined) return t.fail('no walkthrough in the README');
  const lines = walkthrough.split('\n');
  const events = lines.findIndex((line) => line.includes('/v1/events'));
  const wait = lines.findIndex((line) => /\bsleep\b/.test(line));
  t.true(events > 0, 'the walkthrough shows the events');
  t.true(wait >= 0 && wait < events, 'it waits (sleep) before it lists them');
});
