/**
 * Security review M2: a payer's full phone number and one-time code never sit in
 * Redis (job data included), and the dashboard masks job data whatever it holds.
 */
import test from 'ava';
import { Queue } from 'bullmq';
import { randomInt } from 'node:crypto';
import type { Redis } from 'ioredis';
import { QUEUES } from '../../../common/jobs.js';
import { confirm, createIntent, phone, waitForStatus } from '../../helpers/payment-intent-lifecycle.js';
import { until, withService } from '../../helpers/service.js';

/** Every value of every key of the server, whatever its type, as strings. */
async function everyValue(redis: Redis): Promise<Array<{ key: string; value: string }>> {
  const found: Array<{ key: string; value: string }> = [];
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'COUNT', 1000);
    cursor = next;
    for (const key of keys) {
      const type = await redis.type(key);
      let values: string[] = [];
      if (type === 'string') values = [(await redis.get(key)) ?? ''];
      else if (type === 'hash') values = Object.entries(await redis.hgetall(key)).flat();
      else if (type === 'list') values = await redis.lrange(key, '0', '-1');
      else if (type === 'set') values = await redis.smembers(key);
      else if (type === 'zset') values = await redis.zrange(key, '0', '-1');
      else if (type === 'stream') values = (await redis.xrange(key, '-', '+')).flatMap(([id, fields]) => [id, ...fields]);
      found.push({ key, value: key });
      for (const value of values) found.push({ key, value });
    }
  } while (cursor !== '0');
  return found;
}

// Serial: the dashboard's test forges a job that holds a number, and the scan reads every key of the server.
test.serial('after a phone-approval payment and a one-time-code payment succeeded, no Redis key holds the phone numbers or the codes', async (t) => {
  const { service, key } = await withService(t, {
    env: { SIMULATOR_APPROVAL_DELAY_MS: '100', SIMULATOR_PROCESSING_DELAY_MS: '100' },
  });
  const approvalPhone = phone('225', '000', randomInt(10_000, 99_999));
  const otpPhone = phone('225', '000', randomInt(10_000, 99_999));
  const wrongOtp = '654321';
  const rightOtp = '123456';

  const mtn = await createIntent(service, key, { currency: 'xof', allowed_operators: ['mtn_momo'] });
  const approval = await confirm(service, key, mtn.id, { operator: 'mtn_momo', phone_number: approvalPhone });
  t.is(approval.status, 200, approval.text);
  const orange = await createIntent(service, key, { currency: 'xof', allowed_operators: ['orange_money'] });
  const asked = await confirm(service, key, orange.id, { operator: 'orange_money', phone_number: otpPhone }, { 'Idempotency-Key': 'ask' });
  t.is(asked.status, 200, asked.text);
  const wrong = await confirm(service, key, orange.id, { phone_number: otpPhone, otp: wrongOtp });
  t.is(wrong.status, 402, wrong.text);
  const again = await confirm(service, key, orange.id, { operator: 'orange_money', phone_number: otpPhone });
  t.is(again.status, 200, again.text);
  const right = await confirm(service, key, orange.id, { phone_number: otpPhone, otp: rightOtp }, { 'Idempotency-Key': 'right' });
  t.is(right.status, 200, right.text);
  await waitForStatus(service, key, mtn.id, 'succeeded');
  await waitForStatus(service, key, orange.id, 'succeeded');

  const redis = service.redis();
  t.teardown(() => redis.disconnect());
  const values = await everyValue(redis);
  t.true(values.some((v) => v.key.startsWith(`${service.prefix}:`)), 'the scan saw this service\'s keys');
  const secrets = [approvalPhone, otpPhone, approvalPhone.slice(1), otpPhone.slice(1)];
  const leaks = values.filter(
    ({ value }) => secrets.some((s) => value.includes(s)) || [wrongOtp, rightOtp].some((otp) => value === otp || value.includes(`"${otp}"`)) || value.includes('"otp":"'),
  );
  t.log(`scanned ${new Set(values.map((v) => v.key)).size} keys, ${values.length} values: ${leaks.length} hold a phone number or a code`);
  t.deepEqual(leaks.map((l) => `${l.key}: ${l.value.slice(0, 300)}`), [], 'no key holds a full phone number or a one-time code');

  // The confirms' jobs carried them sealed, under a key that only MongoDB holds; the
  // keyed confirms' fingerprints are keyed with another such key.
  const db = await service.db();
  const serviceKeys = await db.collection<{ _id: string; key: string }>('service_keys').find({}).toArray();
  t.true(serviceKeys.some((k) => k._id === 'confirm_input'), 'the seal has its key');
  for (const { _id, key } of serviceKeys) t.false(values.some(({ value }) => value.includes(key)), `the ${_id} key is not in Redis`);
});

test.serial('the dashboard masks phone numbers, codes and secrets in job data, even of a job that carries them', async (t) => {
  const { service } = await withService(t);
  const queue = new Queue(QUEUES.writes, { connection: { url: service.env.REDIS_URL }, prefix: service.prefix });
  t.teardown(() => queue.close());
  // A job as an older version made them; the worker fails it (unknown name), and keeps it.
  const number = phone('225', '000', randomInt(10_000, 99_999));
  const job = await queue.add('payment_intent.confirm.v0', { input: { phone_number: number, otp: '987654', operator: 'mtn_momo' }, note: number });
  await until('the worker to fail the job', async () => ((await job.getState()) === 'failed' ? true : undefined));
  const auth = `Basic ${Buffer.from(`admin:${service.adminToken}`).toString('base64')}`;
  const seen: string[] = [];
  for (const status of ['failed', 'waiting', 'completed', 'active']) {
    const res = await fetch(`${service.baseUrl}/admin/queues/api/queues?activeQueue=writes&status=${status}&page=1&jobsPerPage=10`, { headers: { Authorization: auth } });
    t.is(res.status, 200);
    seen.push(await res.text());
  }
  const shown = seen.join('\n');
  t.true(shown.includes(String(job.id)), 'the dashboard lists the job');
  t.true(shown.includes('[masked]'));
  t.false(shown.includes(number), 'no full phone number');
  t.false(shown.includes(number.slice(1)));
  t.false(shown.includes('987654'), 'no one-time code');
  await job.remove();
});
