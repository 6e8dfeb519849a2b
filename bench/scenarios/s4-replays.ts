/**
 * S4: replays of one completed create (the same `Idempotency-Key` and body); every
 * answer is checked against the first, byte for byte.
 */
import { randomBytes } from 'node:crypto';
import type { MongoClient } from 'mongodb';
import { timed, type Measurement } from '../measure.js';
import { progress } from '../progress.js';
import type { GroupResult } from '../report.js';
import { reportLogs, startService } from '../service.js';
import { CREATE_BODY, wanted, type ScenarioId } from '../settings.js';

/** Runs S4 (when asked for) on its own service, after checking that a replay is one. */
export async function runReplayScenarios(mongo: MongoClient): Promise<GroupResult> {
  const measured = new Map<ScenarioId, Measurement>();
  if (!wanted('S4')) return { measured };
  progress('S4: starting 1 api and 1 worker process');
  const service = await startService(mongo, 's4', 1);
  try {
    const headers = {
      Authorization: `Bearer ${service.key}`,
      'Content-Type': 'application/json',
      'Idempotency-Key': `bench-replay-${randomBytes(6).toString('hex')}`,
    };
    const first = await fetch(`${service.baseUrl}/v1/payment_intents`, { method: 'POST', headers, body: CREATE_BODY });
    const firstBody = await first.text();
    if (first.status !== 200) throw new Error(`S4: the first create failed: ${first.status} ${firstBody}`);
    const again = await fetch(`${service.baseUrl}/v1/payment_intents`, { method: 'POST', headers, body: CREATE_BODY });
    if ((await again.text()) !== firstBody || again.headers.get('idempotent-replayed') !== 'true') {
      throw new Error('S4: the second request with the key was not a byte-for-byte replay');
    }
    measured.set(
      'S4',
      await timed('S4', {
        url: `${service.baseUrl}/v1/payment_intents`,
        method: 'POST',
        connections: 64,
        headers,
        body: CREATE_BODY,
        verifyBody: (body) => body === firstBody,
      }),
    );
    service.api.assertRunning();
  } finally {
    reportLogs([service.api, ...service.workers]);
    await service.stop();
  }
  return { measured };
}
