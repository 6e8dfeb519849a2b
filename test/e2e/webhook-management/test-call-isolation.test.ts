/**
 * Security review H1: an endpoint's test call is made by the delivery machinery,
 * never in the writes queue that every tenant's creates and mutations share, and a
 * scope has at most a few test calls in flight (429 with Retry-After past them). So
 * a storm of test calls at a receiver that holds every request does not slow another
 * project's payments.
 */
import test from 'ava';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { until as waitUntil, withService, type ApiResponse } from '../../helpers/service.js';

/** How long the tarpit holds each request before it answers. */
const HOLD_MS = 8000;

test("64 test calls at a receiver that holds each for 8 s leave another project's keyed creates fast, and past the cap are refused with 429", async (t) => {
  t.timeout(120_000);
  const held: Array<() => void> = [];
  const tarpit = createServer((req, res) => {
    req.resume();
    const timer = setTimeout(() => res.end('late'), HOLD_MS);
    held.push(() => clearTimeout(timer));
  });
  await new Promise<void>((resolve) => tarpit.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    for (const stop of held) stop();
    tarpit.closeAllConnections();
    tarpit.close();
  });
  let hits = 0;
  tarpit.on('request', () => hits++);
  const tarpitUrl = `http://127.0.0.1:${(tarpit.address() as AddressInfo).port}/tarpit`;

  const { service, key: attacker } = await withService(t, { project: 'attacker' });
  const victim = await service.issueKey('victim');
  const endpoint = await service.request('POST', '/v1/webhook_endpoints', { key: attacker, body: { url: tarpitUrl } });
  t.is(endpoint.status, 200, endpoint.text);
  const warm = await service.request('POST', '/v1/payment_intents', { key: victim, body: { amount: 1, currency: 'xof' } });
  t.is(warm.status, 200, warm.text);

  // The victim's keyed creates, four at a time, for `forMs`: their durations.
  let n = 0;
  const victimCreates = async (forMs: number) => {
    const durations: number[] = [];
    const statuses: number[] = [];
    const slowest: string[] = [];
    const from = Date.now();
    const until = from + forMs;
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (Date.now() < until) {
          const started = Date.now();
          const res = await service.request('POST', '/v1/payment_intents', {
            key: victim,
            body: { amount: 100 + n, currency: 'xof' },
            headers: { 'Idempotency-Key': `victim-${n++}` },
          });
          durations.push(Date.now() - started);
          if (Date.now() - started > 1000) slowest.push(`${started - from}+${Date.now() - started} ms`);
          statuses.push(res.status);
        }
      }),
    );
    durations.sort((a, b) => a - b);
    return { durations, statuses, slowest, p95: durations[Math.min(durations.length - 1, Math.ceil(durations.length * 0.95) - 1)] as number };
  };
  // The same machine's pace without the storm: a loaded machine slows every create.
  const baseline = await victimCreates(3000);

  const storm = Promise.all(
    Array.from({ length: 64 }, () => service.request('POST', `/v1/webhook_endpoints/${endpoint.body.id}/test`, { key: attacker, body: {} })),
  );
  await waitUntil('the storm to reach the tarpit', () => (hits > 0 ? true : undefined));
  const { durations, statuses, slowest, p95 } = await victimCreates(HOLD_MS);
  const answers: ApiResponse[] = await storm;

  t.log(`victim before the storm: ${baseline.durations.length} keyed creates, p95 ${baseline.p95} ms`);
  t.log(`victim during the storm: ${durations.length} keyed creates, p50 ${durations[Math.floor(durations.length / 2)]} ms, p95 ${p95} ms, max ${durations.at(-1)} ms`);
  if (slowest.length > 0) t.log(`slower than 1 s (start after the storm's + duration): ${slowest.join(', ')}; before the storm: ${baseline.slowest.join(', ')}`);
  t.true(durations.length >= 8, 'the victim got creates through during the storm');
  t.deepEqual([...new Set([...baseline.statuses, ...statuses])], [200], "every one of the victim's creates succeeded: no 503");
  // Under 1 s; on a machine so loaded that creates are slow anyway, no slower than twice their pace before the storm.
  const bound = Math.max(1000, 2 * baseline.p95);
  t.true(p95 < bound, `the victim's p95 stays under ${bound} ms (was ${p95} ms)`);

  const byStatus: Record<number, number> = {};
  for (const a of answers) byStatus[a.status] = (byStatus[a.status] ?? 0) + 1;
  t.log(`storm of 64 test calls: ${JSON.stringify(byStatus)}; the tarpit got ${hits} requests`);
  t.true((byStatus[429] ?? 0) >= 56, 'past the cap of test calls in flight, the calls are refused');
  for (const a of answers.filter((x) => x.status === 429)) {
    t.is(a.body.error.code, 'rate_limit');
    t.is(a.body.error.type, 'invalid_request_error');
    t.true(Number(a.headers.get('retry-after')) >= 1);
  }
  for (const a of answers.filter((x) => x.status === 200)) {
    t.is(a.body.object, 'webhook_attempt');
    t.is(a.body.error, 'timeout', 'a test call has its own short timeout, shorter than the hold');
  }
  t.true(hits <= 8, `the receiver saw few test POSTs (${hits})`);
});
