/**
 * Shutdown steps (common/shutdown.ts): each runs on its own; while Redis is out of
 * reach a step that waits on it is abandoned, so a SIGTERM always ends the process.
 */
import test from 'ava';
import type { Logger } from '../../common/logger.js';
import { ABANDON_AFTER_MS, runShutdownSteps } from '../../common/shutdown.js';

function recordingLogger(): { logger: Logger; warnings: Array<{ step: string; msg: string }> } {
  const warnings: Array<{ step: string; msg: string }> = [];
  const logger = { warn: (fields: { step: string }, msg: string) => warnings.push({ step: fields.step, msg }) } as unknown as Logger;
  return { logger, warnings };
}

const never = () => new Promise<never>(() => undefined);

test('steps run in order; one that fails is logged and the next runs', async (t) => {
  const { logger, warnings } = recordingLogger();
  const ran: string[] = [];
  await runShutdownSteps(
    [
      ['a', async () => ran.push('a')],
      ['b', async () => Promise.reject(new Error('boom'))],
      ['c', async () => ran.push('c')],
    ],
    logger,
  );
  t.deepEqual(ran, ['a', 'c']);
  t.deepEqual(warnings, [{ step: 'b', msg: 'shutdown step failed' }]);
});

test('while Redis is out of reach, waiting steps are abandoned: the first after the delay, the next at once', async (t) => {
  const { logger, warnings } = recordingLogger();
  const started = Date.now();
  const ran: string[] = [];
  await runShutdownSteps([['worker', never], ['queue', never], ['last', async () => ran.push('last')]], logger, () => true);
  const took = Date.now() - started;
  t.true(took >= ABANDON_AFTER_MS && took < ABANDON_AFTER_MS + 1500, `took ${took} ms`);
  t.deepEqual(warnings.map((w) => w.step), ['worker', 'queue']);
  t.true(warnings.every((w) => w.msg === 'shutdown step abandoned: Redis unreachable'));
  t.deepEqual(ran, ['last'], 'a step that ends by itself still runs to its end');
});

test('a step is waited for as long as Redis answers', async (t) => {
  const { logger, warnings } = recordingLogger();
  let done = false;
  await runShutdownSteps([['slow', () => new Promise<void>((resolve) => setTimeout(() => ((done = true), resolve()), ABANDON_AFTER_MS + 500))]], logger, () => false);
  t.true(done);
  t.deepEqual(warnings, []);
});
