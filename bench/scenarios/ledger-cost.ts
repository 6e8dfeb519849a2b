/**
 * What posting costs the payment path (DESIGN section 16): S6 and S7 again, in
 * `BENCH_LEDGER_PAIRS` pairs within one run, each pair once with the worker posting
 * nothing (`LEDGER_POSTINGS=off`) and once posting, which goes first alternating
 * from pair to pair. A pair's ratio (posting / not, completed a second) is taken
 * under the load of its own minutes, so a machine that drifts between pairs skews
 * the pairs apart, not the ratio within one; the median ratio is the figure.
 */
import type { MongoClient } from 'mongodb';
import { median } from '../measure.js';
import { progress } from '../progress.js';
import type { GroupResult } from '../report.js';
import { loadAverage1m } from '../results-log.js';
import { settings, wanted, type ScenarioId } from '../settings.js';
import { runConfirmScenarios } from './s6-confirms.js';
import { runRefundScenarios } from './s7-refunds.js';

type Arm = 'off' | 'on';

const GROUPS: ReadonlyArray<[ScenarioId, (mongo: MongoClient) => Promise<GroupResult>]> = [
  ['S6', runConfirmScenarios],
  ['S7', runRefundScenarios],
];

export async function runLedgerCost(mongo: MongoClient): Promise<GroupResult> {
  const pairs = settings.ledgerPairs;
  const ids = GROUPS.map(([id]) => id).filter((id) => wanted(id));
  if (pairs === 0 || ids.length === 0) return { measured: new Map() };
  const rps = new Map(ids.map((id) => [id, { off: [] as Array<number | null>, on: [] as Array<number | null> }]));
  const loads: number[] = [];
  try {
    for (let pair = 0; pair < pairs; pair++) {
      const arms: Arm[] = pair % 2 === 0 ? ['off', 'on'] : ['on', 'off'];
      for (const arm of arms) {
        // Passed to the service's processes by startService (bench/service.ts).
        settings.serviceEnv.LEDGER_POSTINGS = arm;
        loads.push(loadAverage1m());
        progress(`ledger cost: pair ${pair + 1} of ${pairs}, postings ${arm}`);
        for (const [id, group] of GROUPS) {
          if (!ids.includes(id)) continue;
          const measured = (await group(mongo)).measured.get(id);
          rps.get(id)![arm].push(measured?.rps ?? null);
        }
      }
    }
  } finally {
    delete settings.serviceEnv.LEDGER_POSTINGS;
  }
  const figures: Record<string, number | string | null> = { pairs, load_avg_1m: loads.join(' ') };
  for (const [id, { off, on }] of rps) {
    const ratios = off.flatMap((o, i) => (o && on[i] ? [Math.round((on[i]! / o) * 1000) / 1000] : []));
    figures[`${id}_off_rps`] = off.join(' ');
    figures[`${id}_on_rps`] = on.join(' ');
    figures[`${id}_ratios`] = ratios.join(' ');
    // median() rounds to 0.1: the ratio's is taken to the thousandth.
    figures[`${id}_median_ratio`] = ratios.length ? (median(ratios.map((r) => r * 1000)) ?? 0) / 1000 : null;
  }
  progress(`ledger cost: ${ids.map((id) => `${id} posting / not, median of ${pairs} pair(s): ${String(figures[`${id}_median_ratio`])}`).join('; ')}`);
  return { measured: new Map(), details: { 'ledger cost': figures } };
}
