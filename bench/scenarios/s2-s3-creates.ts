/**
 * S2 and S3: creates through the service (api, queue, worker). S2 runs twice in the
 * same processes to see whether their memory settles; S2-keyed repeats S2-c64 with a
 * fresh `Idempotency-Key` per request (the price of idempotency); S3 runs S2-c64
 * with 1, 2 and 4 worker processes (how throughput scales).
 */
import type { MongoClient } from 'mongodb';
import { median, sampleRss, timed, type Load, type Measurement } from '../measure.js';
import { progress } from '../progress.js';
import type { ExtraRow, GroupResult, RssReadings } from '../report.js';
import { reportLogs, startService, type Child, type Service } from '../service.js';
import { describeCpu, profileCpu, serverPids } from '../cpu-profile.js';
import { CREATE_BODY, settings, wanted, type ScenarioId } from '../settings.js';

function createLoad(service: Service, connections: number, keyed = false): Load {
  return {
    url: `${service.baseUrl}/v1/payment_intents`,
    method: 'POST',
    connections,
    headers: { Authorization: `Bearer ${service.key}`, 'Content-Type': 'application/json' },
    body: CREATE_BODY,
    uniqueKeys: keyed,
  };
}

/** How long RSS is read after each S2 run, once its load has stopped. */
const RSS_AFTER_MS = 2000;

async function oneWorker(mongo: MongoClient): Promise<GroupResult> {
  const measured = new Map<ScenarioId, Measurement>();
  if (!wanted('S2-c16', 'S2-c64', 'S2-keyed')) return { measured };
  const extraRows: ExtraRow[] = [];
  const rss: RssReadings = { api: null, worker: null, api_second_run: null, worker_second_run: null };
  progress('S2: starting 1 api and 1 worker process');
  const service = await startService(mongo, 's2', 1);
  try {
    const worker = service.workers[0] as Child;
    // The same work twice; the RSS goal compares the readings after each run: a
    // leak grows from one to the next, while bounded memory (the replay memory that
    // S2-keyed fills, the caches) is full after the first already.
    for (const run of [1, 2]) {
      const sampler = sampleRss({ api: service.api.pid, worker: worker.pid });
      try {
        for (const c of [16, 64] as const) {
          const id = `S2-c${c}` as const;
          if (!wanted(id)) continue;
          const m = await timed(run === 1 ? id : `${id} (run 2)`, createLoad(service, c));
          if (run === 1) measured.set(id, m);
          else extraRows.push({ label: `${id} (run 2)`, m });
        }
        if (wanted('S2-keyed')) {
          const m = await timed(run === 1 ? 'S2-keyed' : 'S2-keyed (run 2)', createLoad(service, 64, true));
          if (run === 1) measured.set('S2-keyed', m);
          else extraRows.push({ label: 'S2-keyed (run 2)', m });
        }
      } finally {
        sampler.stop();
      }
      const after = sampleRss({ api: service.api.pid, worker: worker.pid });
      await new Promise((resolve) => setTimeout(resolve, RSS_AFTER_MS));
      after.stop();
      service.api.assertRunning();
      worker.assertRunning();
      const api = median(after.readings.api);
      const wrk = median(after.readings.worker);
      if (run === 1) Object.assign(rss, { api, worker: wrk });
      else Object.assign(rss, { api_second_run: api, worker_second_run: wrk });
      progress(`S2 run ${run}: RSS during it (median) api ${median(sampler.readings.api)} MiB, worker ${median(sampler.readings.worker)} MiB; after it api ${api} MiB, worker ${wrk} MiB`);
    }
  } finally {
    reportLogs([service.api, ...service.workers]);
    await service.stop();
  }
  return { measured, extraRows, rss };
}

async function scaling(mongo: MongoClient): Promise<GroupResult> {
  const measured = new Map<ScenarioId, Measurement>();
  const details: NonNullable<GroupResult['details']> = {};
  for (const workers of [1, 2, 4] as const) {
    const id = `S3-w${workers}` as const;
    if (!wanted(id)) continue;
    progress(`S3: starting 1 api and ${workers} worker process(es)`);
    const service = await startService(mongo, `s3w${workers}`, workers);
    try {
      // Where the CPU goes names the bottleneck: the store, Redis, the api, the workers, or the load generator.
      const cpu = profileCpu([
        ...serverPids(settings.mongoUrl, settings.redisUrl),
        { pid: service.api.pid, kind: 'api' },
        ...service.workers.map((w) => ({ pid: w.pid, kind: 'worker' })),
      ]);
      measured.set(id, await timed(id, createLoad(service, 64)));
      const figures = cpu.stop();
      progress(`${id}: CPU seconds (warm-up and run): ${describeCpu(figures)}`);
      details[id] = { ...Object.fromEntries(Object.entries(figures.byKind).map(([kind, s]) => [`cpu_s_${kind.split(' ')[0]}`, s])), cpu_s_capacity: figures.capacity };
      for (const child of [service.api, ...service.workers]) child.assertRunning();
    } finally {
      reportLogs([service.api, ...service.workers]);
      await service.stop();
    }
  }
  return { measured, details };
}

/**
 * Runs S2-c16 and S2-c64 (twice, with the RSS of the api and the worker) and
 * S2-keyed, then S3 with 1, 2 and 4 workers, each on its own service; those not
 * asked for are left out.
 */
export async function runCreateScenarios(mongo: MongoClient): Promise<GroupResult> {
  const s2 = await oneWorker(mongo);
  const s3 = await scaling(mongo);
  return { ...s2, measured: new Map([...s2.measured, ...s3.measured]), details: { ...s2.details, ...s3.details } };
}
