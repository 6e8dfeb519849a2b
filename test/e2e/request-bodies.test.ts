/** Deeply nested bodies are bad input (400 `invalid_json`), never a crash. */
import test from 'ava';
import { Service } from '../helpers/service.js';

let service: Service;
let key: string;

test.before(async () => {
  service = await Service.start({ workers: 1 });
  key = await service.issueKey('nesting');
});

test.after.always(async () => {
  await service?.stop();
});

/** A body whose `metadata` nests objects so that the whole body is `levels` deep. */
function nested(levels: number): string {
  return `{"amount":100,"metadata":${'{"a":'.repeat(levels - 1)}"x"${'}'.repeat(levels - 1)}}`;
}

for (const withKey of [false, true]) {
  const headers: Record<string, string> = { 'Content-Type': 'application/json', ...(withKey ? { 'Idempotency-Key': `deep-${Math.random()}` } : {}) };
  const label = withKey ? 'with an Idempotency-Key' : 'without a key';

  test(`33 levels is 400 invalid_json, 32 levels is judged on its fields (${label})`, async (t) => {
    const deep = await service.request('POST', '/v1/payment_intents', { key, rawBody: nested(33), headers });
    t.is(deep.status, 400);
    t.is(deep.body.error.code, 'invalid_json');
    t.regex(deep.body.error.message, /deeper than 32 levels/);
    const fine = await service.request('POST', '/v1/payment_intents', { key, rawBody: nested(32), headers: { ...headers, 'Idempotency-Key': `ok-${Math.random()}` } });
    t.is(fine.status, 400);
    t.is(fine.body.error.code, 'metadata_invalid');
  });

  test(`5,000 and 30,000 levels are 400 invalid_json, not 500 (${label})`, async (t) => {
    for (const body of [nested(5000), `{"list":${'['.repeat(30_000)}${']'.repeat(30_000)}}`]) {
      const res = await service.request('POST', '/v1/webhook_endpoints', { key, rawBody: body, headers });
      t.is(res.status, 400, res.text.slice(0, 200));
      t.is(res.body.error.code, 'invalid_json');
    }
    t.is((await service.request('GET', '/healthz')).status, 200);
  });
}

test('the admin API refuses deep bodies the same way', async (t) => {
  const res = await service.request('POST', '/admin/v1/api_keys', {
    headers: { Authorization: `Bearer ${service.adminToken}`, 'Content-Type': 'application/json' },
    rawBody: `{"project":"x","extra":${'['.repeat(100)}${']'.repeat(100)}}`,
  });
  t.is(res.status, 400);
  t.is(res.body.error.code, 'invalid_json');
});
