/**
 * docs/payments.md, "Operators and countries", and `GET /v1/operators` say the same
 * thing: every row of the docs' catalog table is an operator and country the API
 * lists, with the same calling code, currencies, bounds, flow and refunds, and the
 * API lists nothing the table lacks. The prefix table matches
 * `GET /v1/operators/resolve` for a number built from each prefix.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { useService } from '../helpers/use-service.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const docs = readFileSync(path.join(root, 'docs', 'payments.md'), 'utf8');

const e2e = useService(test, { workers: 0 });

/** The rows of the first markdown table under `heading`, as arrays of trimmed cells. */
function tableUnder(heading: string, nth = 0): string[][] {
  const start = docs.indexOf(`\n${heading}\n`);
  if (start < 0) throw new Error(`docs/payments.md has no "${heading}"`);
  const lines = docs.slice(start).split('\n');
  const tables: string[][][] = [];
  let current: string[][] | null = null;
  for (const line of lines.slice(2)) {
    if (/^#{1,3} /.test(line)) break;
    if (line.startsWith('|')) {
      current ??= [];
      current.push(line.slice(1, -1).split('|').map((cell) => cell.trim()));
    } else if (current) {
      tables.push(current);
      current = null;
    }
  }
  if (current) tables.push(current);
  const table = tables[nth];
  if (!table) throw new Error(`no table ${nth} under "${heading}"`);
  return table.slice(2);
}

/** `1 500 000 XOF` → 1500000 (minor units), `250 000.00 KES` → 25000000. */
function minorUnits(shown: string): number {
  const match = /^([0-9 ]+)(?:\.([0-9]+))? [A-Z]{3}$/.exec(shown);
  if (!match) throw new Error(`not an amount: ${shown}`);
  return Number(`${match[1]!.replaceAll(' ', '')}${match[2] ?? ''}`);
}

const code = (cell: string) => cell.replaceAll('`', '');

test('the docs catalog table and GET /v1/operators say the same thing', async (t) => {
  const key = await e2e.key('docs');
  const res = await e2e.service.request('GET', '/v1/operators', { key });
  t.is(res.status, 200, res.text);
  const fromApi = (res.body.data as Array<{ id: string; flow: string; refunds: string; countries: Array<Record<string, unknown>> }>).flatMap((o) =>
    o.countries.map((c) => ({ operator: o.id, country: c.country, calling_code: c.calling_code, currencies: c.currencies, min_amount: c.min_amount, max_amount: c.max_amount, flow: o.flow, refunds: o.refunds })),
  );
  const fromDocs = tableUnder('## Operators and countries').map(([operator, country, calling, currencies, min, max, flow, refunds]) => ({
    operator: code(operator!),
    country: country!.split(' ')[0],
    calling_code: calling!.replace('+', ''),
    currencies: currencies!.split(',').map((c) => code(c.trim())),
    min_amount: minorUnits(min!),
    max_amount: minorUnits(max!),
    flow,
    refunds,
  }));
  t.true(fromDocs.length >= 30, `the docs table has ${fromDocs.length} rows`);
  t.deepEqual(fromDocs, fromApi);
});

test('the docs prefix table and GET /v1/operators/resolve agree', async (t) => {
  const key = await e2e.key('prefixes');
  const rows = tableUnder('### Which operator a number belongs to');
  t.true(rows.length >= 30, `the prefix table has ${rows.length} rows`);
  for (const [country, operator, prefixes] of rows) {
    const calling = country!.split('+')[1]!;
    if (prefixes === 'any number') {
      const res = await e2e.service.request('GET', `/v1/operators/resolve?phone_number=%2B${calling}900000000`, { key });
      t.true((res.body.candidates as string[]).includes(code(operator!)), `${country} ${operator}: any number`);
      continue;
    }
    for (const prefix of prefixes!.split(' ')) {
      const res = await e2e.service.request('GET', `/v1/operators/resolve?phone_number=%2B${calling}${prefix.padEnd(9, '0')}`, { key });
      t.is(res.status, 200, res.text);
      t.is(res.body.operator, code(operator!), `${country} ${prefix}`);
    }
  }
});
