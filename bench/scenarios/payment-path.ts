/**
 * What S6 and S7 share: they measure a payment (or a refund) end to end, not a
 * request. A local receiver notes when each object's final event arrives; a run
 * sends its requests (a burst at 64 connections, or a steady arrival rate) and
 * notes when each was sent; a payment is complete when its event has arrived.
 *
 * Each run also accounts for where the time went, to name the bottleneck:
 * the CPU seconds of each process (cpu-profile.ts), and the driver's commands of the
 * api and the worker by command and collection (the `mongodb_commands_total` and
 * `mongodb_command_seconds_total` metrics, common/metrics.ts), per completed payment.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import autocannon from 'autocannon';
import type { MongoClient } from 'mongodb';
import { freePort } from '#scripts/lib/net.mjs';
import { describeCpu, profileCpu, serverPids } from '../cpu-profile.js';
import { median, round, type Measurement } from '../measure.js';
import { progress } from '../progress.js';
import { startService, type Service } from '../service.js';
import { settings } from '../settings.js';

/** A test number whose payments succeed (mtn_momo, phone approval). */
export const PHONE = '+2250500000000';

export function percentile(sorted: number[], p: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

export async function post(url: string, key: string, body: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(url, { method: 'POST', headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

/**
 * A webhook receiver: for each event type it listens for, when the event of each
 * object first arrived (performance.now()). `keyOf` names the object an event is
 * about (a refund's event: its payment intent).
 */
export class EventClock {
  private readonly arrivals = new Map<string, Map<string, number>>();
  private readonly server: http.Server;

  constructor(keyOf: (type: string, object: Record<string, unknown>) => string = (_, object) => object.id as string) {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const at = performance.now();
        try {
          const event = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { type: string; data: { object: Record<string, unknown> } };
          const seen = this.of(event.type);
          const key = keyOf(event.type, event.data.object);
          if (!seen.has(key)) seen.set(key, at);
        } catch {
          // not an event: ignored
        }
        res.end('ok');
      });
    });
  }

  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
  }

  of(type: string): Map<string, number> {
    let seen = this.arrivals.get(type);
    if (!seen) this.arrivals.set(type, (seen = new Map()));
    return seen;
  }

  /** Waits until every one of `keys` has its `type` event, or `timeoutMs` has passed. */
  async await(type: string, keys: string[], timeoutMs: number): Promise<void> {
    const seen = this.of(type);
    const deadline = Date.now() + timeoutMs;
    while (keys.some((k) => !seen.has(k)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  }

  close(): void {
    this.server.close();
  }
}

/** The service of a payment scenario: 1 api, 1 worker with its metrics served, simulator delays 0. */
export interface PaymentService extends Service {
  metricsUrls: string[];
}

export async function startPaymentService(mongo: MongoClient, group: string): Promise<PaymentService> {
  const metricsPort = await freePort();
  const service = await startService(mongo, group, 1, {
    SIMULATOR_APPROVAL_DELAY_MS: '0',
    SIMULATOR_PROCESSING_DELAY_MS: '0',
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    METRICS_PORT: String(metricsPort),
  });
  return { ...service, metricsUrls: [`${service.baseUrl}/metrics`, `http://127.0.0.1:${metricsPort}/metrics`] };
}

/** The driver's commands so far, summed over the api and the worker: `"update payment_intents"` → count and seconds. */
export type CommandAccount = Map<string, { n: number; s: number }>;

export async function commandAccount(urls: string[]): Promise<CommandAccount> {
  const account: CommandAccount = new Map();
  for (const url of urls) {
    const text = await fetch(url).then((res) => res.text());
    for (const match of text.matchAll(/^mongodb_command(s_total|_seconds_total)\{([^}]*)\} (\S+)$/gm)) {
      const labels = Object.fromEntries([...(match[2] as string).matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]));
      const key = `${labels.command} ${labels.collection || '-'}`;
      const entry = account.get(key) ?? { n: 0, s: 0 };
      if (match[1] === 's_total') entry.n += Number(match[3]);
      else entry.s += Number(match[3]);
      account.set(key, entry);
    }
  }
  return account;
}

/** "update payment_intents 3.0 × 1.9 ms, insert events 1.0 × …": per completed payment, the costliest first. */
export function describeAccount(before: CommandAccount, after: CommandAccount, per: number): { text: string; perUnit: Record<string, string> } {
  const rows = [...after].map(([key, a]) => {
    const b = before.get(key) ?? { n: 0, s: 0 };
    return { key, n: a.n - b.n, s: a.s - b.s };
  }).filter((r) => r.n > 0).sort((x, y) => y.s - x.s);
  const perUnit = Object.fromEntries(rows.map((r) => [r.key, `${round(r.n / per, 2)} × ${round((1000 * r.s) / r.n, 2)} ms`]));
  const total = rows.reduce((sum, r) => sum + r.s, 0);
  const text = `${round((1000 * total) / per, 1)} ms of commands per unit: ${rows.slice(0, 8).map((r) => `${r.key} ${perUnit[r.key]}`).join(', ')}`;
  return { text, perUnit };
}

