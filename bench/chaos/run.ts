/**
 * `npm run chaos`: the fault-injection run (issue 15). Starts N apis and M workers
 * on a throw-away Redis (append-only) and FerretDB, or on the servers given; a
 * local receiver verifying webhook signatures, and one endpoint subscribed to
 * `payment_intent.created` (to `*` with `--payments`). Then drives keyed creates
 * (and payments, payments.ts), kills workers and apis on a schedule, restarts Redis
 * once and rolls it back once (and crashes the store once, `--store-restart`; or,
 * with `--redis-cluster`, runs on a loopback Redis Cluster and kills one master),
 * samples the queues (queues.ts), waits for stragglers, and checks the verdicts
 * (verdicts.ts, payments-verdicts.ts). Prints the report and writes it as JSON;
 * exits 1 when a verdict failed, 2 when the run itself could not run.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Queue } from 'bullmq';
import { MongoClient } from 'mongodb';
import { startRedisCluster, type RunningCluster } from '#scripts/lib/redis-cluster.mjs';
import { queueLayout, queueNames, type QueueLayout } from '../../common/queue-shards.js';
import { createRedis, type RedisTarget } from '../../common/redis.js';
import { parseClusterNodes } from '../../common/config.js';
import { progress } from '../progress.js';
import { ROOT } from '../settings.js';
import { Client } from './client.js';
import { injectFaults, planFaults, seededRandom, type InjectedFault } from './faults.js';
import { CpuAccount } from './cpu.js';
import { Fleet } from './fleet.js';
import { Load } from './load.js';
import { parseOptions, USAGE, type ChaosOptions } from './options.js';
import { Payments } from './payments.js';
import { PayoutStorm } from './payouts.js';
import { checkLedger } from './ledger-verdict.js';
import { checkAllEvents, checkPaymentRecovery, checkPayments, finalSeries, medianBySecondS } from './payments-verdicts.js';
import { QueueSampler } from './queues.js';
import { VerifyingReceiver } from './receiver.js';
import { logFigures, printReport, requestFigures, RUN_LOG_COLUMNS, runLogRow, writeReport, type ChaosReport } from './report.js';
import { appendRunRow, gitSha } from '../results-log.js';
import { ControlledFerretDB, ControlledRedis, countsSince, loadStack } from './servers.js';
import { checkConfirms, checkEvents, checkKeys, checkRecovery, checkRefunds, checkReplays, eventIdsOf, REFUND_EVENT_TYPES, refundEvents, successSeries } from './verdicts.js';

const TEMP_PREFIX = 'payments-chaos-stack-';
const PROJECT = 'chaos';
const PAYOUTS_PROJECT = 'chaos-payouts';
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

interface Cleanup {
  steps: Array<() => Promise<unknown>>;
}

async function freePorts(n: number): Promise<number[]> {
  const { createServer } = await import('node:net');
  const servers = await Promise.all(
    Array.from({ length: n }, () => new Promise<import('node:net').Server>((resolve) => {
      const server = createServer();
      server.listen(0, '127.0.0.1', () => resolve(server));
    })),
  );
  const ports = servers.map((s) => (s.address() as import('node:net').AddressInfo).port);
  await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  return ports;
}

async function post(url: string, token: string, body: unknown, headers: Record<string, string> = {}): Promise<Record<string, unknown>> {
  for (let attempt = 0; ; attempt++) {
    const res = await fetch(url, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', ...headers },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(15_000),
    }).catch(() => null);
    const text = res ? await res.text() : '';
    if (res?.status === 200) return JSON.parse(text) as Record<string, unknown>;
    if (attempt >= 20) throw new Error(`POST ${url}: ${res?.status ?? 'no answer'} ${text}`);
    await sleep(500);
  }
}

async function waitForWorkers(target: RedisTarget, layout: QueueLayout, prefix: string, count: number, timeoutMs = 120_000): Promise<void> {
  const connection = createRedis(target, 'failFast', 'chaos-tool');
  const queue = new Queue(queueNames('writes', layout)[0]!, { connection, prefix });
  try {
    const deadline = Date.now() + timeoutMs;
    while ((await queue.getWorkersCount()) < count) {
      if (Date.now() > deadline) throw new Error(`${count} workers did not start within ${timeoutMs / 1000} s`);
      await sleep(200);
    }
  } finally {
    await queue.close();
    connection.disconnect();
  }
}

/** Log lines of the run's processes that name a CROSSSLOT error (a multi-key command across slots on the cluster). */
function crossSlotLines(logDir: string): string[] {
  return fs
    .readdirSync(logDir)
    .filter((file) => file.endsWith('.log'))
    .flatMap((file) => fs.readFileSync(path.join(logDir, file), 'utf8').split('\n').filter((line) => /CROSSSLOT|should belong to the same slot/i.test(line)).map((line) => `${file}: ${line.slice(0, 200)}`));
}

