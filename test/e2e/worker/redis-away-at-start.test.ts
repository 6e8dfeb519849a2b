/**
 * A worker started while Redis is away (a Redis restart, a failover) logs the
 * connection's errors as log lines, and starts once Redis is back. Its BullMQ
 * workers connect as they are made; an error of theirs that no listener took went
 * to stderr as a bare stack trace, which a log pipeline reading JSON lines cannot
 * parse (seen in the chaos runs).
 */
import test from 'ava';
import { startRedisServer } from '../../helpers/redis-server.js';
import { until, withService } from '../../helpers/service.js';

function isJson(line: string): boolean {
  try {
    JSON.parse(line);
    return true;
  } catch {
    return false;
  }
}

test('a worker started while Redis is away logs every error as a JSON line, and starts once Redis is back', async (t) => {
  const redis = await startRedisServer();
  t.teardown(() => redis.dispose());
  const { service } = await withService(t, { project: 'redis-away-at-start', workers: 0, redisUrl: redis.url });

  await redis.stop();
  const starting = service.startWorker();
  starting.catch(() => undefined);
  const spawned = service.workers.at(-1)!;
  await until('the worker to meet Redis away', () => (spawned.output.some((line) => /ECONNREFUSED/.test(line)) ? true : undefined));
  await redis.restart();
  const worker = await starting;

  const away = worker.output.filter((line) => /ECONNREFUSED/.test(line));
  t.true(away.length > 0, 'the worker met Redis away');
  t.deepEqual(
    worker.output.filter((line) => !isJson(line)),
    [],
    'no line of its output is anything but a JSON log line',
  );
});
