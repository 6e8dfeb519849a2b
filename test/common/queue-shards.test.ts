/** The queue shards of DESIGN section 19 (common/queue-shards.ts), without Redis: names, routing and the sharded queue's fan-out. */
import test from 'ava';
import type { Job, Queue } from 'bullmq';
import { baseQueueName, queueLayout, queueNames, shardOf, shardOfJob, ShardedQueue } from '../../common/queue-shards.js';

test('names: plain on one Redis, hash-tagged on a cluster, one per shard; housekeeping is one queue', (t) => {
  t.deepEqual(queueNames('writes', queueLayout({ queueShards: 1, redisClusterNodes: null })), ['writes']);
  t.deepEqual(queueNames('writes', queueLayout({ queueShards: 1, redisClusterNodes: [{ host: 'a', port: 1 }] })), ['{writes}']);
  t.deepEqual(queueNames('intents', queueLayout({ queueShards: 2, redisClusterNodes: null })), ['{intents-0}', '{intents-1}']);
  t.deepEqual(queueNames('maintenance', queueLayout({ queueShards: 4, redisClusterNodes: null })), ['{maintenance}']);
  t.is(baseQueueName('{writes-2}'), 'writes');
  t.is(baseQueueName('{maintenance}'), 'maintenance');
  t.is(baseQueueName('writes'), 'writes');
});

test('routing: a project\'s writes and events to one shard, the intents\' clock by intent, deliveries by endpoint', (t) => {
  for (const project of ['acme', 'p_1', 'another']) {
    const shard = shardOf(project, 3);
    t.is(shardOfJob('writes', { project, id: 'pi_1' }, 3), shard);
    t.is(shardOfJob('writes', { project, id: 'pi_2' }, 3), shard, 'whatever the object');
    t.is(shardOfJob('events', { project, eventId: 'evt_1' }, 3), shard);
  }
  t.is(shardOfJob('intents', { paymentIntent: 'pi_9', project: 'acme' }, 3), shardOf('pi_9', 3));
  t.is(shardOfJob('intents', { paymentIntent: 'pi_9' }, 3), shardOf('pi_9', 3), 'a callback\'s check, which knows no project, goes to the same shard');
  t.is(shardOfJob('webhooks', { endpointId: 'we_1', eventId: 'evt_1' }, 3), shardOf('we_1', 3));
  t.is(shardOfJob('webhooks', { target: 'we_1', project: 'acme' }, 3), shardOf('we_1', 3), 'an endpoint test goes with its deliveries');
  t.is(shardOfJob('maintenance', {}, 3), 0);
  const spread = new Set(Array.from({ length: 60 }, (_, i) => shardOf(`project_${i}`, 3)));
  t.is(spread.size, 3, 'projects spread over every shard');
});

/** A stand-in for one BullMQ queue: what the sharded queue calls, recorded. */
function fakeShard(name: string, jobs: Map<string, { name: string; data: unknown; timestamp: number }>) {
  return {
    name,
    add: async (jobName: string, data: unknown, opts?: { jobId?: string }) => {
      const id = opts?.jobId ?? `${name}-${jobs.size}`;
      jobs.set(id, { name: jobName, data, timestamp: jobs.size });
      return { id, queueName: name } as unknown as Job;
    },
    addBulk: async (list: Array<{ name: string; data: unknown; opts?: { jobId?: string } }>) =>
      Promise.all(list.map(async (j) => {
        const id = j.opts?.jobId ?? `${name}-${jobs.size}`;
        jobs.set(id, { name: j.name, data: j.data, timestamp: jobs.size });
        return { id, queueName: name } as unknown as Job;
      })),
    getJobState: async (id: string) => (jobs.has(id) ? 'waiting' : 'unknown'),
    getWaitingCount: async () => jobs.size,
    getWaiting: async () => [...jobs.values()].map((j) => j as unknown as Job),
  } as unknown as Queue;
}

test('a sharded queue adds each job to its shard, in order for a bulk, and finds a job by id in whichever shard holds it', async (t) => {
  const stores = [new Map(), new Map(), new Map()] as Array<Map<string, { name: string; data: unknown; timestamp: number }>>;
  const queue = new ShardedQueue('writes', stores.map((store, i) => fakeShard(`{writes-${i}}`, store)));
  const projects = ['a', 'b', 'c', 'd', 'e', 'f'];
  const added = await queue.addBulk(projects.map((project) => ({ name: 'x', data: { project }, opts: { jobId: `job-${project}` } })));
  t.deepEqual(added.map((job) => job.id), projects.map((p) => `job-${p}`), 'in the order given');
  for (const [i, project] of projects.entries()) t.is(added[i]!.queueName, `{writes-${shardOf(project, 3)}}`);
  t.is(await queue.getJobState('job-d'), 'waiting');
  t.is(await queue.getJobState('job-z'), 'unknown');
  t.is(await queue.getWaitingCount(), 6);
  const single = await queue.add('x', { project: 'a' }, { jobId: 'one-more' });
  t.is(single.queueName, `{writes-${shardOf('a', 3)}}`);
});
