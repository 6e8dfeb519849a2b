/**
 * S8 and S9: the ledger's reads (DESIGN section 16), on 1 api process (no worker),
 * over transactions seeded straight into the database.
 *
 * - S8: a statement of `BENCH_S8_ROWS` transactions (100 000), one currency over a
 *   week: `GET /v1/statements` read to its end once. Its rps is rows a second, its
 *   p50 the whole statement's time (the goal: under a minute for 100 000 rows).
 * - S9: `GET /v1/balance` at 16 connections for `BENCH_DURATION_S`.
 */
import type { Db } from 'mongodb';
import type { BalanceDoc, BalanceTransactionDoc } from '../../common/documents.js';
import { IdGenerator } from '../../common/ids.js';
import { balanceId, entriesOf, movementKeys } from '../../common/ledger.js';
import { cannon, describe, round, timed, type Measurement } from '../measure.js';
import { progress } from '../progress.js';
import type { GroupResult } from '../report.js';
import { reportLogs, startService } from '../service.js';
import { PROJECT, settings, wanted, type ScenarioId } from '../settings.js';

const DAY_MS = 86_400_000;

/** `rows` payments of one scope over the last `days` days, in posting order, and their balance. */
async function seedLedger(db: Db, rows: number, days: number): Promise<{ from: string; to: string }> {
  const end = Date.now() - 60_000;
  const start = Math.floor((end - (days - 1) * DAY_MS) / DAY_MS) * DAY_MS;
  const step = Math.max(1, Math.floor((end - start) / rows));
  const ids = new IdGenerator(Date.now);
  const scope = { project: PROJECT, livemode: false };
  let balance = 0;
  let batch: BalanceTransactionDoc[] = [];
  for (let i = 0; i < rows; i++) {
    const ms = start + i * step;
    const amount = 1000 + (i % 97);
    balance += amount;
    const source = ids.next('payment_intent');
    batch.push({
      _id: ids.next('balance_transaction'), ...scope, currency: 'xof', key: movementKeys.payment(source), type: 'payment', amount, fee: 0, net: amount, source,
      operator: 'mtn_momo', description: `order ${i}`, created: Math.floor(ms / 1000), created_ms: ms, seq: i + 1, balance_after: balance, entries: entriesOf('payment', amount, 0),
    });
    if (batch.length >= settings.seedBatch || i === rows - 1) {
      await db.collection<BalanceTransactionDoc>('balance_transactions').insertMany(batch, { ordered: false });
      batch = [];
    }
  }
  const doc: BalanceDoc = { _id: balanceId(scope, 'xof'), ...scope, currency: 'xof', available: balance, by_operator: { mtn_momo: balance }, seq: rows, tail: [], updated_ms: end };
  await db.collection<BalanceDoc>('balances').insertOne(doc);
  const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
  return { from: day(start), to: day(end) };
}

export async function runLedgerScenarios(mongo: import('mongodb').MongoClient): Promise<GroupResult> {
  const measured = new Map<ScenarioId, Measurement>();
  if (!wanted('S8', 'S9')) return { measured };
  progress('S8/S9: starting 1 api process');
  const service = await startService(mongo, 's8', 0);
  try {
    const rows = settings.s8Rows;
    const began = Date.now();
    const range = await seedLedger(mongo.db(service.dbName), rows, 7);
    progress(`S8: seeded ${rows} transactions in ${((Date.now() - began) / 1000).toFixed(1)} s`);
    if (wanted('S8')) {
      const t0 = performance.now();
      const res = await fetch(`${service.baseUrl}/v1/statements?currency=xof&from=${range.from}&to=${range.to}`, { headers: { Authorization: `Bearer ${service.key}` } });
      let lines = 0;
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) for (const byte of chunk) if (byte === 10) lines++;
      const ms = performance.now() - t0;
      const ok = res.status === 200 && lines === rows + 3;
      const m: Measurement = { rps: round(rows / (ms / 1000), 1), p50_ms: round(ms), p99_ms: round(ms), non2xx: ok ? 0 : 1, requests: 1, mismatches: ok ? 0 : 1 };
      progress(`S8: statement of ${rows} rows (${lines} lines) in ${round(ms / 1000, 1)} s: ${describe(m)}`);
      measured.set('S8', m);
    }
    if (wanted('S9')) {
      const load = { url: `${service.baseUrl}/v1/balance`, connections: 16, headers: { Authorization: `Bearer ${service.key}` } };
      measured.set('S9', settings.smoke ? await cannon({ ...load, durationS: settings.durationS }) : await timed('S9', load));
    }
  } catch (err) {
    reportLogs([service.api]);
    throw err;
  } finally {
    await service.stop();
  }
  return { measured };
}
