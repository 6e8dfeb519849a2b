// The README stays short and hands off to docs/: at most 150 lines, every link
// into docs/ (and every relative link inside docs/ and the connectors' READMEs) names
// a file that exists, and the five-minute walkthrough waits before it shows the events
// it promises, can be run twice (fresh idempotency keys), says to keep the endpoint's
// secret and deletes the endpoint it made. The docs stay manuals that stand alone:
// each docs/*.md at most 500 lines, faults.md and performance.md at most about 200
// (run figures live in bench/results/*.csv), none citing the design notes outside
// the repository (DESIGN.md).

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import test from 'ava';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const README_MAX_LINES = 150;
const DOC_MAX_LINES = 500;
/** The manuals of `npm run chaos` and `npm run bench`: their run figures belong in bench/results/*.csv. */
const MANUAL_MAX_LINES = 220;
const DOC_MAX_LINES_OF: Readonly<Record<string, number>> = { 'docs/faults.md': MANUAL_MAX_LINES, 'docs/performance.md': MANUAL_MAX_LINES };

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

/** Lines as `wc -l` counts them: a final newline ends the last line, it does not start one. */
function lineCount(text: string): number {
  const lines = text.split('\n').length;
  return text.endsWith('\n') ? lines - 1 : lines;
}

function markdownFiles(dir: string): string[] {
  return fs.readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const file = path.posix.join(dir, entry.name);
    if (entry.isDirectory()) return markdownFiles(file);
    return entry.name.endsWith('.md') ? [file] : [];
  });
}

test(`the README is at most ${README_MAX_LINES} lines`, (t) => {
  const lines = lineCount(read('README.md'));
  t.true(lines <= README_MAX_LINES, `README.md has ${lines} lines: move the detail into docs/`);
});

test('every docs/ link of the README names an existing file', (t) => {
  const targets = relativeFiles(links(read('README.md')), '.').filter((file) => file.startsWith('docs/'));
  t.true(targets.length >= 5, 'the README links into docs/');
  const missing = targets.filter((file) => !fs.existsSync(path.join(root, file)) || !fs.statSync(path.join(root, file)).isFile());
  t.deepEqual(missing, []);
});

test(`every docs/*.md is at most ${DOC_MAX_LINES} lines, faults.md and performance.md at most ${MANUAL_MAX_LINES}`, (t) => {
  const docs = fs.readdirSync(path.join(root, 'docs')).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`);
  for (const doc of Object.keys(DOC_MAX_LINES_OF)) t.true(docs.includes(doc), `${doc} exists`);
  const over = docs.flatMap((doc) => {
    const lines = lineCount(read(doc));
    const max = DOC_MAX_LINES_OF[doc] ?? DOC_MAX_LINES;
    return lines > max ? [`${doc} has ${lines} lines, at most ${max}: keep rules and how-tos, move run figures to bench/results/ and lessons to docs/decisions/`] : [];
  });
  t.deepEqual(over, []);
});

test("every relative link inside docs/ and the connectors' READMEs names an existing file", (t) => {
  const connectors = markdownFiles('worker/operators');
  t.true(connectors.length >= 3, 'each connector has its README');
  const missing = [...markdownFiles('docs'), ...connectors].flatMap((doc) =>
    relativeFiles(links(read(doc)), path.posix.dirname(doc))
      .filter((file) => !fs.existsSync(path.join(root, file)))
      .map((file) => `${doc} → ${file}`),
  );
  t.deepEqual(missing, []);
});

function walkthrough(): string | undefined {
  return /## Five minutes[\s\S]*?```sh\n([\s\S]*?)```/.exec(read('README.md'))?.[1];
}

test('the walkthrough waits for the payment before it lists the events', (t) => {
  const block = walkthrough();
  if (block === undefined) return t.fail('no walkthrough in the README');
  const lines = block.split('\n');
  const events = lines.findIndex((line) => line.includes('/v1/events'));
  const wait = lines.findIndex((line) => /\bsleep\b/.test(line));
  t.true(events > 0, 'the walkthrough shows the events');
  t.true(wait >= 0 && wait < events, 'it waits (sleep) before it lists them');
});

test('the walkthrough runs twice: every Idempotency-Key it sends is new on each run', (t) => {
  const keys = [...(walkthrough() ?? '').matchAll(/Idempotency-Key: ([^"'\s]+)/g)].map((m) => m[1] as string);
  t.true(keys.length >= 3, 'it shows idempotency keys');
  t.deepEqual(keys.filter((key) => !key.includes('$')), [], 'a fixed key replays the first run\'s answers on the second');
});

test('the walkthrough says to keep the endpoint secret, and deletes the endpoint it made', (t) => {
  const block = walkthrough() ?? '';
  const lines = block.split('\n');
  const created = lines.findIndex((line) => /curl .*\/v1\/webhook_endpoints .*-d url=/.test(line));
  const deleted = lines.findIndex((line) => /curl .*-X DELETE .*\/v1\/webhook_endpoints\/\$/.test(line));
  const stopped = lines.findIndex((line) => /^kill %1/.test(line));
  t.true(created >= 0, 'it creates an endpoint');
  t.true(deleted > created, 'it deletes that endpoint: left behind, every later event is retried to a dead port');
  t.true(stopped > deleted, 'the receiver stops after its endpoint is gone');
  t.regex(block, /[Ss]ave its\s+(#\s+)?secret/, 'it says to save the whsec_ secret, shown only once');
});

test('the docs stand alone: none cites DESIGN.md, which is not in the repository', (t) => {
  const citing = [...markdownFiles('docs'), 'README.md', ...markdownFiles('worker/operators')].filter((doc) => /DESIGN(\.md| section)/.test(read(doc)));
  t.deepEqual(citing, []);
});
