/**
 * An api process starts whatever state MongoDB is in: it listens at once, answers
 * /healthz, says on /readyz that it is not ready (and refuses creates with 503)
 * while MongoDB does not answer, and becomes ready by itself once MongoDB does.
 */
import test from 'ava';
import { Service, sleep, stackUrls, uniqueName, until } from '../helpers/service.js';
import { StallingProxy } from '../helpers/stalling-proxy.js';

/** Past the driver's server selection (3 s): the probes' connections have failed by then. */
const PAST_SERVER_SELECTION_MS = 4000;

test('an api started while MongoDB stalls listens at once, answers /readyz 503, then 200 once MongoDB answers', async (t) => {
  const service = await Service.start({ workers: 1 });
  t.teardown(() => service.stop());
  const key = await service.issueKey(uniqueName('startup'));
  const mongoPort = Number(new URL(stackUrls().mongoUrl).port);
  const proxy = await StallingProxy.start(mongoPort, { stalled: true });
  t.teardown(() => proxy.close());
  const mongoUrl = `mongodb://127.0.0.1:${proxy.port}/`;

  const { proc, baseUrl } = await service.startExtraApi({ MONGODB_URL: mongoUrl }, /api listening/);
  t.is((await service.request('GET', '/healthz', { baseUrl })).status, 200);
  const starting = await service.request('GET', '/readyz', { baseUrl });
  t.is(starting.status, 503, starting.text);
  t.is(starting.body.checks.mongodb, 'unavailable');
  t.truthy(starting.headers.get('retry-after'));
  const refused = await service.request('POST', '/v1/payment_intents', { key, baseUrl, body: { amount: 100 }, headers: { 'Idempotency-Key': 'early' } });
  t.is(refused.status, 503, refused.text);
  t.is(refused.body.error.code, 'service_unavailable');
  t.true(proxy.heldCount > 0, 'the api did try MongoDB');
  // Stall past the driver's server selection (3 s): the connections the probes began
  // fail, and the api must connect again by itself once MongoDB answers.
  await sleep(PAST_SERVER_SELECTION_MS);
  t.is((await service.request('GET', '/readyz', { baseUrl })).status, 503);

  proxy.release();
  await proc.waitFor(/api ready/, 60_000);
  const ready = await until('/readyz to answer 200', async () => {
    const res = await service.request('GET', '/readyz', { baseUrl });
    return res.status === 200 ? res : undefined;
  });
  t.like(ready.body, { status: 'ready', checks: { redis: 'ok', mongodb: 'ok' } });
  const created = await service.request('POST', '/v1/payment_intents', { key, baseUrl, body: { amount: 100 }, headers: { 'Idempotency-Key': 'early' } });
  t.is(created.status, 200, created.text);
  t.is(created.body.amount, 100);
});
