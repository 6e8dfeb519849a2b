/**
 * The run logs: `npm run bench` and `npm run chaos` each append one row per run to a
 * committed CSV file under bench/results/ (bench-runs.csv, chaos-runs.csv), so that
 * what a run measured is kept by the tool that measured it, not copied into prose.
 * The JSON reports beside them (git-ignored) hold the details of the latest runs.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** One row: column name → value (null or undefined: an empty cell). */
export type RunRow = Record<string, string | number | boolean | null | undefined>;

function cell(value: RunRow[string]): string {
  if (value === null || value === undefined) return '';
  const text = String(value);
  return /[",\n\r]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** The CSV line of `values`, in `columns` order (no newline). */
export function csvLine(columns: readonly string[], values: RunRow): string {
  return columns.map((c) => cell(values[c])).join(',');
}

/**
 * The commit the run measured: the short sha of HEAD, with `-dirty` when tracked files
 * other than the run logs differ from it; `unknown` outside a git checkout.
 */
export function gitSha(root: string): string {
  const git = (...args: string[]) => spawnSync('git', args, { cwd: root, encoding: 'utf8', timeout: 10_000 });
  const head = git('rev-parse', '--short=12', 'HEAD');
  if (head.status !== 0 || !head.stdout.trim()) return 'unknown';
  const status = git('status', '--porcelain', '--untracked-files=no', '--', '.', ':(exclude)bench/results');
  return `${head.stdout.trim()}${status.status === 0 && status.stdout.trim() ? '-dirty' : ''}`;
}

/** The machine's 1-minute load average, to 2 decimals. */
export function loadAverage1m(): number {
  return Math.round((os.loadavg()[0] ?? 0) * 100) / 100;
}

/**
 * Appends `row` to the CSV `file`, writing the header first when the file is new or
 * empty. A file whose header is not `columns` is left alone (it was written by another
 * version of the tool): the row is not appended and an Error says so.
 */
export function appendRunRow(file: string, columns: readonly string[], row: RunRow): void {
  const header = columns.join(',');
  let existing = '';
  try {
    existing = fs.readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const firstLine = existing.split('\n', 1)[0] ?? '';
  if (existing.trim() !== '' && firstLine !== header) {
    throw new Error(`${file} has other columns (${firstLine.slice(0, 80)}…); the row was not appended: move the file aside to start a new log`);
  }
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const line = `${csvLine(columns, row)}\n`;
  if (existing.trim() === '') fs.writeFileSync(file, `${header}\n${line}`);
  else fs.appendFileSync(file, existing.endsWith('\n') ? line : `\n${line}`);
}
