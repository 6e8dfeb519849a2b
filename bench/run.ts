/**
 * The benchmark (issue 6): autocannon on loopback against the real api and worker
 * processes (compiled, from dist/) and a baseline Koa process, on the Redis and
 * MongoDB of REDIS_URL / MONGODB_URL. `npm run bench` (scripts/bench.mjs) starts a
 * throw-away stack and runs this; see bench/README.md for the scenarios and knobs.
 *
 * Prints progress on stderr, then a table and the goals on stdout, and writes
 * bench/results/latest.json. Timings are reported, never asserted: the exit code
 * is non-zero only when the benchmark itself could not run.
 */
import { MongoClient } from 'mongodb';
import { progress } from './progress.js';
import { loadAverage, machine, smokeProblems, writeReport, type GroupResult } from './report.js';
import { runBaselineScenarios } from './scenarios/s0-s1-baseline.js';
import { runCreateScenarios } from './scenarios/s2-s3-creates.js';
import { runReplayScenarios } from './scenarios/s4-replays.js';
import { runListScenarios } from './scenarios/s5-lists.js';
import { runConfirmScenarios } from './scenarios/s6-confirms.js';
import { loadAverage1m } from './results-log.js';
import { runRefundScenarios } from './scenarios/s7-refunds.js';
import { runLedgerScenarios } from './scenarios/s8-s9-ledger.js';
import { runPayoutScenarios } from './scenarios/s10-payouts.js';
import { runLedgerCost } from './scenarios/ledger-cost.js';
import { killAll, stopChildrenOnExit } from './service.js';
import { settings } from './settings.js';

async function main(): Promise<void> {
  if (settings.smoke) progress('BENCH_SMOKE: every scenario briefly, on small data; this checks that the benchmark runs, not how fast');
  if (!settings.redisUrl || !settings.mongoUrl) throw new Error('REDIS_URL and MONGODB_URL must be set: run the benchmark with `npm run bench`');
  const when = new Date().toISOString();
  const loadAtStart = loadAverage1m();
  progress(`${machine()}; scenarios ${[...settings.selected].join(', ')}; ${settings.durationS} s each (+${settings.warmupS} s warm-up)`);
  progress(`load average ${loadAverage()} (anything else running on the machine skews the numbers)`);
  const mongo = new MongoClient(settings.mongoUrl);
  await mongo.connect();
  const groups: GroupResult[] = [];
  try {
    // One group at a time, so that no group measures the load of another.
    for (const group of [runBaselineScenarios, runCreateScenarios, runReplayScenarios, runListScenarios, runConfirmScenarios, runRefundScenarios, runLedgerScenarios, runPayoutScenarios, runLedgerCost]) {
      groups.push(await group(mongo));
    }
  } finally {
    await mongo.close();
  }
  writeReport(groups, when, loadAtStart);
  if (settings.smoke) {
    const problems = smokeProblems(groups, settings.selected);
    if (problems.length) throw new Error(`smoke run: ${problems.join('; ')}`);
    progress(`smoke run passed: ${settings.selected.size} scenarios asked for, each ran or was skipped for a stated reason`);
  }
}

stopChildrenOnExit();
main().catch((err: unknown) => {
  progress(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  killAll();
  process.exit(1);
});
