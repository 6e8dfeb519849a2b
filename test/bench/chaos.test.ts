// The chaos run's pure parts (bench/chaos): its flags, its fault plan, what a payment's
// client takes for final, and the payment and queue figures its verdicts and report
// are made of.

import test from 'ava';

import { planFaults, type InjectedFault } from '../../bench/chaos/faults.js';
import type { KeyRecord, PaymentRecord } from '../../bench/chaos/load.js';
import { parseOptions, type ChaosOptions } from '../../bench/chaos/options.js';
import { finalStatus } from '../../bench/chaos/payments.js';
import { checkPaymentRecovery, clientFigures, foldOutcomes, longestGapS, medianBySecondS, p99Verdict, slowestPayments, succeededEventCounts } from '../../bench/chaos/payments-verdicts.js';
import { IdGenerator } from '../../common/ids.js';
import { jobTimes, queuesAroundFaults, stalledQueue, type QueueCounts } from '../../bench/chaos/queues.js';

const parse = (argv: string[]) => parseOptions(argv) as ChaosOptions;

test('the plain run keeps its shape: 50/s, a fifth confirmed, no payment clients, no store restart', (t) => {
  const options = parse([]);
  t.is(options.rate, 50);
  t.is(options.confirmFraction, 0.2);
  t.false(options.payments);
  t.is(options.storeRestartS, null);
  t.deepEqual(options.env, {});
});

test('--payments alone: half the creates paid, 20/s, the simulator at 200 ms', (t) => {
  const options = parse(['--payments', '--refunds', '--store-restart', '3']);
  t.true(options.payments);
  t.is(options.confirmFraction, 0.5);
  t.is(options.refundFraction, 0.5);
  t.is(options.rate, 20);
  t.is(options.storeRestartS, 3);
  t.is(options.paymentBudgetS, 120);
  t.deepEqual(options.env, { SIMULATOR_APPROVAL_DELAY_MS: '200', SIMULATOR_PROCESSING_DELAY_MS: '200' });
});

test('--payments takes a share; --rate and --env win over its defaults', (t) => {
  const options = parse(['--payments', '0.3', '--rate', '35', '--env', 'SIMULATOR_APPROVAL_DELAY_MS=1000']);
  t.is(options.confirmFraction, 0.3);
  t.is(options.rate, 35);
  t.deepEqual(options.env, { SIMULATOR_APPROVAL_DELAY_MS: '1000', SIMULATOR_PROCESSING_DELAY_MS: '200' });
});

test('--node-args: Node options for every api and worker, split on spaces; none by default', (t) => {
  t.deepEqual(parse([]).nodeArgs, []);
  t.deepEqual(parse(['--node-args=--cpu-prof  --cpu-prof-dir=/tmp/prof ']).nodeArgs, ['--cpu-prof', '--cpu-prof-dir=/tmp/prof']);
});

test('conflicting or impossible flags are refused with a clear message', (t) => {
  t.throws(() => parseOptions(['--payments', '--confirms', '0.1']), { message: /--payments replaces --confirms/ });
  t.throws(() => parseOptions(['--store-restart', '3', '--mongodb-url', 'mongodb://db:27017']), { message: /not possible with --mongodb-url/ });
  t.throws(() => parseOptions(['--payments', '1.5']), { message: /--payments is a fraction/ });
  t.throws(() => parseOptions(['--payments', '0', '--refunds']), { message: /--refunds needs confirmed payments: --payments above 0/ });
});

const schedule = { warmupS: 10, recoveryS: 10, workerKillS: null, apiKillS: null, redisRestart: true, rollbackS: 2, redisFaults: true };

test('the store restart falls half way through the load, and scales with it', (t) => {
  const random = () => 0.5;
  t.deepEqual(
    planFaults({ ...schedule, durationS: 60, storeRestartS: 3 }, random).find((f) => f.kind === 'store-restart'),
    { atS: 30, kind: 'store-restart', downS: 3 },
  );
  t.is(planFaults({ ...schedule, durationS: 40, storeRestartS: 3 }, random).find((f) => f.kind === 'store-restart')?.atS, 20);
  t.false(planFaults({ ...schedule, durationS: 60, storeRestartS: null }, random).some((f) => f.kind === 'store-restart'));
});

