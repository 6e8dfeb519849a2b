/**
 * A master of the Redis Cluster dies mid-load (DESIGN section 19): its process is
 * killed (SIGKILL, not a CLUSTER FAILOVER), its replica is promoted, and the
 * service rides it out without a restart. Some hundreds of creates with idempotency
 * keys, from clients that retry every 5xx, 409 and dropped connection with the same
 * key: every key ends in exactly one payment intent, every intent's created event
 * reaches the subscribed endpoint, and no process meets a CROSSSLOT.
 */
import test from 'ava';
import { setTimeout as sleep } from 'node:timers/promises';
import type { PaymentIntentDoc } from '../../common/documents.js';
import { mapLimit, PI } from '../helpers/payment-intent-lifecycle.js';
import { Receiver } from '../helpers/receiver.js';
import { useRedisCluster } from '../helpers/redis-cluster.js';
import { Service, uniqueName, until } from '../helpers/service.js';

const KEYS = 300;
const KILL_AFTER = 100;

const clusterOf = useRedisCluster(test, 'redis-failover-test');

test('a master killed mid-load: its replica takes over, every key ends in exactly one object, every created event is delivered, no CROSSSLOT', async (t) => {
  const cluster = clusterOf();
  const service = await Service.start({ workers: 2, env: { REDIS_CLUSTER_NODES: cluster.nodesEnv, QUEUE_SHARDS: '3' } });
  const receiver = await Receiver.start();
  t.teardown(async () => {
    await service.stop();
    await receiver.close();
  });
  const key = await service.issueKey(uniqueName('failover'));
  const endpoint = await service.request('POST', '/v1/webhook_endpoints', { key, body: { url: receiver.url('/created'), enabled_events: ['payment_intent.created'] } });
  t.is(endpoint.status, 200, endpoint.text);

  let answered = 0;
  let retries = 0;
  const killed = (async () => {
    await until('the first creates answered', () => (answered >= KILL_AFTER ? true : undefined), 120_000);
    const [victim] = await cluster.masters();
    await victim!.kill('SIGKILL');
    const at = Date.now();
    await cluster.waitOk(60_000);
    return { port: victim!.port, promotedInMs: Date.now() - at };
  })();

  // A client as the chaos run's: the same key again after a 5xx, a 409 or a dropped connection.
  const ids = await mapLimit(Array.from({ length: KEYS }, (_, i) => i), 16, async (i) => {
    let wait = 100;
    for (const deadline = Date.now() + 120_000; ; ) {
      try {
        const res = await service.request('POST', PI, { key, body: { amount: 1000 + i, currency: 'xof' }, headers: { 'Idempotency-Key': `key-${i}` } });
        if (res.status === 200) {
          answered++;
          return res.body.id as string;
        }
        if (res.status < 500 && res.status !== 409) throw new Error(`key-${i}: ${res.status} ${res.text}`);
      } catch (err) {
        if (err instanceof Error && err.message.startsWith(`key-${i}:`)) throw err;
      }
      if (Date.now() > deadline) throw new Error(`key-${i} unanswered after 120 s`);
      retries++;
      await sleep(wait);
      wait = Math.min(wait * 2, 1000);
    }
  });
  const failover = await killed;
  t.log(`master on port ${failover.port} killed after ${KILL_AFTER} answers; cluster ok again ${failover.promotedInMs} ms later; ${retries} retries`);

  // Exactly one object per key, each the one its key answered.
  const db = await service.db();
  const docs = await db.collection<PaymentIntentDoc>('payment_intents').find({}, { projection: { _id: 1, amount: 1 } }).toArray();
  t.is(new Set(ids).size, KEYS, 'every key answered with an object of its own');
  t.is(docs.length, KEYS, 'and no key made a second one');
  t.deepEqual(docs.map((d) => d._id).sort(), [...ids].sort());
  t.deepEqual(docs.map((d) => d.amount).sort((a, b) => a - b), Array.from({ length: KEYS }, (_, i) => 1000 + i), 'each amount once');

  // Every created event delivered (at least once; the deliveries are told apart by event id).
  await until(
    'every created event delivered',
    () => {
      const seen = new Set(receiver.received('/created').map((r) => (JSON.parse(r.body.toString('utf8')) as { data: { object: { id: string } } }).data.object.id));
      return ids.every((id) => seen.has(id)) ? true : undefined;
    },
    120_000,
  );
  t.pass();

  // The service goes on without a restart, and no process met a CROSSSLOT.
  const after = await service.request('POST', PI, { key, body: { amount: 5000, currency: 'xof' } });
  t.is(after.status, 200, after.text);
  t.deepEqual(service.logs().filter((line) => /CROSSSLOT/i.test(line)), []);
});
