/**
 * `GET /v1/operators`' live status (common/operator-status.ts): configured from the
 * config groups, `degraded` from the calls the connectors counted in Redis.
 */
import test from 'ava';
import { Redis } from 'ioredis';
import { loadConfig } from '../../common/config.js';
import { liveOperatorConfigured, operatorStatus, recordOperatorCall, redisOperatorHealth } from '../../common/operator-status.js';
import { stackUrls, uniqueName } from '../helpers/service.js';

const minimal = { REDIS_URL: 'redis://127.0.0.1:6379', MONGODB_URL: 'mongodb://127.0.0.1:27017', PUBLIC_BASE_URL: 'https://pay.example' };
const wave = { WAVE_BASE_URL: 'https://api.wave.example', WAVE_API_KEY: 'k', WAVE_WEBHOOK_SECRET: 's' };

test('configured operators are the complete groups; the others stay unavailable in live mode', async (t) => {
  const config = loadConfig({ ...minimal, ...wave });
  t.true(liveOperatorConfigured(config, 'wave'));
  t.false(liveOperatorConfigured(config, 'mtn_momo'));
  t.false(liveOperatorConfigured(config, 'orange_money'));
  const none = { mostlyFailing: async () => false };
  t.is(await operatorStatus(config, 'wave', true, none), 'operational');
  t.is(await operatorStatus(config, 'orange_money', true, none), 'unavailable');
  t.is(await operatorStatus(config, 'orange_money', false, none), 'operational');
});

test('degraded: most of the recent calls got no answer, and at least three did not', async (t) => {
  const redis = new Redis(stackUrls().redisUrl);
  const prefix = uniqueName('health');
  let now = 1_795_000_000_000;
  const health = redisOperatorHealth(redis, prefix, () => now);
  try {
    t.false(await health.mostlyFailing('wave'), 'no calls');
    await recordOperatorCall(redis, prefix, 'wave', false, now);
    await recordOperatorCall(redis, prefix, 'wave', false, now);
    t.false(await health.mostlyFailing('wave'), 'two failures are not enough');
    await recordOperatorCall(redis, prefix, 'wave', false, now + 60_000);
    now += 60_000;
    t.true(await health.mostlyFailing('wave'));
    t.false(await health.mostlyFailing('mpesa'), 'per operator');
    for (let i = 0; i < 3; i++) await recordOperatorCall(redis, prefix, 'wave', true, now);
    t.false(await health.mostlyFailing('wave'), 'as many answers as failures');
    now += 10 * 60_000;
    t.false(await health.mostlyFailing('wave'), 'old calls no longer count');
  } finally {
    redis.disconnect();
  }
});