test('--redis-cluster: QUEUE_SHARDS=3 unless --env says otherwise, one master killed half way, no Redis restart or rollback', (t) => {
  const options = parse(['--redis-cluster']);
  t.true(options.redisCluster);
  t.is(options.env.QUEUE_SHARDS, '3');
  t.is(parse(['--redis-cluster', '--env', 'QUEUE_SHARDS=1']).env.QUEUE_SHARDS, '1');
  t.false(parse([]).redisCluster);
  t.throws(() => parseOptions(['--redis-cluster', '--redis-url', 'redis://127.0.0.1:6379']), { message: /not with --redis-url/ });
  const plan = planFaults({ ...options, redisFaults: false, workerKillS: null, apiKillS: null }, () => 0.5);
  t.deepEqual(plan, [{ atS: 30, kind: 'redis-master-kill' }]);
});

test("a payment's client takes succeeded, canceled, expired and a decline for final", (t) => {
  t.is(finalStatus({ status: 'succeeded' }), 'succeeded');
  t.is(finalStatus({ status: 'expired' }), 'expired');
  t.is(finalStatus({ status: 'new', last_payment_error: { code: 'payment_declined' } }), 'declined');
  t.is(finalStatus({ status: 'new', last_payment_error: null }), null);
  t.is(finalStatus({ status: 'processing' }), null);
  t.is(finalStatus({ status: 'requires_action' }), null);
});

const START = 1_000_000;

function paid(i: number, payment: Partial<PaymentRecord>, confirmed = true): KeyRecord {
  return {
    key: `k${i}`,
    body: '{}',
    startedMs: START,
    attempts: [],
    answer: { atMs: START, sentMs: START, id: `pi_${i}`, body: '{}', replayed: false },
    terminal: null,
    replay: null,
    confirm: { key: `k${i}-confirm`, attempts: [], answer: confirmed ? { atMs: START, sentMs: START, id: `pi_${i}`, body: '{}', replayed: false } : null, terminal: confirmed ? null : '500 internal' },
    refunds: null,
    payment: { startedMs: START, finalMs: null, status: null, polls: 2, pollFailures: 0, ...payment },
  };
}

test('the clients’ figures: final within the budget, the rest by last status, confirm → final percentiles', (t) => {
  const keys = [
    ...Array.from({ length: 98 }, (_, i) => paid(i, { finalMs: START + 1000 + i * 10, status: 'succeeded' })),
    paid(98, { finalMs: START + 130_000, status: 'succeeded' }),
    paid(99, { status: 'processing' }),
    paid(100, {}, false),
  ];
  const figures = clientFigures(keys, 120_000);
  t.is(figures.payments, 101);
  t.is(figures.confirmed200, 100);
  t.deepEqual(figures.confirmTerminal, { '500 internal': 1 });
  t.deepEqual(figures.final, { succeeded: 98 });
  t.deepEqual(figures.notFinal, { succeeded: 1, processing: 1, none: 1 });
  t.deepEqual(figures.confirmToFinalMs, { p50: 1490, p99: 1970, max: 1970 });
  // Every confirm here was answered at START, as the payment began: the whole time is after the answer.
  t.deepEqual(figures.confirmAnswerMs, { p50: 0, p99: 0, max: 0 });
  t.deepEqual(figures.answerToFinalMs, { p50: 1490, p99: 1970, max: 1970 });
  const late = paid(0, { finalMs: START + 2000, status: 'succeeded' });
  late.confirm!.answer!.atMs = START + 500;
  const split = clientFigures([late], 120_000);
  t.deepEqual([split.confirmAnswerMs?.max, split.answerToFinalMs?.max], [500, 1500], 'a confirm answered after 500 ms, final 1 500 ms later');
  t.is(figures.polls, 202);
});

