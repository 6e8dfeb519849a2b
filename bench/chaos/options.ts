/**
 * The chaos run's flags (`npm run chaos -- --help`): its shape (duration, rate,
 * processes, faults) and where its servers are. Parsed and checked before anything
 * starts.
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ROOT } from '../settings.js';

export interface ChaosOptions {
  durationS: number;
  /** Keyed creates started per second. */
  rate: number;
  apis: number;
  workers: number;
  /** Seconds of load before the first fault: the pre-fault throughput is measured there. */
  warmupS: number;
  /** Redis is restarted from a snapshot this many seconds old; 0: no rollback. */
  rollbackS: number;
  redisRestart: boolean;
  /** [min, max] seconds between worker kills; null: none. */
  workerKillS: [number, number] | null;
  apiKillS: [number, number] | null;
  /** Fraction of keys sent once more after their 200, to check the replay. */
  replayFraction: number;
  /** Fraction of created intents then confirmed, with a key of their own, through the simulator. */
  confirmFraction: number;
  /** Fraction of the confirmed intents refunded (wholly or in parts) once they succeeded; 0: none. */
  refundFraction: number;
  /**
   * `--payments`: the confirms are made by payment clients (payments.ts), which poll
   * each payment until it is final within `paymentBudgetS`; `confirmFraction` is their share.
   */
  payments: boolean;
  paymentBudgetS: number;
  /** `--payouts [R]`: R live payouts a second through MTN's fake (payouts.ts); 0: none. */
  payouts: number;
  /** SIGKILL the store (the run's FerretDB) half way through the load and start it again this many seconds later; null: no. */
  storeRestartS: number | null;
  /** How long keys still unanswered and undelivered events are waited for after the load. */
  settleS: number;
  /** Busy neighbours: processes that spin on a core for the whole run (`--cpu-hog N`), as a noisy machine. */
  cpuHog: number;
  /** Client timeout of one request. */
  requestTimeoutMs: number;
  /** Recovery goal: throughput back to `recoveryShare` of the pre-fault rate within `recoveryS`. */
  recoveryS: number;
  recoveryShare: number;
  endpoint: boolean;
  /**
   * `--redis-cluster`: the run starts a loopback Redis Cluster (3 masters, 3
   * replicas) instead of one Redis, the service uses it with QUEUE_SHARDS=3 (unless
   * `--env` sets it), and half way through the load a master is killed (SIGKILL) so
   * that its replica takes over: no Redis restart, no rollback.
   */
  redisCluster: boolean;
  /** Existing servers; Redis faults need a Redis the run starts itself. */
  redisUrl: string | null;
  mongoUrl: string | null;
  /** Extra environment for every api and worker (`--env NAME=VALUE`). */
  env: Record<string, string>;
  /** Node options for every api and worker (`--node-args`), e.g. `--cpu-prof`, which Node refuses in NODE_OPTIONS. */
  nodeArgs: string[];
  out: string;
  /** The committed run log the run appends its row to (bench/results/chaos-runs.csv); null: none (`--no-log`). */
  runLog: string | null;
  seed: number;
  /** The compiled service to run (its api/main.js and worker/main.js): another build, to compare. */
  dist: string;
}

