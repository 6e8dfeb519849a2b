/**
 * S7: refund → `refund.succeeded` through the simulator with zero delays, at 64
 * connections. `BENCH_S7_REFUNDS` intents are created and paid first (mtn_momo,
 * confirmed 64 at a time, each waited for by its `payment_intent.succeeded` at a local
 * receiver); then each is refunded once, whole. The receiver, also subscribed to
 * `refund.succeeded`, notes when each refund's event arrives: the time from sending
 * the refund to that moment is the end-to-end latency of a refund through the queue,
 * the hold on the intent, the simulator's steps and the outbox.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import autocannon from 'autocannon';
import type { MongoClient } from 'mongodb';
import { median, round, type Measurement } from '../measure.js';
import { progress } from '../progress.js';
import type { GroupResult } from '../report.js';
import { reportLogs, startService } from '../service.js';
import { settings, wanted, type ScenarioId } from '../settings.js';

const PHONE = '+2250500000000';

function percentile(sorted: number[], p: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

async function post(url: string, key: string, body: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(url, { method: 'POST', headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

async function until(what: string, done: () => boolean, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`S7: ${what} did not happen within ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

export async function runRefundScenarios(mongo: MongoClient): Promise<GroupResult> {
  const measured = new Map<ScenarioId, Measurement>();
  if (!wanted('S7')) return { measured };
  const paid = new Set<string>();
  /** Refunded intent → when its refund's `refund.succeeded` arrived. */
  const arrivals = new Map<string, number>();
  const receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = performance.now();
      try {
        const event = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { type: string; data: { object: { id: string; payment_intent?: string } } };
        if (event.type === 'payment_intent.succeeded') paid.add(event.data.object.id);
        const intent = event.data.object.payment_intent;
        if (event.type === 'refund.succeeded' && intent && !arrivals.has(intent)) arrivals.set(intent, at);
      } catch {
        // not an event: ignored
      }
      res.end('ok');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;

  progress('S7: starting 1 api and 1 worker process (simulator delays 0 ms)');
  const service = await startService(mongo, 's7', 1, {
    SIMULATOR_APPROVAL_DELAY_MS: '0',
    SIMULATOR_PROCESSING_DELAY_MS: '0',
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
  });
  try {
    const hook = await post(`${service.baseUrl}/v1/webhook_endpoints`, service.key, { url: receiverUrl, enabled_events: ['payment_intent.succeeded', 'refund.succeeded'] });
    if (hook.status !== 200) throw new Error(`S7: creating the endpoint failed: ${hook.status} ${JSON.stringify(hook.json)}`);

    const count = settings.s7Refunds;
    progress(`S7: creating and paying ${count} intents`);
    const ids: string[] = [];
    for (let i = 0; i < count; i += 64) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(64, count - i) }, async () => {
          const created = await post(`${service.baseUrl}/v1/payment_intents`, service.key, { amount: 2000, currency: 'xof', allowed_operators: ['mtn_momo'] });
          if (created.status !== 200) throw new Error(`S7: a create failed: ${created.status} ${JSON.stringify(created.json)}`);
          const id = created.json.id as string;
          const confirmed = await post(`${service.baseUrl}/v1/payment_intents/${id}/confirm`, service.key, { phone_number: PHONE });
          if (confirmed.status !== 200) throw new Error(`S7: a confirm failed: ${confirmed.status} ${JSON.stringify(confirmed.json)}`);
          return id;
        }),
      );
      ids.push(...batch);
    }
    await until(`${count} payments`, () => ids.every((id) => paid.has(id)));

    // autocannon refuses more connections than requests (a smoke run has 5 refunds).
    const connections = Math.min(64, count);
    progress(`S7: ${count} refunds at ${connections} connections`);
    const sentAt = new Map<string, number>();
    let next = 0;
    const result = await autocannon({
      url: `${service.baseUrl}/v1/refunds`,
      connections,
      amount: count,
      timeout: 30,
      method: 'POST',
      headers: { Authorization: `Bearer ${service.key}`, 'Content-Type': 'application/json' },
      requests: [
        {
          setupRequest: (req) => {
            const id = ids[next++ % ids.length] as string;
            sentAt.set(id, performance.now());
            return { ...req, body: JSON.stringify({ payment_intent: id }) };
          },
        },
      ],
    });
    const rps = result.requests.total / Math.max(result.duration, 0.001);
    const m: Measurement = {
      rps: round(rps, 1),
      p50_ms: round(result.latency.p50),
      p99_ms: round(result.latency.p99),
      non2xx: result.non2xx + result.errors,
      requests: result.requests.total,
      mismatches: 0,
    };
    measured.set('S7', m);
    const statuses = Object.fromEntries(Object.entries(result.statusCodeStats ?? {}).map(([code, stat]) => [code, (stat as { count: number }).count]));
    progress(`S7: ${m.rps} refunds/s, p50 ${m.p50_ms} ms, p99 ${m.p99_ms} ms, non-2xx/errors ${m.non2xx}; answers by status ${JSON.stringify(statuses)}`);

    const deadline = Date.now() + 60_000;
    while (arrivals.size < count && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    const latencies = [...arrivals].map(([id, at]) => at - (sentAt.get(id) ?? at)).sort((a, b) => a - b);
    const details = {
      refunds: count,
      statuses: JSON.stringify(statuses),
      succeeded_events: arrivals.size,
      refund_to_event_p50_ms: latencies.length ? round(median(latencies) ?? 0) : null,
      refund_to_event_p99_ms: latencies.length ? round(percentile(latencies, 99) ?? 0) : null,
    };
    progress(`S7: ${arrivals.size}/${count} refund.succeeded events; refund → event p50 ${details.refund_to_event_p50_ms} ms, p99 ${details.refund_to_event_p99_ms} ms`);
    service.api.assertRunning();
    return { measured, details: { S7: details } };
  } finally {
    reportLogs([service.api, ...service.workers]);
    await service.stop();
    receiver.close();
  }
}
