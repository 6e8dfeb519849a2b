/**
 * The queue dashboard under attack: a page an operator's browser visits cannot act
 * through it (cross-origin changes are refused), nobody can add or edit jobs through
 * it (a forged create or delivery job), it cannot be framed or cached; and with no
 * admin token every admin path is simply not there.
 */
import test from 'ava';
import { Queue } from 'bullmq';
import { JOBS, QUEUES } from '../../common/jobs.js';
import { Service, type ApiResponse } from '../helpers/service.js';

let service: Service;
let closed: Service;

test.before(async () => {
  [service, closed] = await Promise.all([Service.start({ workers: 1 }), Service.start({ workers: 0, env: { ADMIN_TOKEN: '' } })]);
});

test.after.always(async () => {
  await Promise.all([service?.stop(), closed?.stop()]);
});

function basic(): Record<string, string> {
  return { Authorization: `Basic ${Buffer.from(`admin:${service.adminToken}`).toString('base64')}` };
}

async function jobCount(name: string): Promise<number> {
  const queue = new Queue(name, { connection: { url: service.env.REDIS_URL }, prefix: service.prefix });
  try {
    const counts = await queue.getJobCounts();
    return Object.values(counts).reduce((a, b) => a + b, 0);
  } finally {
    await queue.close();
  }
}

function refused(t: import('ava').ExecutionContext, res: ApiResponse, what: string): void {
  t.is(res.status, 403, `${what}: ${res.text}`);
  t.is(res.body?.error?.code, 'dashboard_action_forbidden', what);
  t.is(res.body?.error?.request_id, res.headers.get('request-id'), what);
}

test('a cross-origin form POST with valid Basic credentials is refused, and adds no job', async (t) => {
  const before = await jobCount(QUEUES.webhooks);
  const form = new URLSearchParams({ name: JOBS.deliverWebhook, data: JSON.stringify({ eventId: 'evt_x', endpointId: 'we_x' }) }).toString();
  const origins: Array<Record<string, string>> = [{ Origin: 'https://evil.example' }, { Origin: 'null' }, { Referer: 'https://evil.example/page.html' }];
  for (const origin of origins) {
    const res = await service.request('POST', `/admin/queues/api/queues/${QUEUES.webhooks}/add`, {
      headers: { ...basic(), ...origin, 'Content-Type': 'application/x-www-form-urlencoded' },
      rawBody: form,
    });
    refused(t, res, JSON.stringify(origin));
  }
  const retry = await service.request('PUT', `/admin/queues/api/queues/${QUEUES.webhooks}/retry/failed`, {
    headers: { ...basic(), Origin: 'https://evil.example' },
  });
  refused(t, retry, 'a cross-origin retry');
  t.is(await jobCount(QUEUES.webhooks), before, 'no job was added');
});

test('even from its own origin, the dashboard cannot add or edit jobs', async (t) => {
  const own = { ...basic(), Origin: service.baseUrl, 'Content-Type': 'application/json' };
  const before = await jobCount(QUEUES.writes);
  const data = { id: 'pi_forged', project: 'victim', livemode: true, input: { amount: 1 } };
  const add = await service.request('POST', `/admin/queues/api/queues/${QUEUES.writes}/add`, {
    headers: own,
    rawBody: JSON.stringify({ name: JOBS.createPaymentIntent, data, options: {} }),
  });
  refused(t, add, 'add');
  const edit = await service.request('PATCH', `/admin/queues/api/queues/${QUEUES.writes}/some-job/update-data`, {
    headers: own,
    rawBody: JSON.stringify({ jobData: data }),
  });
  refused(t, edit, 'update-data');
  for (const [method, path] of [
    ['PUT', `/api/queues/${QUEUES.writes}/obliterate`],
    ['PUT', `/api/queues/${QUEUES.writes}/empty`],
    ['PATCH', `/api/queues/${QUEUES.writes}/job-schedulers/x`],
    ['DELETE', `/api/queues/${QUEUES.writes}`],
  ] as const) {
    refused(t, await service.request(method, `/admin/queues${path}`, { headers: own }), `${method} ${path}`);
  }
  t.is(await jobCount(QUEUES.writes), before);
});

test('retry and clean still work for operators', async (t) => {
  const origins: Array<Record<string, string>> = [{ Origin: service.baseUrl }, { Referer: `${service.baseUrl}/admin/queues/queue/webhooks` }, {}];
  for (const origin of origins) {
    const retry = await service.request('PUT', `/admin/queues/api/queues/${QUEUES.webhooks}/retry/failed`, { headers: { ...basic(), ...origin } });
    t.is(retry.status, 200, `retry ${JSON.stringify(origin)}: ${retry.text}`);
    const clean = await service.request('PUT', `/admin/queues/api/queues/${QUEUES.writes}/clean/completed`, { headers: { ...basic(), ...origin } });
    t.is(clean.status, 200, `clean ${JSON.stringify(origin)}: ${clean.text}`);
  }
});

test('the dashboard is never framed nor cached, its errors included', async (t) => {
  const page = await service.request('GET', '/admin/queues', { headers: basic() });
  t.is(page.status, 200);
  const asset = [...page.text.matchAll(/src="([^"]+\.js)"/g)].map((m) => new URL(m[1] as string, `${service.baseUrl}/admin/queues/`).pathname)[0];
  const answers = [
    page,
    await service.request('GET', '/admin/queues/api/queues', { headers: basic() }),
    await service.request('GET', asset as string, { headers: basic() }),
    await service.request('GET', '/admin/queues'),
  ];
  for (const res of answers) {
    t.is(res.headers.get('x-frame-options'), 'DENY', String(res.status));
    t.is(res.headers.get('content-security-policy'), "frame-ancestors 'none'", String(res.status));
    t.is(res.headers.get('cache-control'), 'no-store', String(res.status));
  }
});

test('without ADMIN_TOKEN every method on every admin path is 404', async (t) => {
  const paths = ['/admin/v1/api_keys', '/admin/v1/api_keys/key_123', '/admin/queues', '/admin/queues/api/queues', `/admin/queues/api/queues/${QUEUES.writes}/add`, '/admin', '/admin/other'];
  for (const path of paths) {
    for (const method of ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']) {
      const res = await closed.request(method, path, { headers: { Authorization: 'Bearer whatever-token-0123456789' } });
      t.is(res.status, 404, `${method} ${path}`);
      t.is(res.headers.get('allow'), null, `${method} ${path}`);
      if (method !== 'HEAD') t.is(res.body?.error?.code, 'route_not_found', `${method} ${path}`);
    }
  }
});

// Found by the fuzzer (test/e2e/fuzz.test.ts): Bull Board answered these in its own format, or with a 500.
test("Bull Board's own errors come in the contract's envelope", async (t) => {
  const own = { ...basic(), 'Content-Type': 'application/json' };
  const unknownQueue = await service.request('GET', '/admin/queues/api/queues/nope/some-job', { headers: own });
  t.is(unknownQueue.status, 404);
  t.is(unknownQueue.body.error.code, 'route_not_found');
  for (const rawBody of ['0', '"text"', '{']) {
    const res = await service.request('PUT', `/admin/queues/api/queues/${QUEUES.writes}/clean/completed`, { headers: own, rawBody });
    t.is(res.status, 400, rawBody);
    t.is(res.body.error.code, 'invalid_json', rawBody);
    t.is(res.body.error.request_id, res.headers.get('request-id'));
  }
});