export const USAGE = `npm run chaos -- [flags]

Runs N apis and M workers on throw-away Redis (append-only) and FerretDB (or the
servers given), a local webhook receiver and one endpoint subscribed to
payment_intent.created; drives keyed creates while killing processes and failing
Redis over; then checks what came out and prints a report (JSON in --out).

  --duration S        seconds of load (60)
  --rate N            keyed creates started per second (50)
  --apis N            api processes (2)
  --workers N         worker processes (3)
  --warmup S          seconds before the first fault (10)
  --rollback S        restart Redis from a snapshot S seconds old; 0 for none (2)
  --no-redis-restart  skip the plain Redis restart
  --worker-kill A-B   SIGKILL a worker every A to B seconds; 0 for none (2-4)
  --api-kill A-B      SIGKILL an api every A to B seconds; 0 for none (8-12)
  --replays F         fraction of keys sent again after their 200 (1)
  --confirms F        fraction of created intents confirmed (keyed, test number
                      +2250500000000, each confirm retried like a create) (0.2)
  --refunds [F]       fraction of the confirmed intents refunded once they succeeded,
                      wholly or in 2-3 keyed parts (0; 0.5 when given without F);
                      the endpoint then also takes the refund events
  --payments [F]      fraction of created intents paid by payment clients (0.5 when
                      given without F) instead of --confirms: keyed confirm with
                      +2250700000000, then polled until final, within 120 s; sets
                      --rate 20, the endpoint on *, and the simulator's delays to
                      200 ms (SIMULATOR_APPROVAL_DELAY_MS, SIMULATOR_PROCESSING_DELAY_MS)
                      unless --rate or --env says otherwise
  --payouts [R]       also R live payouts a second (2 when given without R), keyed,
                      through a local MTN MoMo fake (its Disbursement transfer), each
                      followed until paid or failed; checks one payout per key, one
                      end each, one transfer per paid payout, and the ledger's balance
  --store-restart S   SIGKILL the run's FerretDB half way through the load and
                      start it again on the same data S seconds later (not with
                      --mongodb-url)
  --settle S          how long to wait for stragglers after the load (120)
  --cpu-hog N         run beside N busy neighbours: processes spinning on a core for
                      the whole run (0); the report gives the goodput next to the load
  --request-timeout MS  client timeout per request (15000)
  --no-endpoint       no webhook endpoint (creates only)
  --redis-cluster     run on a loopback Redis Cluster of 3 masters and 3 replicas
                      (QUEUE_SHARDS=3 unless --env sets it) and SIGKILL one master
                      half way through the load, its replica promoted, instead of
                      the Redis restart and rollback (DESIGN section 19)
  --redis-url URL     use this Redis (no Redis faults then)
  --mongodb-url URL   use this MongoDB instead of a throw-away FerretDB
  --env NAME=VALUE    extra environment for every api and worker (repeatable)
  --node-args="ARGS"  Node options for every api and worker, split on spaces (the =
                      form: they start with a dash), e.g. --node-args="--cpu-prof
                      --cpu-prof-dir=/tmp/prof" (a profile is written by each
                      process stopped at the end, not by the killed ones)
  --out FILE          JSON report (bench/results/chaos.json)
  --log FILE          append the run's row to this CSV (bench/results/chaos-runs.csv)
  --no-log            append no row (a trial run)
  --seed N            seed of the fault schedule (random)
  --dist DIR          run the api and worker compiled in DIR (default dist/), e.g. an older build
  --help`;

/** The service's environment under `--redis-cluster`, unless `--env` sets it: the queues spread over the three masters. */
export const CLUSTER_ENV: Record<string, string> = { QUEUE_SHARDS: '3' };

/** The service's environment under `--payments`, unless `--env` sets it: a quick simulator, so payments end within a second. */
export const PAYMENT_ENV: Record<string, string> = { SIMULATOR_APPROVAL_DELAY_MS: '200', SIMULATOR_PROCESSING_DELAY_MS: '200' };

function number(name: string, raw: string | undefined, fallback: number, min = 0): number {
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < min) throw new Error(`--${name} must be a number ≥ ${min}, got ${JSON.stringify(raw)}`);
  return value;
}

function range(name: string, raw: string | undefined, fallback: [number, number]): [number, number] | null {
  if (raw === undefined) return fallback;
  if (raw === '0') return null;
  const match = /^(\d+(?:\.\d+)?)(?:-(\d+(?:\.\d+)?))?$/.exec(raw);
  if (!match) throw new Error(`--${name} must be A-B (seconds) or 0, got ${JSON.stringify(raw)}`);
  const low = Number(match[1]);
  const high = match[2] === undefined ? low : Number(match[2]);
  if (low <= 0 || high < low) throw new Error(`--${name}: need 0 < A ≤ B, got ${raw}`);
  return [low, high];
}

