// The Bull Board dashboard's door: HTTP Basic auth with user `admin` and the admin
// token over the page, its assets and its JSON API; 404 when no token is configured.

import test from 'ava';
import { startRedisServer } from '../../helpers/redis-server.js';
import { Service, type ApiResponse } from '../../helpers/service.js';

let service: Service;

test.before(async () => {
  service = await Service.start({ workers: 1 });
});

test.after.always(async () => {
  await service?.stop();
});

function basic(user: string, password: string): Record<string, string> {
  return { Authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` };
}

function withoutRequestId(res: ApiResponse): unknown {
  const { request_id: _requestId, ...rest } = res.body.error;
  return rest;
}

const paths = ['/admin/queues', '/admin/queues/', '/admin/queues/queue/writes', '/admin/queues/api/queues', '/admin/queues/static/favicon-32x32.png'];

test('every dashboard path asks for Basic credentials with 401 and a challenge', async (t) => {
  for (const path of paths) {
    const res = await service.request('GET', path);
    t.is(res.status, 401, path);
    t.is(res.headers.get('www-authenticate'), 'Basic realm="queues"', path);
    t.is(res.body.error.code, 'api_key_missing', path);
    t.is(res.body.error.request_id, res.headers.get('request-id'), path);
  }
  const put = await service.request('PUT', '/admin/queues/api/queues/writes/pause');
  t.is(put.status, 401);
});

test('a wrong user and a wrong password get the same answer', async (t) => {
  const attempts = [
    basic('admin', 'wrong-password-0123456789'),
    basic('root', service.adminToken),
    basic('nobody', 'wrong-password-0123456789'),
    basic('admin', ''),
    { Authorization: `Basic ${Buffer.from(`admin${service.adminToken}`).toString('base64')}` },
  ];
  const answers = [];
  for (const headers of attempts) {
    const res = await service.request('GET', '/admin/queues/api/queues', { headers });
    t.is(res.status, 401);
    t.is(res.headers.get('www-authenticate'), 'Basic realm="queues"');
    answers.push(withoutRequestId(res));
  }
  for (const answer of answers) t.deepEqual(answer, answers[0]);
  t.is((answers[0] as { code: string }).code, 'api_key_invalid');
  t.notRegex(JSON.stringify(answers[0]), /admin|user (unknown|not found)/i);
});

test('the Bearer admin token is not a dashboard credential', async (t) => {
  const res = await service.request('GET', '/admin/queues', { headers: { Authorization: `Bearer ${service.adminToken}` } });
  t.is(res.status, 401);
});

test('with the right credentials: the page, its assets and the JSON API with every queue', async (t) => {
  const auth = basic('admin', service.adminToken);
  const page = await service.request('GET', '/admin/queues', { headers: auth });
  t.is(page.status, 200);
  t.regex(page.headers.get('content-type') ?? '', /text\/html/);
  t.regex(page.text, /Payments queues/);

  const scripts = [...page.text.matchAll(/src="([^"]+\.js)"/g)].map((m) => m[1] as string);
  t.true(scripts.length > 0, 'the page loads scripts');
  for (const src of scripts) {
    const url = new URL(src, `${service.baseUrl}/admin/queues/`);
    t.true(url.pathname.startsWith('/admin/queues/'), `asset under the dashboard path: ${url.pathname}`);
    t.is((await service.request('GET', url.pathname)).status, 401, `asset needs auth: ${url.pathname}`);
    t.is((await service.request('GET', url.pathname, { headers: auth })).status, 200, url.pathname);
  }

  const api = await service.request('GET', '/admin/queues/api/queues', { headers: auth });
  t.is(api.status, 200);
  const names = (api.body.queues as Array<{ name: string }>).map((q) => q.name).sort();
  t.deepEqual(names, ['events', 'intents', 'maintenance', 'webhooks', 'writes']);
});

test('an unknown path under the dashboard is a 404 in the error envelope', async (t) => {
  const res = await service.request('GET', '/admin/queues/api/nothing-here/at/all', { headers: basic('admin', service.adminToken) });
  t.is(res.status, 404);
  t.is(res.body.error.code, 'route_not_found');
});

test('without ADMIN_TOKEN the dashboard does not exist: 404, even with credentials', async (t) => {
  const bare = await Service.start({ workers: 0, env: { ADMIN_TOKEN: '' } });
  t.teardown(() => bare.stop());
  for (const path of paths) {
    const res = await bare.request('GET', path, { headers: basic('admin', '') });
    t.is(res.status, 404, path);
    t.is(res.body.error.code, 'route_not_found', path);
    t.is(res.headers.get('www-authenticate'), null, path);
  }
});

test('with Redis down the dashboard answers an error, logged as one JSON line', async (t) => {
  const redis = await startRedisServer();
  t.teardown(() => redis.dispose());
  const own = await Service.start({ workers: 0, redisUrl: redis.url });
  t.teardown(() => own.stop());
  await redis.stop();
  const res = await own.request('GET', '/admin/queues/api/queues', { headers: basic('admin', own.adminToken) });
  t.true(res.status >= 500, `status ${res.status}`);
  t.false(res.text.includes('    at '), 'no stack trace in the answer');
  await own.api.waitFor(/"dashboard error"/); // read through the api's stdout pipe: maybe after the answer
  const lines = own.api.output;
  t.deepEqual(lines.filter((line) => !line.startsWith('{')), [], 'every log line is JSON');
  t.true(lines.some((line) => line.includes('"dashboard error"')));
});
