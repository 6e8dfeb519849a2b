// Clean shutdown of the api under load: on SIGTERM it stops accepting connections,
// answers every request it already has (the object, or a 503 the client can retry),
// then exits; a retry with the same Idempotency-Key after a restart gets the object,
// and there is exactly one stored object per key.

import { randomBytes } from 'node:crypto';
import test from 'ava';
import { Queue } from 'bullmq';
import { sleep, withService } from '../../helpers/service.js';

type Outcome = { status: number; code?: string; id?: string; connection?: string | null } | { error: string };

/** Connection-level failures: the request never reached a server that could answer it. */
const CONNECTION_ERRORS = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET']);

function errorCode(err: unknown): string {
  const cause = (err as { cause?: { code?: string } }).cause;
  return cause?.code ?? (err as Error).message;
}

test('SIGTERM under a few hundred in-flight creates: every request gets a real answer and each key one object', async (t) => {
  // Admission control off: the test holds the queue back on purpose, and every request must reach the wait.
  const { service, key: apiKey, project } = await withService(t, { project: 'sigterm', workers: 2, env: { CREATE_ADMISSION_WAIT_MS: '0' } });
  const baseUrl = service.baseUrl;

  const send = async (key: string): Promise<Outcome> => {
    try {
      const res = await fetch(`${baseUrl}/v1/payment_intents`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json', 'Idempotency-Key': key },
        body: JSON.stringify({ amount: 4200, metadata: { key } }),
      });
      const body = (await res.json()) as { id?: string; error?: { code: string } };
      return { status: res.status, code: body.error?.code, id: body.id, connection: res.headers.get('connection') };
    } catch (err) {
      return { error: errorCode(err) };
    }
  };
  const newKey = () => `sigterm-${randomBytes(8).toString('hex')}`;

  // The creates queue is held while the first wave arrives, so that all of it is
  // provably inside the api (enqueued, waiting for its result) when SIGTERM lands.
  const redis = service.redis();
  const creates = new Queue('writes', { connection: redis, prefix: service.prefix });
  t.teardown(async () => {
    await creates.close();
    redis.disconnect();
  });
  await creates.pause();

  const FIRST_WAVE = 300;
  const firstKeys = Array.from({ length: FIRST_WAVE }, newKey);
  const firstWave = firstKeys.map((key) => send(key).then((outcome) => ({ key, outcome })));
  for (let i = 0; i < 600; i++) {
    if ((await creates.getJobCounts('waiting')).waiting >= FIRST_WAVE) break;
    await sleep(25);
  }
  t.is((await creates.getJobCounts('waiting')).waiting, FIRST_WAVE, 'every request of the first wave is in the api');

  service.api.kill('SIGTERM');
  let exited = false;
  const exit = service.api.exited.then((code) => {
    exited = true;
    return code;
  });

  // The load goes on across the stop: a new create every 5 ms until the api is gone.
  // These were all sent after SIGTERM: those that come after the listener closed are
  // refused (or reset, on a kept-alive connection the api was closing); that is the
  // "stopped accepting" half of the contract, and they are retried below.
  const lateWave: Array<Promise<{ key: string; outcome: Outcome }>> = [];
  const pacer = (async () => {
    while (!exited) {
      const key = newKey();
      lateWave.push(send(key).then((outcome) => ({ key, outcome })));
      await sleep(5);
    }
  })();
  // The api has begun its stop, with the late wave coming in, before the worker goes on.
  await service.api.waitFor(/api stopping/);
  await creates.resume();

  t.is(await exit, 0, 'the api exits cleanly');
  await pacer;
  t.true(service.api.output.some((line) => line.includes('"api stopped"')));

  const first = await Promise.all(firstWave);
  const late = await Promise.all(lateWave);
  const real = (o: Outcome) =>
    'status' in o && (o.status === 200 || (o.status === 503 && (o.code === 'processing_timeout' || o.code === 'service_unavailable')));
  for (const { key, outcome } of first) {
    t.true(real(outcome), `first wave ${key}: ${JSON.stringify(outcome)}`);
    // Answered during the drain: the connection closes, so the client does not reuse it.
    t.is('status' in outcome ? outcome.connection : null, 'close', `first wave ${key} closes its connection`);
  }
  for (const { key, outcome } of late) {
    t.true(real(outcome) || ('error' in outcome && CONNECTION_ERRORS.has(outcome.error)), `late ${key}: ${JSON.stringify(outcome)}`);
  }
  const tally = (list: Array<{ outcome: Outcome }>) =>
    list.reduce<Record<string, number>>((acc, { outcome }) => {
      const label = 'error' in outcome ? outcome.error : outcome.code ? `${outcome.status} ${outcome.code}` : String(outcome.status);
      acc[label] = (acc[label] ?? 0) + 1;
      return acc;
    }, {});
  t.log('first wave (in flight at SIGTERM):', tally(first));
  t.log('late wave (sent after SIGTERM):', tally(late));
  t.true(late.length > 0, 'load went on across the stop');

  // Restart the api and retry every key without a 200 until it gets one.
  await service.startApi();
  const idsByKey = new Map<string, Set<string>>();
  const record = (key: string, outcome: Outcome) => {
    if ('status' in outcome && outcome.status === 200 && outcome.id) {
      const ids = idsByKey.get(key) ?? new Set<string>();
      ids.add(outcome.id);
      idsByKey.set(key, ids);
      return true;
    }
    return false;
  };
  const all = [...first, ...late];
  const pending = all.filter(({ key, outcome }) => !record(key, outcome)).map(({ key }) => key);
  t.log(`${pending.length} of ${all.length} keys retried after the restart`);
  for (let round = 0; pending.length > 0 && round < 60; round++) {
    const outcomes = await Promise.all(pending.map(async (key) => ({ key, outcome: await send(key) })));
    pending.length = 0;
    for (const { key, outcome } of outcomes) if (!record(key, outcome)) pending.push(key);
    if (pending.length > 0) await sleep(500);
  }
  t.deepEqual(pending, [], 'every key got its object');

  // Exactly one object per key, and it is the one every 200 of that key named.
  const db = await service.db();
  const stored = await db.collection('payment_intents').find({ project }, { projection: { _id: 1 } }).toArray();
  const keys = new Set(all.map(({ key }) => key));
  t.is(stored.length, keys.size, 'one stored payment intent per idempotency key');
  for (const [key, ids] of idsByKey) t.is(ids.size, 1, `every 200 for ${key} names the same object`);
  t.deepEqual(stored.map((d) => String(d._id)).sort(), [...idsByKey.values()].map((ids) => [...ids][0] as string).sort());
});