/** Sends `count` requests at 64 connections (fewer for a smaller count); `pathOf(i)` and `bodyOf(i)` shape request i. */
export async function burst(
  service: Service,
  count: number,
  request: (i: number) => { path: string; body: string },
  sentAt: (i: number) => void,
): Promise<{ answersPerS: number; p50: number; p99: number; non2xx: number; statuses: Record<string, number> }> {
  let next = 0;
  const result = await autocannon({
    url: service.baseUrl,
    // autocannon refuses more connections than requests (a smoke run has a few).
    connections: Math.min(64, count),
    amount: count,
    timeout: 30,
    method: 'POST',
    headers: { Authorization: `Bearer ${service.key}`, 'Content-Type': 'application/json' },
    requests: [
      {
        setupRequest: (req) => {
          const i = next++;
          sentAt(i);
          return { ...req, ...request(i) };
        },
      },
    ],
  });
  const statuses = Object.fromEntries(Object.entries(result.statusCodeStats ?? {}).map(([code, stat]) => [code, (stat as { count: number }).count]));
  return {
    answersPerS: result.requests.total / Math.max(result.duration, 0.001),
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx + result.errors,
    statuses,
  };
}

/** Sends request i at i / rate seconds after the start, whatever the answers; resolves when every answer is in. */
export async function steady(
  service: Service,
  rate: number,
  count: number,
  request: (i: number) => { path: string; body: string },
  sentAt: (i: number) => void,
): Promise<{ non2xx: number; statuses: Record<string, number> }> {
  const statuses: Record<string, number> = {};
  const start = performance.now();
  const sends: Array<Promise<void>> = [];
  for (let i = 0; i < count; i++) {
    const due = start + (1000 * i) / rate;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    const { path, body } = request(i);
    sentAt(i);
    sends.push(
      fetch(`${service.baseUrl}${path}`, { method: 'POST', headers: { Authorization: `Bearer ${service.key}`, 'Content-Type': 'application/json' }, body })
        .then(async (res) => {
          await res.arrayBuffer();
          return String(res.status);
        }, () => 'error')
        .then((status) => {
          statuses[status] = (statuses[status] ?? 0) + 1;
        }),
    );
  }
  await Promise.all(sends);
  const non2xx = Object.entries(statuses).filter(([s]) => s !== '200').reduce((sum, [, n]) => sum + n, 0);
  return { non2xx, statuses };
}

/**
 * Completed units a second, from the first request sent to the last final event
 * received, and each unit's latency from its request to its event.
 */
export function completion(sent: Map<string, number>, arrived: Map<string, number>): { completed: number; perS: number; p50: number | null; p99: number | null; max: number | null } {
  const latencies: number[] = [];
  let last = -Infinity;
  for (const [key, at] of arrived) {
    const from = sent.get(key);
    if (from === undefined) continue;
    latencies.push(at - from);
    last = Math.max(last, at);
  }
  latencies.sort((a, b) => a - b);
  const first = Math.min(...sent.values());
  const spanS = latencies.length ? (last - first) / 1000 : 0;
  return {
    completed: latencies.length,
    perS: spanS > 0 ? round(latencies.length / spanS, 1) : 0,
    p50: latencies.length ? round(median(latencies) ?? 0) : null,
    p99: latencies.length ? round(percentile(latencies, 99) ?? 0) : null,
    max: latencies.length ? round(latencies.at(-1) ?? 0) : null,
  };
}

/** Where a run's CPU and store time went, started before its requests; `stop(units)` prints and returns the figures. */
export async function accountFor(service: PaymentService, id: string): Promise<{ stop(units: number): Promise<Record<string, number | string>> }> {
  const before = await commandAccount(service.metricsUrls);
  const cpu = profileCpu([
    ...serverPids(settings.mongoUrl, settings.redisUrl),
    { pid: service.api.pid, kind: 'api' },
    ...service.workers.map((w) => ({ pid: w.pid, kind: 'worker' })),
  ]);
  return {
    async stop(units) {
      const figures = cpu.stop();
      const after = await commandAccount(service.metricsUrls);
      const account = describeAccount(before, after, Math.max(units, 1));
      progress(`${id}: CPU seconds: ${describeCpu(figures)}`);
      progress(`${id}: ${account.text}`);
      return {
        ...Object.fromEntries(Object.entries(figures.byKind).map(([kind, s]) => [`cpu_s_${kind.split(' ')[0]}`, s])),
        cpu_s_capacity: figures.capacity,
        ...Object.fromEntries(Object.entries(account.perUnit).map(([key, v]) => [`store ${key}`, v])),
      };
    },
  };
}

/** A scenario's row: completed units a second, and its latency from request to final event. */
export function measurementOf(done: ReturnType<typeof completion>, count: number, non2xx: number): Measurement {
  return {
    rps: done.perS,
    p50_ms: done.p50 ?? 0,
    p99_ms: done.p99 ?? 0,
    // A unit whose final event never came counts as failed.
    non2xx: non2xx + (count - done.completed),
    requests: count,
    mismatches: 0,
  };
}