test('the slowest payments: never final first, then the slowest, each with its attempts and the transitions its history records', (t) => {
  const eventAt = (ms: number) => new IdGenerator(() => ms).next('event');
  const slow = paid(1, { finalMs: START + 9000, status: 'succeeded' });
  slow.confirm!.attempts = ['503 service_unavailable', '503 service_unavailable', 'connection refused', '200'].map((outcome, i) => ({ sentMs: START + i * 1000, durationMs: 5, outcome, replayed: false }));
  slow.confirm!.answer!.atMs = START + 3000;
  const keys = [paid(0, { finalMs: START + 1000, status: 'succeeded' }), slow, paid(2, { status: 'processing' }), paid(3, { finalMs: START + 2000, status: 'succeeded' })];
  const docs = [
    {
      _id: 'pi_1',
      history: [
        { m: 'a', st: 200, evt: { id: eventAt(START + 2900), type: 'payment_intent.requires_action' }, fu: [], at: 1 },
        { m: 'b', st: 200, evt: null, fu: [], at: 1 },
        { m: 'c', st: 200, evt: { id: eventAt(START + 8100), type: 'payment_intent.processing' }, fu: [], at: 1 },
        { m: 'd', st: 200, evt: { id: eventAt(START + 8750), type: 'payment_intent.succeeded' }, fu: [], at: 1 },
      ],
    },
  ];
  const slowest = slowestPayments(keys, docs, START - 30_000, 2);
  t.deepEqual(slowest.map((p) => p.id), ['pi_2', 'pi_1'], 'the one never final, then the slowest final');
  t.deepEqual(slowest[0], { id: 'pi_2', tookMs: null, confirmS: 30, attempts: '', answeredS: 30, steps: [], finalS: null });
  t.deepEqual(slowest[1], {
    id: 'pi_1',
    tookMs: 9000,
    confirmS: 30,
    attempts: '503 service_unavailable ×2, connection refused, 200',
    answeredS: 33,
    steps: [
      { type: 'requires_action', atS: 32.9 },
      { type: 'processing', atS: 38.1 },
      { type: 'succeeded', atS: 38.8 },
    ],
    finalS: 39,
  });
  t.is(foldOutcomes(['200']), '200');
});

test('confirm → final p99 within the goal: counted over every confirmed payment, one never final counting as too slow', (t) => {
  // The report's p99 is the value at index floor(0.99 n) of the sorted times: of 200, the 199th.
  const fast = (n: number, from = 0) => Array.from({ length: n }, (_, i) => paid(from + i, { finalMs: START + 1000, status: 'succeeded' }));
  const slow = (i: number) => paid(i, { finalMs: START + 10_001, status: 'succeeded' });
  t.true(p99Verdict([...fast(199), slow(199)]).pass, '1 of 200 slower than 10 s: p99 holds');
  t.false(p99Verdict([...fast(198), slow(198), slow(199)]).pass, '2 of 200: it does not');
  t.false(p99Verdict([...fast(198), slow(198), paid(199, { status: 'processing' })]).pass, 'one never final counts as slower');
  t.false(p99Verdict([...fast(198), slow(198), paid(199, {}, false)]).pass, 'so does a confirm never answered');
  t.true(p99Verdict(fast(10)).pass);
  t.false(p99Verdict([]).pass, 'no payment, no verdict passed');
  t.regex(p99Verdict(fast(10)).detail, /^10\/10 confirmed payments final within 10 s/);
});

test('exactly one succeeded event per succeeded payment, none for the others', (t) => {
  const statuses = new Map([['a', 'succeeded'], ['b', 'succeeded'], ['c', 'succeeded'], ['d', 'new'], ['e', 'succeeded']]);
  const events = new Map([['a', 1], ['b', 2], ['d', 1], ['e', 1]]);
  t.deepEqual(succeededEventCounts(statuses, events), { succeededWithoutEvent: 1, succeededTwice: 1, eventWithoutSuccess: 1 });
});

function fault(kind: InjectedFault['kind'], atS: number): InjectedFault {
  return { kind, atS, startedMs: START + atS * 1000, tookMs: 0, target: kind };
}

test('the payment path recovers when payments reach final at the pre-fault rate again, and its stall is measured', (t) => {
  // 10 payments final a second, none from 20 s to 24 s, then 10 a second again.
  const keys: KeyRecord[] = [];
  for (let ms = 0; ms < 40_000; ms += 100) {
    if (ms >= 20_000 && ms < 24_000) continue;
    keys.push(paid(ms, { finalMs: START + ms + 50, status: 'succeeded' }));
  }
  const result = checkPaymentRecovery(keys, [fault('store-restart', 20)], { startMs: START, warmupS: 10, recoveryS: 10, share: 0.8 });
  t.is(Math.round(result.baselinePerS), 10);
  t.true(result.verdict.pass);
  t.is(result.recoveries[0]?.stalledS, 4);
  t.is(result.recoveries[0]?.recoveredAfterS, 5.8);
  t.regex(result.verdict.name, /payments final back within 10 s/);
  const never = checkPaymentRecovery(keys.filter((k) => k.payment!.finalMs! < START + 20_000), [fault('redis-rollback', 20)], { startMs: START, warmupS: 10, recoveryS: 10, share: 0.8 });
  t.false(never.verdict.pass);
  t.is(never.recoveries[0]?.recoveredAfterS, null);
});

