/**
 * S5: list pages at 10k and 1M objects, seeded straight into the database. On
 * FerretDB a page takes seconds to minutes (see bench/README.md), so these count
 * requests on one connection instead of running for a time.
 */
import type { MongoClient } from 'mongodb';
import { cannon, describe, type Measurement } from '../measure.js';
import { progress } from '../progress.js';
import type { GroupResult } from '../report.js';
import { seedPaymentIntents } from '../seed.js';
import { reportLogs, startService, type Service } from '../service.js';
import { LIST_LIMIT, PROJECT, settings, wanted, type ScenarioId } from '../settings.js';

function isFullPage(body: string): boolean {
  try {
    const page = JSON.parse(body) as { object?: string; data?: unknown[] };
    return page.object === 'list' && Array.isArray(page.data) && page.data.length === LIST_LIMIT;
  } catch {
    return false;
  }
}

async function listScenario(id: ScenarioId, service: Service, query: string, amount: number): Promise<Measurement> {
  const url = `${service.baseUrl}/v1/payment_intents?${query}`;
  progress(`${id}: ${amount} request(s) at 1 connection (GET ?${query.replace(/starting_after=[^&]+/, 'starting_after=…')})`);
  const m = await cannon({
    url,
    connections: 1,
    amount,
    headers: { Authorization: `Bearer ${service.key}` },
    timeoutS: settings.s5TimeoutS,
    verifyBody: isFullPage,
  });
  progress(`${id}: ${describe(m)}`);
  return m;
}

function seedProgress(label: string): (done: number, count: number) => void {
  let last = 0;
  const began = Date.now();
  return (done, count) => {
    if (done !== count && done - last < 50_000) return;
    last = done;
    const s = (Date.now() - began) / 1000;
    progress(`${label}: ${done}/${count} (${Math.round(done / Math.max(s, 0.001))} docs/s)`);
  };
}

/**
 * Seeds 10k objects and runs S5-10k, then seeds up to 1M and runs S5-1m and
 * S5-1m-deep (those asked for, and only with BENCH_S5_1M), all on one service.
 */
export async function runListScenarios(mongo: MongoClient): Promise<GroupResult> {
  const measured = new Map<ScenarioId, Measurement>();
  const skipped = new Map<ScenarioId, string>();
  if (!settings.s5With1m) {
    for (const id of ['S5-1m', 'S5-1m-deep'] as const) {
      if (wanted(id)) skipped.set(id, 'BENCH_S5_1M=0: the 1M seeding was not asked for');
    }
  }
  const want1m = settings.s5With1m && wanted('S5-1m', 'S5-1m-deep');
  if (!wanted('S5-10k') && !want1m) return { measured, skipped };
  // Lists need no worker; only the api serves them.
  progress('S5: starting 1 api process');
  const service = await startService(mongo, 's5', 0);
  try {
    const db = mongo.db(service.dbName);
    const small = settings.s5SmallCount;
    const large = 1_000_000;
    // The 10k newest objects first; the older ones, for 1M, go underneath them.
    const recent = await seedPaymentIntents(db, {
      project: PROJECT,
      livemode: false,
      count: small,
      endMs: Date.now() - 60_000,
      batchSize: settings.seedBatch,
      onProgress: seedProgress('seeding 10k'),
    });
    progress(`seeded ${small} objects in ${recent.seconds.toFixed(1)} s`);

    if (wanted('S5-10k')) {
      const began = Date.now();
      const res = await fetch(`${service.baseUrl}/v1/payment_intents?limit=${LIST_LIMIT}`, { headers: { Authorization: `Bearer ${service.key}` } });
      const body = await res.text();
      if (res.status !== 200 || !isFullPage(body)) throw new Error(`S5: the first list failed: ${res.status} ${body.slice(0, 300)}`);
      progress(`S5-10k: warm-up request took ${Date.now() - began} ms`);
      measured.set('S5-10k', await listScenario('S5-10k', service, `limit=${LIST_LIMIT}`, settings.s5SmallAmount));
    }

    if (want1m) {
      const older = await seedPaymentIntents(db, {
        project: PROJECT,
        livemode: false,
        count: large - small,
        endMs: recent.startMs - 1000,
        batchSize: settings.seedBatch,
        onProgress: seedProgress('seeding 1M'),
      });
      progress(`seeded ${large - small} more objects in ${older.seconds.toFixed(1)} s (${large} in the project)`);
      if (wanted('S5-1m')) measured.set('S5-1m', await listScenario('S5-1m', service, `limit=${LIST_LIMIT}`, settings.s5LargeAmount));
      if (wanted('S5-1m-deep')) {
        const query = `limit=${LIST_LIMIT}&starting_after=${older.nearOldestId}`;
        measured.set('S5-1m-deep', await listScenario('S5-1m-deep', service, query, settings.s5LargeAmount));
      }
    }
    service.api.assertRunning();
  } finally {
    reportLogs([service.api]);
    await service.stop();
  }
  return { measured, skipped };
}
