/**
 * The connector registry (worker/operators/connector.ts) and the shared HTTP rule
 * (worker/operators/operator-http.ts): what counts as no answer.
 */
import test from 'ava';
import { Redis } from 'ioredis';
import { MongoClient } from 'mongodb';
import { loadConfig } from '../../../common/config.js';
import { OperatorUnavailableError, isInfrastructureError } from '../../../common/infra-errors.js';
import { operatorCallbackUrl } from '../../../worker/operators/connector.js';
import { liveConnectors } from '../../../worker/operators/registry.js';
import { callOperator } from '../../../worker/operators/operator-http.js';
import { FakeServer } from '../../fakes/fake-server.js';
import { stackUrls } from '../../helpers/service.js';

const minimal = { REDIS_URL: 'redis://127.0.0.1:6379', MONGODB_URL: 'mongodb://127.0.0.1:27017', PUBLIC_BASE_URL: 'https://pay.example' };

test('liveConnectors builds a connector for each complete group, and none without', (t) => {
  const redis = new Redis(stackUrls().redisUrl, { lazyConnect: true });
  const mongo = new MongoClient(stackUrls().mongoUrl);
  const deps = { redis, db: mongo.db('unused'), prefix: 'p', callbackKey: async () => Buffer.alloc(32) };
  t.deepEqual([...liveConnectors(loadConfig(minimal), deps).operators()], []);
  const config = loadConfig({
    ...minimal,
    WAVE_BASE_URL: 'https://api.wave.example', WAVE_API_KEY: 'k', WAVE_WEBHOOK_SECRET: 's',
    MPESA_BASE_URL: 'https://sandbox.safaricom.example', MPESA_CONSUMER_KEY: 'k', MPESA_CONSUMER_SECRET: 's', MPESA_SHORTCODE: '174379',
    MPESA_PASSKEY: 'p', MPESA_INITIATOR_NAME: 'i', MPESA_SECURITY_CREDENTIAL: 'c',
  });
  const connectors = liveConnectors(config, deps);
  t.deepEqual([...connectors.operators()].sort(), ['mpesa', 'wave']);
  t.deepEqual(connectors.accounts.map((a) => a.id), ['mpesa:174379', 'wave:SN']);
  t.truthy(connectors.get('wave', null), 'an attempt from before accounts had ids takes its operator\'s first');
  t.is(connectors.get('wave', 'wave:CI'), undefined);
  t.is(operatorCallbackUrl('https://pay.example/', 'mtn_momo', 'callback'), 'https://pay.example/operators/mtn_momo/callback');
  redis.disconnect();
});

test('no answer is infrastructure: a refused connection, a 5xx, a timeout; a 4xx is an answer', async (t) => {
  const server = await new FakeServer((request) => ({ status: Number(request.path.slice(1)) || 200, body: { code: 'X' } })).start();
  const call = (path: string, timeoutMs = 2000) => callOperator({ operator: 'op', method: 'POST', url: `${server.url}${path}?secret=q`, headers: { authorization: 'Bearer secret-token' }, body: { phone: '+22500000000' }, timeoutMs });
  t.deepEqual(await call('/404'), { status: 404, body: { code: 'X' } });
  const fiveHundred = await t.throwsAsync(call('/502'), { instanceOf: OperatorUnavailableError });
  t.true(isInfrastructureError(fiveHundred));
  server.delayMs = 300;
  const slow = await t.throwsAsync(call('/200', 100), { instanceOf: OperatorUnavailableError });
  t.is(slow?.reason, 'timeout');
  server.delayMs = 0;
  const url = server.url;
  await server.stop();
  const refused = await t.throwsAsync(callOperator({ operator: 'op', method: 'GET', url, headers: {}, timeoutMs: 500 }), { instanceOf: OperatorUnavailableError });
  t.is(refused?.reason, 'network');
  for (const err of [fiveHundred, slow, refused]) {
    for (const secret of ['secret-token', '22500000000', 'secret=q']) t.false(err?.message.includes(secret), `${err?.message}`);
  }
});
