/**
 * S0 and S1: the baseline Koa process, what the service is measured against. S0 is
 * a bare route (the ceiling of Koa on this machine); S1 validates and inserts the
 * worker's document in the request, with no queue.
 */
import type { MongoClient } from 'mongodb';
import { timed, type Measurement } from '../measure.js';
import { progress } from '../progress.js';
import type { GroupResult } from '../report.js';
import { startBaseline, reportLogs } from '../service.js';
import { CREATE_BODY, wanted, type ScenarioId } from '../settings.js';

/** Runs S0, S1-c16 and S1-c64 (those asked for) against one baseline process. */
export async function runBaselineScenarios(mongo: MongoClient): Promise<GroupResult> {
  const measured = new Map<ScenarioId, Measurement>();
  if (!wanted('S0', 'S1-c16', 'S1-c64')) return { measured };
  progress('baselines: starting the baseline Koa process');
  const baseline = await startBaseline(mongo);
  try {
    if (wanted('S0')) measured.set('S0', await timed('S0', { url: `${baseline.baseUrl}/ceiling`, connections: 64 }));
    // Any key-shaped token passes the baseline's header check.
    const headers = { Authorization: `Bearer sk_test_${'0'.repeat(40)}`, 'Content-Type': 'application/json' };
    for (const c of [16, 64] as const) {
      const id = `S1-c${c}` as const;
      if (!wanted(id)) continue;
      measured.set(id, await timed(id, { url: `${baseline.baseUrl}/direct`, method: 'POST', connections: c, headers, body: CREATE_BODY }));
    }
    baseline.proc.assertRunning();
  } finally {
    reportLogs([baseline.proc]);
    await baseline.stop();
  }
  return { measured };
}