async function run(options: ChaosOptions, cleanup: Cleanup): Promise<ChaosReport> {
  const stack = await loadStack();
  await stack.reapStaleTempStacks(TEMP_PREFIX);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), TEMP_PREFIX));
  const logDir = path.join(path.dirname(options.out), 'chaos-logs');
  fs.rmSync(logDir, { recursive: true, force: true });
  fs.mkdirSync(logDir, { recursive: true });
  cleanup.steps.push(async () => {
    // The servers' own logs go with the processes' logs; the data goes.
    for (const [server, file] of [['redis', 'redis-server.log'], ['ferretdb', 'ferretdb.log']]) {
      const from = path.join(dataDir, server as string, file as string);
      if (fs.existsSync(from)) fs.copyFileSync(from, path.join(logDir, file as string));
    }
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  let mongoUrl = options.mongoUrl;
  let store: ControlledFerretDB | null = null;
  if (!mongoUrl) {
    const [debugPort] = await freePorts(1);
    const ferret = await ControlledFerretDB.start(stack, path.join(dataDir, 'ferretdb'), debugPort as number);
    store = ferret;
    cleanup.steps.push(() => ferret.stop());
    mongoUrl = ferret.url;
  }
  let redis: ControlledRedis | null = null;
  let cluster: RunningCluster | null = null;
  let redisUrl = options.redisUrl;
  if (options.redisCluster) {
    const started = await startRedisCluster({ dir: path.join(dataDir, 'redis-cluster') });
    cluster = started;
    cleanup.steps.push(async () => {
      await started.stop();
      for (const [i, node] of started.nodes.entries()) if (fs.existsSync(node.logFile)) fs.copyFileSync(node.logFile, path.join(logDir, `redis-cluster-node-${i}.log`));
    });
    progress(`a Redis Cluster of 3 masters and 3 replicas at ${started.nodesEnv}`);
  } else if (!redisUrl) {
    redis = await ControlledRedis.start(stack, path.join(dataDir, 'redis'));
    const started = redis;
    cleanup.steps.push(() => started.stop());
    redisUrl = redis.url;
  } else {
    progress('an existing Redis was given: no Redis restart, no rollback');
  }

  // Busy neighbours (`--cpu-hog`): each spins on a core from before the load to the end.
  for (let i = 0; i < options.cpuHog; i++) {
    const hog = spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' });
    cleanup.steps.push(async () => {
      hog.kill('SIGKILL');
    });
  }
  if (options.cpuHog > 0) progress(`${options.cpuHog} busy neighbour(s) spinning for the whole run`);

  const receiver = await VerifyingReceiver.start();
  cleanup.steps.push(() => receiver.close());
  const runId = randomBytes(4).toString('hex');
  // `--payouts`: live payouts through MTN's fake, which the fleet's live account points at.
  const payouts = options.payouts > 0 ? new PayoutStorm({ rate: options.payouts, durationS: options.durationS, runId }) : null;
  const apiPorts = await freePorts(options.apis);
  // MTN's callbacks go to the first api (a live account needs PUBLIC_BASE_URL).
  const payoutEnv = payouts ? { ...(await payouts.start()), PUBLIC_BASE_URL: `http://127.0.0.1:${apiPorts[0]}` } : {};
  if (payouts) cleanup.steps.push(() => payouts.stop());
  const adminToken = randomBytes(24).toString('hex');
  const prefix = `chaos_${runId}`;
  const dbName = `chaos_${runId}`;
  const fleet = new Fleet({
    apis: options.apis,
    workers: options.workers,
    apiPorts,
    logDir,
    dist: options.dist,
    nodeArgs: options.nodeArgs,
    env: {
      ...(cluster ? { REDIS_CLUSTER_NODES: cluster.nodesEnv } : { REDIS_URL: redisUrl as string }),
      MONGODB_URL: mongoUrl,
      MONGODB_DB: dbName,
      QUEUE_PREFIX: prefix,
      ADMIN_TOKEN: adminToken,
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      ...payoutEnv,
      ...options.env,
    },
  });
  cleanup.steps.push(() => fleet.stopAll());
  // Whatever way this process ends, its apis and workers end with it.
  process.once('exit', () => fleet.killAllNow());
  progress(`starting ${options.apis} apis and ${options.workers} workers (logs in ${path.relative(ROOT, logDir)})`);
  fleet.startAll();
  await fleet.waitReady();
  const target: RedisTarget = cluster ? { cluster: parseClusterNodes(cluster.nodesEnv) } : (redisUrl as string);
  const layout = queueLayout({ queueShards: Number(options.env.QUEUE_SHARDS ?? 1), redisClusterNodes: cluster ? [] : null });
  await waitForWorkers(target, layout, prefix, options.workers);

  const apiUrl = fleet.apiUrls[0] as string;
  const key = (await post(`${apiUrl}/admin/v1/api_keys`, adminToken, { project: PROJECT, livemode: false })).secret as string;
  // With --payments, every event counts: those recorded from here on must all be delivered.
  const endpointMs = Date.now();
  if (options.endpoint) {
    const types = options.payments ? ['*'] : ['payment_intent.created', ...(options.refundFraction > 0 ? REFUND_EVENT_TYPES : [])];
    const endpoint = await post(`${apiUrl}/v1/webhook_endpoints`, key, { url: receiver.url, enabled_events: types }, { 'Idempotency-Key': `endpoint-${runId}` });
    receiver.secret = endpoint.secret as string;
  }

  // The payouts' live balance is funded before the faults begin.
  let payoutsGiveUpMs = Date.now() + 600_000;
  if (payouts) {
    // A project of their own: the creates' verdicts count every intent of theirs, and the funding payment is none of them.
    const liveKey = (await post(`${apiUrl}/admin/v1/api_keys`, adminToken, { project: PAYOUTS_PROJECT, livemode: true })).secret as string;
    await payouts.fund(new Client({ apiUrls: fleet.apiUrls, apiKey: liveKey, requestTimeoutMs: options.requestTimeoutMs, giveUpMs: () => payoutsGiveUpMs, random: Math.random }));
    progress('payouts: the live balance is funded');
  }

  const random = seededRandom(options.seed);
  const plan = planFaults({ ...options, redisFaults: redis !== null }, random);
  progress(
    `load: ${options.rate}/s for ${options.durationS} s; ${plan.length} faults planned (seed ${options.seed}); then up to ${options.settleS} s for stragglers`,
  );
  const commandsBefore = store ? await store.commandCounts().catch(() => null) : null;
  const account = new CpuAccount(() => [
    { pid: process.pid, kind: 'tool' },
    ...(store ? [{ pid: store.pid, kind: 'ferretdb' }] : []),
    ...(redis ? [{ pid: redis.pid, kind: 'redis' }] : []),
    ...(cluster ? cluster.nodes.flatMap((node) => (node.running && node.pid ? [{ pid: node.pid, kind: 'redis' }] : [])) : []),
    ...fleet.apis.flatMap((slot) => (slot.pid ? [{ pid: slot.pid, kind: 'api' }] : [])),
    ...fleet.workers.flatMap((slot) => (slot.pid ? [{ pid: slot.pid, kind: 'worker' }] : [])),
  ]);
  const startMs = Date.now();
  const giveUpMs = startMs + (options.durationS + options.settleS) * 1000;
  payoutsGiveUpMs = giveUpMs;
  const client = new Client({ apiUrls: fleet.apiUrls, apiKey: key, requestTimeoutMs: options.requestTimeoutMs, giveUpMs: () => giveUpMs, random: Math.random });
  const payments = options.payments
    ? new Payments(client, { share: options.confirmFraction, refundFraction: options.refundFraction, budgetMs: options.paymentBudgetS * 1000, random: Math.random })
    : null;
  const load = new Load(client, {
    rate: options.rate,
    durationS: options.durationS,
    replayFraction: options.replayFraction,
    confirmFraction: options.confirmFraction,
    refundFraction: options.refundFraction,
    giveUpMs: () => giveUpMs,
    random: Math.random,
    runId,
    ...(payments ? { afterCreate: (record: Load['keys'][number], intent: string) => payments.pay(record, intent) } : {}),
  });
  const sampler = new QueueSampler(target, prefix, startMs, layout);
  fleet.onLine = (line) => sampler.line(line);
  const faults: InjectedFault[] = [];
  let outboxEmptyAfterS: number | null = null;
  // The clients and the receiver share this process: if its own event loop lags, the
  // service is blamed for the tool's delays. Reported, so a run can be judged.
  const lag = monitorEventLoopDelay({ resolution: 20 });
  lag.enable();
  const runLag = monitorEventLoopDelay({ resolution: 20 });
  runLag.enable();
  let cpu = process.cpuUsage();
  const ticker = setInterval(() => {
    const answered = load.keys.filter((k) => k.answer).length;
    const t = Math.round((Date.now() - startMs) / 1000);
    const used = process.cpuUsage(cpu);
    cpu = process.cpuUsage();
    const sent = payouts ? ` payouts final ${payouts.records.filter((r) => r.finalMs).length}/${payouts.records.length};` : '';
    const paid = options.payments ? ` payments final ${load.keys.filter((k) => k.payment?.finalMs).length}/${load.keys.filter((k) => k.payment).length};` : '';
    progress(
      `t=${t}s keys ${load.keys.length} answered ${answered};${paid}${sent} faults ${faults.length}; events received ${receiver.verified.size}; ` +
        `tool cpu ${Math.round((used.user + used.system) / 50_000)}% lag p99 ${Math.round(lag.percentile(99) / 1e6)} ms max ${Math.round(lag.max / 1e6)} ms; load ${os.loadavg()[0]?.toFixed(1)}`,
    );
    lag.reset();
  }, 5000);
  try {
    await Promise.all([
      load.run(startMs),
      payouts?.run(startMs, options.paymentBudgetS * 1000),
      injectFaults(plan, startMs, { fleet, redis, store, cluster }, random, (fault) => {
        faults.push(fault);
        if (fault.kind.startsWith('redis') || fault.kind === 'store-restart' || fault.error) progress(`${fault.kind} at ${fault.atS.toFixed(1)} s took ${fault.tookMs} ms${fault.error ? `: ${fault.error}` : ''}`);
      }),
    ]);
    const expected = eventIdsOf(load.keys);
    if (options.endpoint) {
      while (expected.some((id) => !receiver.verified.has(id)) && Date.now() < giveUpMs) await sleep(250);
      // Delivered events leave the outbox in batches, within a second or so; those
      // whose release Redis lost (the rollback) or a killed worker never flushed stay
      // until the outbox sweeper finds their deliveries finished
      // (WEBHOOK_SWEEP_AGE_MS after the event, at its next WEBHOOK_SWEEP_INTERVAL_MS).
      // The run waits for that too, within --settle: an entry that never goes is a leak.
      const outbox = new MongoClient(mongoUrl);
      try {
        const entries = outbox.db(dbName).collection('event_outbox');
        const fromMs = Date.now();
        while ((await entries.countDocuments({}).catch(() => 1)) > 0 && Date.now() < giveUpMs) await sleep(500);
        if ((await entries.countDocuments({}).catch(() => 1)) === 0) outboxEmptyAfterS = Math.round((Date.now() - fromMs) / 100) / 10;
      } finally {
        await outbox.close();
      }
    }
    if (options.confirmFraction > 0) await waitForConfirmedIntents(mongoUrl, dbName, load.keys, giveUpMs);
    if (options.refundFraction > 0) await waitForRefunds(mongoUrl, dbName, load.keys, receiver, options.endpoint, giveUpMs);
  } finally {
    clearInterval(ticker);
  }
  const queues = await sampler.stop();
  progress(`load over after ${Math.round((Date.now() - startMs) / 1000)} s; stopping the processes, then checking`);
  // Before the checks: nothing writes any more, and the database can be dropped safely.
  await fleet.stopAll();
  const cpuFigures = account.finish();
  const crossSlot = crossSlotLines(logDir);
  runLag.disable();
  const toolLag = { p99Ms: Math.round(runLag.percentile(99) / 1e6), maxMs: Math.round(runLag.max / 1e6) };
  const commandsAfter = store && commandsBefore ? await store.commandCounts().catch(() => null) : null;
  const commands = commandsBefore && commandsAfter ? countsSince(commandsBefore, commandsAfter) : null;

  const mongo = new MongoClient(mongoUrl);
  await mongo.connect();
  let report: ChaosReport;
  try {
    const db = mongo.db(dbName);
    const keys = await checkKeys(db, PROJECT, load.keys);
    const outboxLeft = await db.collection('event_outbox').countDocuments({});
    const events = options.endpoint ? checkEvents(load.keys, receiver, { left: outboxLeft, emptyAfterS: outboxEmptyAfterS }) : null;
    const replays = checkReplays(load.keys);
    const confirms = options.confirmFraction > 0 && !options.payments ? await checkConfirms(db, load.keys) : null;
    const paid = options.payments ? await checkPayments(db, load.keys, options.paymentBudgetS * 1000, startMs) : null;
    const allEvents = options.payments && options.endpoint ? await checkAllEvents(db, receiver, endpointMs, PROJECT) : null;
    const refunds = options.refundFraction > 0 ? await checkRefunds(db, load.keys, receiver) : null;
    const ledger = options.payments ? await checkLedger(db, PROJECT) : null;
    // Without an endpoint, nothing is delivered: the delivery verdict does not apply.
    const refundVerdicts = (refunds?.verdicts ?? []).filter((v) => options.endpoint || !v.name.includes('delivered'));
    const recoveryOptions = { startMs, warmupS: options.warmupS, recoveryS: options.recoveryS, share: options.recoveryShare };
    const recovery = checkRecovery(load.keys, faults, recoveryOptions);
    const paymentRecovery = options.payments ? checkPaymentRecovery(load.keys, faults, recoveryOptions) : null;
    const payoutChecks = payouts ? await payouts.check(db, PAYOUTS_PROJECT) : null;
    const verdicts = [
      keys.verdict,
      ...(events ? [events.verdict] : []),
      replays.verdict,
      ...(confirms ? [confirms.verdict] : []),
      ...(paid?.verdicts ?? []),
      ...refundVerdicts,
      ...(ledger ? [ledger.verdict] : []),
      ...(allEvents ? [allEvents.verdict] : []),
      recovery.verdict,
      ...(paymentRecovery ? [paymentRecovery.verdict] : []),
      ...(payoutChecks?.verdicts ?? []),
      {
        name: 'no CROSSSLOT',
        pass: crossSlot.length === 0,
        detail: crossSlot.length === 0 ? 'no log line of any api or worker names a command across slots' : `${crossSlot.length} lines, the first: ${crossSlot[0]}`,
      },
    ];
    const { out: _out, runLog: _runLog, ...shape } = options;
    report = {
      when: new Date(startMs).toISOString(),
      shape,
      pass: verdicts.every((v) => v.pass),
      verdicts,
      keys: keys.figures,
      events: events?.figures ?? null,
      replays: replays.figures,
      confirms: confirms?.figures ?? null,
      refunds: refunds?.figures ?? null,
      ledger: ledger?.figures ?? null,
      throughput: {
        baselinePerS: Math.round(recovery.baselinePerS * 10) / 10,
        recoveries: recovery.recoveries,
        perSecond: successSeries(load.keys, startMs, 1000, options.durationS + 10),
      },
      payments:
        paid && paymentRecovery
          ? {
              ...paid.figures,
              baselinePerS: Math.round(paymentRecovery.baselinePerS * 10) / 10,
              recoveries: paymentRecovery.recoveries,
              finalPerSecond: finalSeries(load.keys, startMs, 1000, options.durationS + 10),
              medianBySecondS: medianBySecondS(load.keys, startMs, options.durationS),
            }
          : null,
      allEvents: allEvents?.figures ?? null,
      payouts: payoutChecks?.figures ?? null,
      queues,
      faults: faults.sort((a, b) => a.atS - b.atS).map((f) => ({ ...f, atS: Math.round(f.atS * 10) / 10 })),
      requests: requestFigures(load.keys, startMs),
      mongoCommands: commands,
      cpu: cpuFigures,
      toolLag,
      logs: logFigures(fleet.tally),
      logDir: path.relative(ROOT, logDir),
    };
    if (mongoUrl !== options.mongoUrl) await db.dropDatabase().catch(() => undefined);
  } finally {
    await mongo.close();
  }
  return report;
}

async function main(): Promise<number> {
  let options: ChaosOptions | 'help';
  try {
    options = parseOptions(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n\n${USAGE}\n`);
    return 2;
  }
  if (options === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const cleanup: Cleanup = { steps: [] };
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(signal, () => {
      progress(`${signal}: stopping`);
      setTimeout(() => process.exit(130), 20_000).unref();
      void runCleanup(cleanup).finally(() => process.exit(130));
    });
  }
  try {
    const report = await run(options, cleanup);
    writeReport(report, options.out);
    process.stdout.write(`${printReport(report)}\nJSON: ${path.relative(process.cwd(), options.out)}\n`);
    if (options.runLog) {
      try {
        appendRunRow(options.runLog, RUN_LOG_COLUMNS, runLogRow(report, gitSha(ROOT), ROOT));
        process.stdout.write(`Run log: a row appended to ${path.relative(process.cwd(), options.runLog)}\n`);
      } catch (err) {
        progress(`run log: ${(err as Error).message}`);
      }
    }
    return report.pass ? 0 : 1;
  } catch (err) {
    progress(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    return 2;
  } finally {
    await runCleanup(cleanup);
  }
}

/** Last registered, first run: the processes stop before the servers, the servers before their data goes. */
async function runCleanup(cleanup: Cleanup): Promise<void> {
  for (const step of cleanup.steps.splice(0).reverse()) await step().catch(() => undefined);
}

process.exit(await main());

/**
 * Waits until every confirmed intent has left the attempt (`requires_action`,
 * `processing`): its operator's answer is a delayed job, and one that a Redis rollback
 * lost comes back only with the lifecycle's sweeper (INTENTS_SWEEP_INTERVAL_MS).
 */
async function waitForConfirmedIntents(mongoUrl: string, dbName: string, keys: Load['keys'], giveUpMs: number): Promise<void> {
  const ids = keys.flatMap((k) => (k.confirm?.answer && k.answer ? [k.answer.id] : []));
  if (ids.length === 0) return;
  const client = new MongoClient(mongoUrl);
  const startedMs = Date.now();
  try {
    const intents = client.db(dbName).collection<{ _id: string; status: string }>('payment_intents');
    let pending = ids.length;
    while (Date.now() < giveUpMs) {
      pending = await intents.countDocuments({ _id: { $in: ids }, status: { $in: ['requires_action', 'processing'] } }).catch(() => pending);
      if (pending === 0) break;
      await sleep(2000);
    }
    progress(`confirmed intents: ${pending === 0 ? 'all' : `${ids.length - pending}/${ids.length}`} past their attempt after ${Math.round((Date.now() - startedMs) / 1000)} s more`);
  } finally {
    await client.close();
  }
}


/**
 * Waits until no refund of the run is pending, and (with the endpoint) every refund
 * event has been received: a refund's operator step is a delayed job, and one that a
 * Redis rollback lost comes back only with the refunds' sweeper (INTENTS_SWEEP_INTERVAL_MS).
 */
async function waitForRefunds(mongoUrl: string, dbName: string, keys: Load['keys'], receiver: VerifyingReceiver, endpoint: boolean, giveUpMs: number): Promise<void> {
  const intents = keys.flatMap((k) => (k.refunds?.length ? [k.refunds[0]!.intent] : []));
  if (intents.length === 0) return;
  const client = new MongoClient(mongoUrl);
  const startedMs = Date.now();
  let pending = -1;
  let undelivered = -1;
  try {
    const db = client.db(dbName);
    while (Date.now() < giveUpMs) {
      pending = await db.collection('refunds').countDocuments({ payment_intent: { $in: intents }, status: 'pending' }).catch(() => pending);
      undelivered = endpoint ? (await refundEvents(db, keys).catch(() => [])).filter((e) => !receiver.verified.has(e._id)).length : 0;
      if (pending === 0 && undelivered === 0) break;
      await sleep(2000);
    }
    progress(`refunds: ${pending} pending, ${undelivered} events undelivered after ${Math.round((Date.now() - startedMs) / 1000)} s more`);
  } finally {
    await client.close();
  }
}