/** Parses `argv` (without node and the script); throws with a clear message on a bad flag. */
export function parseOptions(argv: string[]): ChaosOptions | 'help' {
  // `--refunds` alone means half of the confirmed intents, `--payments` alone half of the created ones.
  const optionalValue = new Map([['--refunds', '0.5'], ['--payments', '0.5'], ['--payouts', '2']]);
  const args = argv.flatMap((arg, i) => (optionalValue.has(arg) && (argv[i + 1] === undefined || argv[i + 1]!.startsWith('--')) ? [arg, optionalValue.get(arg)!] : [arg]));
  const { values } = parseArgs({
    args,
    strict: true,
    options: {
      duration: { type: 'string' },
      rate: { type: 'string' },
      apis: { type: 'string' },
      workers: { type: 'string' },
      warmup: { type: 'string' },
      rollback: { type: 'string' },
      'no-redis-restart': { type: 'boolean' },
      'worker-kill': { type: 'string' },
      'api-kill': { type: 'string' },
      replays: { type: 'string' },
      confirms: { type: 'string' },
      refunds: { type: 'string' },
      payments: { type: 'string' },
      payouts: { type: 'string' },
      'store-restart': { type: 'string' },
      'cpu-hog': { type: 'string' },
      settle: { type: 'string' },
      'request-timeout': { type: 'string' },
      'no-endpoint': { type: 'boolean' },
      'redis-url': { type: 'string' },
      'redis-cluster': { type: 'boolean' },
      'mongodb-url': { type: 'string' },
      env: { type: 'string', multiple: true },
      'node-args': { type: 'string' },
      out: { type: 'string' },
      seed: { type: 'string' },
      dist: { type: 'string' },
      log: { type: 'string' },
      'no-log': { type: 'boolean' },
      help: { type: 'boolean' },
    },
  });
  if (values.help) return 'help';
  const payments = values.payments !== undefined;
  if (payments && values.confirms !== undefined) throw new Error('--payments replaces --confirms: give one of them');
  if (values['redis-cluster'] && values['redis-url'] !== undefined) throw new Error('--redis-cluster starts its own cluster: not with --redis-url');
  if (values['store-restart'] !== undefined && values['mongodb-url'] !== undefined) {
    throw new Error('--store-restart restarts the FerretDB the run starts itself: not possible with --mongodb-url');
  }
  const env: Record<string, string> = { ...(payments ? PAYMENT_ENV : {}), ...(values['redis-cluster'] ? CLUSTER_ENV : {}) };
  for (const pair of values.env ?? []) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new Error(`--env must be NAME=VALUE, got ${JSON.stringify(pair)}`);
    env[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  const options: ChaosOptions = {
    durationS: number('duration', values.duration, 60, 1),
    rate: number('rate', values.rate, payments ? 20 : 50, 0.1),
    apis: number('apis', values.apis, 2, 1),
    workers: number('workers', values.workers, 3, 1),
    warmupS: number('warmup', values.warmup, 10, 1),
    rollbackS: number('rollback', values.rollback, 2),
    redisRestart: !values['no-redis-restart'],
    workerKillS: range('worker-kill', values['worker-kill'], [2, 4]),
    apiKillS: range('api-kill', values['api-kill'], [8, 12]),
    replayFraction: number('replays', values.replays, 1),
    confirmFraction: payments ? number('payments', values.payments, 0.5) : number('confirms', values.confirms, 0.2),
    refundFraction: number('refunds', values.refunds, 0),
    payments,
    paymentBudgetS: 120,
    payouts: number('payouts', values.payouts, 0),
    storeRestartS: values['store-restart'] === undefined ? null : number('store-restart', values['store-restart'], 0, 0.1),
    cpuHog: Math.floor(number('cpu-hog', values['cpu-hog'], 0, 0)),
    settleS: number('settle', values.settle, 120),
    requestTimeoutMs: number('request-timeout', values['request-timeout'], 15_000, 100),
    recoveryS: 10,
    recoveryShare: 0.8,
    endpoint: !values['no-endpoint'],
    redisCluster: values['redis-cluster'] === true,
    redisUrl: values['redis-url'] ?? null,
    mongoUrl: values['mongodb-url'] ?? null,
    env,
    nodeArgs: (values['node-args'] ?? '').split(' ').filter(Boolean),
    out: path.resolve(values.out ?? path.join(ROOT, 'bench', 'results', 'chaos.json')),
    runLog: values['no-log'] ? null : path.resolve(values.log ?? path.join(ROOT, 'bench', 'results', 'chaos-runs.csv')),
    seed: values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : number('seed', values.seed, 0),
    dist: path.resolve(values.dist ?? path.join(ROOT, 'dist')),
  };
  if (options.replayFraction > 1) throw new Error('--replays is a fraction, 0 to 1');
  if (options.confirmFraction > 1) throw new Error(`--${payments ? 'payments' : 'confirms'} is a fraction, 0 to 1`);
  if (options.refundFraction > 1) throw new Error('--refunds is a fraction, 0 to 1');
  if (options.refundFraction > 0 && options.confirmFraction === 0) throw new Error(`--refunds needs confirmed payments: --${payments ? 'payments' : 'confirms'} above 0`);
  if (!Number.isInteger(options.apis) || !Number.isInteger(options.workers)) throw new Error('--apis and --workers are whole numbers');
  if (options.warmupS >= options.durationS) throw new Error('--warmup must be shorter than --duration');
  return options;
}
