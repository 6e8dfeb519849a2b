/**
 * S6: confirm → succeeded through the simulator with zero delays, at 64
 * connections. `BENCH_S6_INTENTS` intents are created first (keyless creates, 64 at
 * a time), then each is confirmed once with a phone number that succeeds
 * (mtn_momo, phone approval: requires_action → processing → succeeded, each step a
 * job). A local receiver, subscribed to `payment_intent.succeeded`, notes when each
 * intent's event arrives: the time from sending its confirm to that moment is the
 * end-to-end latency of a payment through the queue, the workers and the outbox.
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

export async function runConfirmScenarios(mongo: MongoClient): Promise<GroupResult> {
  const measured = new Map<ScenarioId, Measurement>();
  if (!wanted('S6')) return { measured };
  const arrivals = new Map<string, number>();
  const receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = performance.now();
      try {
        const event = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { type: string; data: { object: { id: string } } };
        if (event.type === 'payment_intent.succeeded' && !arrivals.has(event.data.object.id)) arrivals.set(event.data.object.id, at);
      } catch {
        // not an event: ignored
      }
      res.end('ok');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;

  progress('S6: starting 1 api and 1 worker process (simulator delays 0 ms)');
  const service = await startService(mongo, 's6', 1, {
    SIMULATOR_APPROVAL_DELAY_MS: '0',
    SIMULATOR_PROCESSING_DELAY_MS: '0',
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
  });
  try {
    const hook = await post(`${service.baseUrl}/v1/webhook_endpoints`, service.key, { url: receiverUrl, enabled_events: ['payment_intent.succeeded'] });
    if (hook.status !== 200) throw new Error(`S6: creating the endpoint failed: ${hook.status} ${JSON.stringify(hook.json)}`);

    const count = settings.s6Intents;
    progress(`S6: creating ${count} intents`);
    const ids: string[] = [];
    for (let i = 0; i < count; i += 64) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(64, count - i) }, () => post(`${service.baseUrl}/v1/payment_intents`, service.key, { amount: 2000, currency: 'xof', allowed_operators: ['mtn_momo'] })),
      );
      for (const r of batch) {
        if (r.status !== 200) throw new Error(`S6: a create failed: ${r.status} ${JSON.stringify(r.json)}`);
        ids.push(r.json.id as string);
      }
    }

    // autocannon refuses more connections than requests (a smoke run has 10 intents).
    const connections = Math.min(64, count);
    progress(`S6: ${count} confirms at ${connections} connections`);
    const sentAt = new Map<string, number>();
    let next = 0;
    const result = await autocannon({
      url: service.baseUrl,
      connections,
      amount: count,
      timeout: 30,
      method: 'POST',
      headers: { Authorization: `Bearer ${service.key}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ phone_number: PHONE }),
      requests: [
        {
          setupRequest: (req) => {
            const id = ids[next++ % ids.length] as string;
            sentAt.set(id, performance.now());
            return { ...req, path: `/v1/payment_intents/${id}/confirm` };
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
    measured.set('S6', m);
    // What the confirms were answered: a 503 is admission control refusing work it could not finish in time.
    const statuses = Object.fromEntries(Object.entries(result.statusCodeStats ?? {}).map(([code, stat]) => [code, (stat as { count: number }).count]));
    progress(`S6: ${m.rps} confirms/s, p50 ${m.p50_ms} ms, p99 ${m.p99_ms} ms, non-2xx/errors ${m.non2xx}; answers by status ${JSON.stringify(statuses)}, errors ${result.errors}, timeouts ${result.timeouts}`);

    // Every succeeded event, or a minute at most.
    const deadline = Date.now() + 60_000;
    while (arrivals.size < count && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    const latencies = [...arrivals].map(([id, at]) => at - (sentAt.get(id) ?? at)).sort((a, b) => a - b);
    const details = {
      confirms: count,
      statuses: JSON.stringify(statuses),
      succeeded_events: arrivals.size,
      confirm_to_event_p50_ms: latencies.length ? round(median(latencies) ?? 0) : null,
      confirm_to_event_p99_ms: latencies.length ? round(percentile(latencies, 99) ?? 0) : null,
    };
    progress(`S6: ${arrivals.size}/${count} succeeded events; confirm → event p50 ${details.confirm_to_event_p50_ms} ms, p99 ${details.confirm_to_event_p99_ms} ms`);
    service.api.assertRunning();
    return { measured, details: { S6: details } };
  } finally {
    reportLogs([service.api, ...service.workers]);
    await service.stop();
    receiver.close();
  }
}
