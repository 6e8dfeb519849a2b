/**
 * A statement (DESIGN section 16): one currency's balance transactions of a range
 * of days, as CSV, in posting order, between its opening and its closing balance.
 * Read with one cursor and produced line by line, so a statement of 100,000 rows is
 * streamed, never held whole; `GET /v1/statements` and `npm run cli -- statement`
 * produce the same bytes.
 */
import type { Filter } from 'mongodb';
import type { BalanceTransactionDoc } from '../../common/documents.js';
import type { Scope } from '../../common/jobs.js';
import type { Collections } from '../../common/mongo.js';
import { decimalAmount } from '../../common/money.js';

export interface StatementRange {
  currency: string;
  /** Epoch ms: the first day's start (included), the day after the last's (excluded). */
  fromMs: number;
  toMs: number;
}

export const STATEMENT_COLUMNS = ['row', 'id', 'created', 'type', 'source', 'operator', 'description', 'amount', 'fee', 'net', 'currency', 'balance_after'] as const;

/** A CSV field: quoted when it holds a comma, a quote or a line break; a leading = + - @ is defused for spreadsheets. */
function field(value: string): string {
  const safe = /^[=+\-@\t\r]/.test(value) && !/^-[0-9.]+$/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

function line(values: string[]): string {
  return `${values.map(field).join(',')}\r\n`;
}

const iso = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');

/** The statement's lines: the header, the opening balance, one row per transaction, the closing balance. */
export async function* statementLines(c: Pick<Collections, 'balanceTransactions'>, scope: Scope, range: StatementRange): AsyncGenerator<string> {
  const { currency } = range;
  const base = { project: scope.project, livemode: scope.livemode, currency } as Filter<BalanceTransactionDoc>;
  const before = await c.balanceTransactions
    .find({ ...base, created_ms: { $lt: range.fromMs } } as Filter<BalanceTransactionDoc>, { projection: { balance_after: 1 } })
    .sort({ created_ms: -1, seq: -1 })
    .limit(1)
    .next();
  let balance = before?.balance_after ?? 0;
  const money = (amount: number) => decimalAmount(amount, currency);
  const summary = (row: string, ms: number) => line([row, '', iso(ms), '', '', '', '', '', '', '', currency, money(balance)]);
  yield line([...STATEMENT_COLUMNS]);
  yield summary('opening_balance', range.fromMs);
  const cursor = c.balanceTransactions
    .find({ ...base, created_ms: { $gte: range.fromMs, $lt: range.toMs } } as Filter<BalanceTransactionDoc>, { projection: { entries: 0, key: 0 } })
    .sort({ created_ms: 1, seq: 1 })
    .batchSize(1000);
  try {
    for await (const t of cursor) {
      balance = t.balance_after;
      yield line(['transaction', t._id, iso(t.created_ms), t.type, t.source, t.operator ?? '', t.description ?? '', money(t.amount), money(t.fee), money(t.net), currency, money(t.balance_after)]);
    }
  } finally {
    await cursor.close();
  }
  yield summary('closing_balance', range.toMs);
}

/** A statement's lines are sent in chunks of about this many bytes, not one write per row. */
const CHUNK = 64 * 1024;

/** The statement's lines gathered into chunks: what the route and the CLI write. */
export async function* statementChunks(c: Pick<Collections, 'balanceTransactions'>, scope: Scope, range: StatementRange): AsyncGenerator<string> {
  let chunk = '';
  for await (const line of statementLines(c, scope, range)) {
    chunk += line;
    if (chunk.length >= CHUNK) {
      yield chunk;
      chunk = '';
    }
  }
  if (chunk) yield chunk;
}