test('longestGapS reads the longest empty stretch after a moment, within a span', (t) => {
  const series = [1, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0];
  t.is(longestGapS(series, 1000, 0, 8), 3);
  t.is(longestGapS(series, 1000, 8000, 3), 3);
  t.is(longestGapS(series, 1000, 3000, 1), 0);
});

test('medianBySecondS groups confirm → final by the second of the confirm', (t) => {
  const keys = [paid(1, { startedMs: START + 100, finalMs: START + 1100 }), paid(2, { startedMs: START + 200, finalMs: START + 3200 }), paid(3, { startedMs: START + 300, finalMs: START + 2300 }), paid(4, { startedMs: START + 2500, finalMs: null })];
  t.deepEqual(medianBySecondS(keys, START, 3), [2, null, null]);
});

const counts = (wait: number, delayed = 0): QueueCounts => ({ wait, active: 0, delayed, due60s: delayed, overdue: 0, failed: 0 });

test('the queues around a fault: before it, their peak after it, and the stalled lines meanwhile', (t) => {
  const samples = [
    { atS: 19, queues: { writes: counts(1), intents: counts(0, 5) } },
    { atS: 20, queues: null },
    { atS: 21, queues: { writes: counts(40), intents: counts(0, 30) } },
    { atS: 23, queues: { writes: counts(7), intents: counts(0, 12) } },
    { atS: 40, queues: { writes: counts(99), intents: counts(0, 99) } },
  ];
  const stalledPerSecond = [...Array.from({ length: 21 }, () => ({})), { writes: 3 }, {}, { intents: 2 }];
  const [around] = queuesAroundFaults({ samples, stalledPerSecond }, [fault('redis-rollback', 20), fault('worker-kill', 21)], 10);
  t.is(around?.kind, 'redis-rollback');
  t.deepEqual(around?.queues.writes?.before, counts(1));
  t.is(around?.queues.writes?.peak.wait, 40);
  t.is(around?.queues.writes?.peakAtS.wait, 1);
  t.is(around?.queues.intents?.peak.delayed, 30);
  t.deepEqual(around?.queues.writes?.after, counts(7));
  t.is(around?.unreadS, 1);
  t.deepEqual(around?.stalled, { writes: 3, intents: 2 });
});

test('jobTimes buckets completed jobs by when they came due, and tells their wait from their run', (t) => {
  const start = 1_000_000;
  const jobs = [
    // Due at 0.5 s (added at 0.3 s, delayed 200 ms), started 100 ms later, ran 50 ms.
    { timestamp: start + 300, opts: { delay: 200 }, processedOn: start + 600, finishedOn: start + 650, attemptsStarted: 1 },
    // Due at 1.0 s, waited 3 s, ran 1 s, started twice.
    { timestamp: start + 1000, processedOn: start + 4000, finishedOn: start + 5000, attemptsStarted: 2 },
    // Due at 4.2 s, stalled once.
    { timestamp: start + 4200, processedOn: start + 4300, finishedOn: start + 4310, attemptsStarted: 1, stalledCounter: 1 },
    // Never finished: left out.
    { timestamp: start + 4200, processedOn: start + 4300 },
  ];
  t.deepEqual(jobTimes(jobs, start), [
    { fromS: 0, jobs: 2, waitMs: { p50: 3000, p90: 3000 }, runMs: { p50: 1000, p90: 1000 }, again: 1 },
    { fromS: 4, jobs: 1, waitMs: { p50: 100, p90: 100 }, runMs: { p50: 10, p90: 10 }, again: 1 },
  ]);
});

test('stalledQueue finds the workers’ stalled-job line and its queue', (t) => {
  t.is(stalledQueue('{"level":40,"queue":"intents","job_id":"7","msg":"job stalled: recovered for retry"}'), 'intents');
  t.is(stalledQueue('{"level":30,"msg":"worker started"}'), null);
});
